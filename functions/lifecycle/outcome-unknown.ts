/**
 * A create whose outcome is unknown (docs/design/dispatching.md, "Outcome unknown"): the request went out
 * and its answer was lost (a timeout, a connection dropped once open), or the store failed once the
 * upstream had created the task. Each create is a paid generation upstream, so such a task is never sent
 * again blindly: it waits for the upstream's callback, which names our task in its signed URL and the
 * upstream's in its body, and adopts that task; past its limit it fails, refunded (refresh-task.ts).
 */
import type { TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
import { deleteQueueEntry, markOutcomeUnknown, type QueuedRef } from '../store/dispatch';
import type { ProviderLifecycle } from './lifecycle';
import { adoptNamedTask } from './refresh-task';

/**
 * Marks the task's outcome unknown (`sending` -> `unknown`) and takes it out of the queue (the request
 * went out: it no longer waits to be sent). It keeps its entry among the tasks in flight: the upstream
 * may be running it. A callback that came while the create was in flight is adopted at once.
 */
export async function outcomeUnknown(
  lc: ProviderLifecycle,
  task: TaskRecord,
  ref: QueuedRef,
  log: Logger,
): Promise<void> {
  const marked = await markOutcomeUnknown(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    now: lc.now().getTime(),
  });
  await deleteQueueEntry(lc.store, ref);
  if (marked) await adoptNamedTask(lc, marked, log);
}
