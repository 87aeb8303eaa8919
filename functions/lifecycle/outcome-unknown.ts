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
import { recordProviderTask } from '../store/tasks';
import type { ProviderLifecycle } from './lifecycle';
import { adoptNamedTask, refreshFromCallback } from './refresh-task';

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

/**
 * Records the provider's id of a task the upstream created, and takes it out of the queue. The provider
 * called back before the id was recorded (a fast task): that callback could not read the provider, so
 * this reads it now, the way the callback would have. A store error here leaves the outcome unknown:
 * the upstream created (and bills) the task, so sending it again would create a second one; the
 * callback names the upstream's task. The error is thrown on.
 */
export async function recordCreated(
  lc: ProviderLifecycle,
  { task, ref, providerTaskId }: { task: TaskRecord; ref: QueuedRef; providerTaskId: string },
  log: Logger,
): Promise<void> {
  try {
    const recorded = await recordProviderTask(lc.store, {
      userId: task.userId,
      taskId: task.taskId,
      providerTaskId,
      now: lc.now(),
    });
    await deleteQueueEntry(lc.store, ref);
    if (recorded?.earlyCallbackAt !== undefined) {
      await refreshFromCallback(lc, recorded, log).catch((error: unknown) =>
        log.warn('Reading the provider after an early callback failed; a poll or the sweeper will', { error }),
      );
    }
  } catch (error) {
    log.error('The provider accepted a task whose id was not recorded; it waits for the callback', { error });
    await outcomeUnknown(lc, task, ref, log).catch((markError: unknown) =>
      log.warn('Could not mark the outcome unknown; the lost-send lease will', { error: markError }),
    );
    throw error;
  }
}
