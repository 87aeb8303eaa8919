/**
 * The media worker's job: copy a finished task's results from the provider into media storage, then
 * complete the task. It runs off the request path (the table's stream drives it; the sweeper picks up
 * a copy that waited too long), so no API request ever copies media.
 *
 * Exactly once under redelivery: the copies write the same keys (a second copy overwrites with the same
 * bytes), and completing or failing is conditional on the task still being pending, so two workers, or
 * a worker and the sweeper, complete or refund a task once.
 */
import { awaitsCopy, paidOutputs, type TaskRecord } from '../core/task';
import { MediaCopyError, mediaKey } from '../media/port';
import type { Logger } from '../observability/logger';
import { getTask } from '../store/tasks';
import { isAccountClosed } from './closed-account';
import { completeWithResults, failTask } from './finish-task';
import type { CopyingLifecycle } from './lifecycle';

export interface CopyOptions {
  /** Copies of one file before the copy is judged hopeless (default 3). */
  attempts?: number;
  /** Wait before the second attempt, doubled for each further one (default 500 ms). */
  backoffMs?: number;
  /** Injected by tests so retries do not wait. */
  sleep?: (ms: number) => Promise<void>;
}

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_BACKOFF_MS = 500;
const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Copies the results of a task that awaits its copy, reading the task first (a stream record may be
 * old: a task that already ended is left alone). A copy that fails `attempts` times (unreachable,
 * refused by the source policy, not a media file, too large) fails the task with STORAGE_ERROR and
 * refunds it. Other faults (the table) are thrown, so the stream redelivers the record.
 * @returns the task as it stands afterwards, or undefined when it does not exist
 */
export async function copyResults(
  lc: CopyingLifecycle,
  ref: { userId: string; taskId: string },
  log: Logger,
  options: CopyOptions = {},
): Promise<TaskRecord | undefined> {
  const task = await getTask(lc.store, ref.userId, ref.taskId);
  if (!task || !awaitsCopy(task)) return task;
  const taskLog = log.child({ taskId: task.taskId });
  // A closed account's results are never copied in: nobody may read them any more (its credentials
  // ended), and the sweeper deletes the task once it has ended (lifecycle/close-account.ts). Its charge
  // stands: the provider did the work.
  if (await isAccountClosed(lc.store, task.userId)) {
    taskLog.info('Results not copied: the account is closed');
    return completeWithResults(lc, task, [], taskLog);
  }
  const urls = (task.resultsToCopy ?? []).slice(0, paidOutputs(task));
  try {
    const stored = await Promise.all(urls.map((url, index) => copyWithRetries(lc, task, url, index, taskLog, options)));
    return await completeWithResults(lc, task, stored, taskLog);
  } catch (error) {
    if (!(error instanceof MediaCopyError)) throw error;
    taskLog.warn('Result copy failed for good', { error });
    return failTask(lc, task, { errorCode: 'STORAGE_ERROR', detail: error }, taskLog);
  }
}

async function copyWithRetries(
  lc: CopyingLifecycle,
  task: TaskRecord,
  url: string,
  index: number,
  log: Logger,
  options: CopyOptions,
): Promise<string> {
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  const sleep = options.sleep ?? realSleep;
  let wait = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await lc.media.copyFromUrl(url, mediaKey(task.userId, task.taskId, index), task.type);
      return result.key;
    } catch (error) {
      // Only copy failures are retried here; they cover transient ones (timeouts, resets, 5xx) and
      // hopeless ones alike, and a hopeless one costs only `attempts` quick refusals.
      if (!(error instanceof MediaCopyError) || attempt >= attempts) throw error;
      log.info('Result copy failed; retrying', { index, attempt, error });
      await sleep(wait);
      wait *= 2;
    }
  }
}
