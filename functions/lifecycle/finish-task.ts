/**
 * The two ways a pending task ends. Both are conditional on the task still being pending, so racing
 * pollers and sweepers finish a task exactly once; metrics are counted only by the winner.
 */
import {
  boundProviderText,
  clientErrorMessage,
  type ErrorCode,
  MAX_PROVIDER_CODE_LENGTH,
  type TaskRecord,
} from '../core/task';
import { failAndRefund } from '../money/refund';
import type { Logger } from '../observability/logger';
import { metrics } from '../observability/metrics';
import { deleteQueueEntry, leaveInFlight } from '../store/dispatch';
import { completeTask, getTask } from '../store/tasks';
import type { ProviderLifecycle } from './lifecycle';

/**
 * What ending a task needs: the table, the clock and, where tasks that reached the upstream end, the
 * lifecycle settings (the cap on tasks in flight). A cancel ends only queued tasks, so it has none.
 */
export type FinishingContext = Pick<ProviderLifecycle, 'store' | 'now'> & Partial<Pick<ProviderLifecycle, 'config'>>;

/**
 * A task sent under a cap on tasks in flight leaves the dispatcher's count (`running`) once it ended:
 * the one place every finish (completed, failed, timed out) goes through. Idempotent; only with a cap
 * configured (without one no finish touches the capacity item). A removal lost to a crash or an error
 * is healed by the dispatcher when it finds the cap reached (docs/design/dispatching.md).
 */
async function leaveUpstream(lc: FinishingContext, tasks: TaskRecord[], log: Logger): Promise<void> {
  const upstream = tasks[0]?.upstream;
  // With an upstreams list each upstream keeps its own cap, on its own capacity item.
  if ((lc.config?.maxInFlight === undefined && upstream === undefined) || !tasks.some((task) => task.inFlightSlot))
    return;
  const taskId = tasks[0]?.taskId;
  if (taskId === undefined) return;
  try {
    await leaveInFlight({ ...lc.store, upstream }, { key: taskId });
  } catch (error) {
    log.warn('Could not remove the task from the tasks in flight; the dispatcher heals it', { taskId, error });
  }
}

/** Why a task fails: what clients read comes from the code and the provider's own words only. */
export interface TaskFailure {
  errorCode: ErrorCode;
  /** The provider's message, shown bounded after the code's stable message. */
  providerMessage?: string;
  /** The provider's failure code, kept bounded as `providerErrorCode`. */
  providerCode?: string;
  /** What happened in our terms (URLs, keys, SDK errors): logged, never shown or stored. */
  detail?: unknown;
}

/**
 * Fails the task and refunds its credits in one transaction, or learns that it lost (another caller
 * ended it first, or, `whileQueued`, it left the queue first). The stored message and code are bounded
 * (a few hundred bytes), so no provider answer can push the transaction past DynamoDB's item limit.
 *
 * A task that ends before it reached the provider (queued, or being sent: the sweeper's `TIMEOUT`, a
 * create whose outcome stayed unknown past its limit, the dispatcher's refusals) leaves the dispatch queue here, after the ending write:
 * its entry would otherwise count against the account's queue bound until the dispatcher met it.
 *
 * Store errors are thrown (see `failTask` for callers that leave the task pending instead).
 * @returns the task after the attempt and whether this call refunded it; undefined when it does not exist
 */
export async function failAndRefundTask(
  lc: FinishingContext,
  task: TaskRecord,
  failure: TaskFailure,
  log: Logger,
  options: { whileQueued?: boolean } = {},
): Promise<{ task: TaskRecord; refunded: boolean } | undefined> {
  const { errorCode } = failure;
  const providerErrorCode = boundProviderText(failure.providerCode, MAX_PROVIDER_CODE_LENGTH);
  const result = await failAndRefund(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    errorCode,
    errorMessage: clientErrorMessage(errorCode, failure.providerMessage),
    ...(providerErrorCode === undefined ? {} : { providerErrorCode }),
    task,
    now: lc.now(),
    ...(options.whileQueued ? { whileQueued: true } : {}),
  });
  if (result?.refunded) await leaveUpstream(lc, [task, result.task], log);
  if (result?.refunded && task.providerTaskId === undefined) await leaveQueue(lc, task, log);
  if (result?.refunded) {
    metrics.taskFailed(errorCode);
    metrics.taskRefunded();
    log.info('Task failed and refunded', {
      taskId: task.taskId,
      errorCode,
      credits: task.creditsUsed,
      ...(providerErrorCode === undefined ? {} : { providerErrorCode }),
      ...(failure.detail === undefined ? {} : { detail: failure.detail }),
    });
  }
  return result;
}

/**
 * Fails the task and refunds its credits in one transaction (`failAndRefundTask`).
 * @returns the task after the attempt: failed, or unchanged when the refund could not be written
 *   (it stays pending, so a later refresh or the sweeper refunds it: no credit is lost either way).
 */
export async function failTask(
  lc: FinishingContext,
  task: TaskRecord,
  failure: TaskFailure,
  log: Logger,
): Promise<TaskRecord> {
  try {
    const result = await failAndRefundTask(lc, task, failure, log);
    return result ? result.task : task;
  } catch (error) {
    metrics.refundFailed();
    log.error('Refund failed; the task stays pending and will be retried', { taskId: task.taskId, error });
    return task;
  }
}

/**
 * Removes an ended task's queue entry (idempotent). Its failure costs nothing but a stale entry, which
 * the dispatcher drops when it meets it (dispatch.ts `dropIfDone`), so it is logged, not thrown.
 */
async function leaveQueue(lc: Pick<ProviderLifecycle, 'store'>, task: TaskRecord, log: Logger): Promise<void> {
  try {
    await deleteQueueEntry(lc.store, task);
  } catch (error) {
    log.warn('The queue entry of an ended task was left for the dispatcher to drop', { taskId: task.taskId, error });
  }
}

/** Marks the task completed with its stored results; a task that already ended is re-read as it is. */
export async function completeWithResults(
  lc: ProviderLifecycle,
  task: TaskRecord,
  resultKeys: string[],
  log: Logger,
): Promise<TaskRecord> {
  const completed = await completeTask(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    resultKeys,
    now: lc.now(),
    task,
  });
  if (completed) {
    await leaveUpstream(lc, [task, completed], log);
    metrics.taskCompleted();
    log.info('Task completed', { taskId: task.taskId, results: resultKeys.length });
    return completed;
  }
  return (await getTask(lc.store, task.userId, task.taskId)) ?? task;
}
