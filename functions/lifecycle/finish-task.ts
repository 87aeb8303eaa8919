/**
 * The two ways a pending task ends. Both are conditional on the task still being pending, so racing
 * pollers and sweepers finish a task exactly once; metrics are counted only by the winner.
 */
import type { ErrorCode, TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
import { metrics } from '../observability/metrics';
import { completeTask, failAndRefund, getTask } from '../store/tasks';
import type { Lifecycle } from './lifecycle';

/**
 * Fails the task and refunds its credits in one transaction.
 * @returns the task after the attempt: failed, or unchanged when the refund could not be written
 *   (it stays pending, so a later refresh or the sweeper refunds it: no credit is lost either way).
 */
export async function failTask(
  lc: Lifecycle,
  task: TaskRecord,
  errorCode: ErrorCode,
  errorMessage: string,
  log: Logger,
): Promise<TaskRecord> {
  try {
    const result = await failAndRefund(lc.store, {
      userId: task.userId,
      taskId: task.taskId,
      errorCode,
      errorMessage,
      task,
      now: lc.now(),
    });
    if (!result) return task;
    if (result.refunded) {
      metrics.taskFailed(errorCode);
      metrics.taskRefunded();
      log.info('Task failed and refunded', { taskId: task.taskId, errorCode, credits: task.creditsUsed });
    }
    return result.task;
  } catch (error) {
    metrics.refundFailed();
    log.error('Refund failed; the task stays pending and will be retried', { taskId: task.taskId, error });
    return task;
  }
}

/** Marks the task completed with its stored results; a task that already ended is re-read as it is. */
export async function completeWithResults(
  lc: Lifecycle,
  task: TaskRecord,
  resultKeys: string[],
  log: Logger,
): Promise<TaskRecord> {
  const completed = await completeTask(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    resultKeys,
    now: lc.now(),
  });
  if (completed) {
    metrics.taskCompleted();
    log.info('Task completed', { taskId: task.taskId, results: resultKeys.length });
    return completed;
  }
  return (await getTask(lc.store, task.userId, task.taskId)) ?? task;
}
