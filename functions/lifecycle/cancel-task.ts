/**
 * Cancelling a task that still waits in the queue (docs/design/dispatching.md): it fails with
 * `CANCELLED` and is refunded in one transaction, on condition that it is still queued, the condition a
 * dispatcher's claim needs too, so exactly one of the cancel and the send wins. Then its queue entry
 * goes (a dispatcher that meets it first removes it as well: the claim fails on the ended task).
 */
import { TaskNotFoundError, TaskStateError } from '../core/errors';
import { isCancellable, type TaskRecord, TaskStatus } from '../core/task';
import type { Logger } from '../observability/logger';
import { getTask } from '../store/tasks';
import { failAndRefundTask } from './finish-task';
import type { ProviderLifecycle } from './lifecycle';

/** The 409 answers: the task is at the provider, or on its way there; or it has ended. */
export const TASK_ALREADY_STARTED = 'Task already started';
export const TASK_ALREADY_FINISHED = 'Task already finished';

function refusal(task: TaskRecord): TaskStateError {
  return new TaskStateError(task.status === TaskStatus.PENDING ? TASK_ALREADY_STARTED : TASK_ALREADY_FINISHED);
}

/**
 * Cancels the caller's queued task and refunds it, exactly once.
 * @returns the cancelled task
 * @throws TaskNotFoundError (no such task of the caller's), TaskStateError (started or finished)
 */
export async function cancelTask(
  lc: Pick<ProviderLifecycle, 'store' | 'now'>,
  ref: { userId: string; taskId: string },
  log: Logger,
): Promise<TaskRecord> {
  // Keyed by the caller's own user id: someone else's task is simply not there.
  const task = await getTask(lc.store, ref.userId, ref.taskId);
  if (!task) throw new TaskNotFoundError();
  if (!isCancellable(task)) throw refusal(task);
  const result = await cancelQueuedTask(lc, task, log);
  if (!result) throw new TaskNotFoundError();
  // Lost the race: a dispatcher claimed it first, or another caller ended it.
  if (!result.refunded) throw refusal(result.task);
  return result.task;
}

/**
 * The cancel of a task already read as queued (`cancelTask` reads it; closing an account has it from its
 * listing): failed with `CANCELLED` and refunded on condition that it is still queued, so a record read
 * a moment ago is safe. Its queue entry leaves with the refund (failAndRefundTask).
 * @returns the task after the attempt and whether this call refunded it; undefined when it does not exist
 */
export function cancelQueuedTask(
  lc: Pick<ProviderLifecycle, 'store' | 'now'>,
  task: TaskRecord,
  log: Logger,
): Promise<{ task: TaskRecord; refunded: boolean } | undefined> {
  return failAndRefundTask(lc, task, { errorCode: 'CANCELLED' }, log, { whileQueued: true });
}
