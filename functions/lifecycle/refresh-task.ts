/**
 * Refresh: move a pending task forward, at most once per interval per task, whoever asks (a poller or
 * the sweeper). Terminal tasks are returned as they are.
 */
import { isRefreshDue, nextRefreshStep } from '../core/lifecycle';
import { type TaskRecord, TaskStatus } from '../core/task';
import { MediaCopyError, mediaKey } from '../media/port';
import type { Logger } from '../observability/logger';
import { type ProviderTaskStatus, ProviderUnavailableError } from '../provider/port';
import { claimRefresh } from '../store/tasks';
import { completeWithResults, failTask } from './finish-task';
import { type Lifecycle, timedProviderCall } from './lifecycle';
import { sendToProvider } from './send-to-provider';

/**
 * Refreshes a task. Only the caller that wins the conditional claim on `lastCheckedAt` talks to the
 * provider; everyone else gets the stored record, which is the source of truth.
 * @returns the task as it stands after this refresh
 */
export async function refreshTask(lc: Lifecycle, task: TaskRecord, log: Logger): Promise<TaskRecord> {
  if (task.status !== TaskStatus.PENDING) return task;
  const now = lc.now();
  if (!isRefreshDue(task, now, lc.config)) return task;
  const claimed = await claimRefresh(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    now,
    intervalMs: lc.config.refreshIntervalMs,
  });
  if (!claimed) return task;
  const taskLog = log.child({ taskId: task.taskId });
  const step = nextRefreshStep(claimed, now, lc.config);
  switch (step.kind) {
    case 'fail':
      return failTask(lc, claimed, step.errorCode, step.errorMessage, taskLog);
    case 'send':
      return sendToProvider(lc, claimed, taskLog);
    case 'query':
      return queryProvider(lc, claimed, step.providerTaskId, taskLog);
  }
}

async function queryProvider(
  lc: Lifecycle,
  task: TaskRecord,
  providerTaskId: string,
  log: Logger,
): Promise<TaskRecord> {
  let status: ProviderTaskStatus;
  try {
    status = await timedProviderCall('getTask', () => lc.provider.getTask(providerTaskId), log);
  } catch (error) {
    // Unreachable or unintelligible: the task stays pending and the next interval asks again.
    if (error instanceof ProviderUnavailableError) return task;
    throw error;
  }
  if (status.state === 'fail') {
    const code = status.failCode ? ` (provider code ${status.failCode})` : '';
    return failTask(lc, task, 'PROVIDER_ERROR', `${status.failMessage ?? 'The provider failed the task'}${code}`, log);
  }
  if (status.state !== 'success') return task;
  if (status.resultUrls.length === 0) {
    return failTask(lc, task, 'PROVIDER_ERROR', 'The provider reported success without results', log);
  }
  return storeResults(lc, task, status.resultUrls, log);
}

/** Copies every result into media storage; one failed copy fails the task with STORAGE_ERROR. */
async function storeResults(lc: Lifecycle, task: TaskRecord, urls: string[], log: Logger): Promise<TaskRecord> {
  try {
    const stored = await Promise.all(
      urls.map(async (url, index) => {
        const result = await lc.media.copyFromUrl(url, mediaKey(task.userId, task.taskId, index), task.type);
        return result.key;
      }),
    );
    return completeWithResults(lc, task, stored, log);
  } catch (error) {
    if (!(error instanceof MediaCopyError)) throw error;
    log.warn('Result copy failed', { error });
    return failTask(lc, task, 'STORAGE_ERROR', `The result could not be stored: ${error.message}`, log);
  }
}
