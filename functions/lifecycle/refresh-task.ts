/**
 * Refresh: move a pending task forward, at most once per interval per task, whoever asks (a poller or
 * the sweeper). Terminal tasks are returned as they are.
 */

import {
  DEFAULT_CALLBACK_READ_INTERVAL_MS,
  DEFAULT_SEND_LEASE_MS,
  isRefreshDue,
  nextRefreshStep,
} from '../core/lifecycle';
import { awaitsCopy, MAX_RESULT_URL_LENGTH, paidOutputs, type TaskRecord, TaskStatus } from '../core/task';
import type { Logger } from '../observability/logger';
import { type ProviderTaskStatus, ProviderUnavailableError } from '../provider/port';
import { providerNamed } from '../provider/upstream-set';
import { deleteQueueEntry, markOutcomeUnknown } from '../store/dispatch';
import {
  claimCallbackRead,
  claimRefresh,
  getTask,
  noteEarlyCallback,
  recordProviderTask,
  recordResultsReady,
} from '../store/tasks';
import { failTask } from './finish-task';
import { type Lifecycle, type ProviderLifecycle, timedProviderCall } from './lifecycle';

/**
 * Refreshes a task. Only the caller that wins the conditional claim on `lastCheckedAt` talks to the
 * provider; everyone else gets the stored record, which is the source of truth.
 * @returns the task as it stands after this refresh
 */
export async function refreshTask(lc: Lifecycle, task: TaskRecord, log: Logger): Promise<TaskRecord> {
  // Results ready to copy: the provider is done and the media worker has the task.
  if (task.status !== TaskStatus.PENDING || awaitsCopy(task)) return task;
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
      return failTask(lc, claimed, { errorCode: step.errorCode }, taskLog);
    case 'wait':
      return claimed;
    case 'unknown': {
      // The dispatcher was lost mid-send, maybe after the request went out: never sent again blindly.
      taskLog.warn('A send was lost (claimed and never recorded): its outcome is unknown, it waits for the callback');
      const marked = await markOutcomeUnknown(lc.store, {
        userId: claimed.userId,
        taskId: claimed.taskId,
        now: now.getTime(),
        claimedBefore: now.getTime() - (lc.config.sendLeaseMs ?? DEFAULT_SEND_LEASE_MS),
      });
      if (!marked) return claimed;
      await deleteQueueEntry(lc.store, marked);
      return (await adoptNamedTask(lc, marked, taskLog)).task;
    }
    case 'query':
      return queryProvider(lc, claimed, step.providerTaskId, step.final, taskLog);
  }
}

/** What a provider callback led to. */
export interface CallbackOutcome {
  /** Whether this callback won the claim and read the task at the provider. */
  providerRead: boolean;
  task: TaskRecord;
}

/**
 * Acts on a provider callback for a pending task. The callback's body is never trusted: a callback
 * only says "look now", and the task's state comes from the same provider read a poll makes, driving
 * the same completion code. A conditional claim (`lastCallbackReadAt`) allows one read per task and
 * interval, however many callbacks arrive; a task the provider does not have yet is left to the send
 * path. Being early costs nothing: the task stays pending and a later callback or poll finishes it.
 */
export async function refreshFromCallback(
  lc: ProviderLifecycle,
  stored: TaskRecord,
  log: Logger,
  namedProviderTaskId?: string,
): Promise<CallbackOutcome> {
  let task = stored;
  if (task.status === TaskStatus.PENDING && task.providerTaskId === undefined) {
    // Early: the send is still in flight. The note makes the dispatcher read the provider once it has
    // recorded the id; when the id was recorded meanwhile (the note's condition fails), go on with it.
    // It keeps the upstream's id the callback named, for a create whose answer is lost.
    const noted = await noteEarlyCallback(lc.store, {
      userId: task.userId,
      taskId: task.taskId,
      now: lc.now(),
      ...(namedProviderTaskId === undefined ? {} : { providerTaskId: namedProviderTaskId }),
    });
    // The create's outcome is unknown: this callback names the upstream's task, which is adopted.
    if (noted?.stage === 'unknown') return adoptNamedTask(lc, noted, log);
    if (noted) return { providerRead: false, task: noted };
    task = (await getTask(lc.store, task.userId, task.taskId)) ?? task;
  }
  if (task.status !== TaskStatus.PENDING || task.providerTaskId === undefined || awaitsCopy(task)) {
    return { providerRead: false, task };
  }
  const claimed = await claimCallbackRead(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    now: lc.now(),
    intervalMs: lc.config.callbackReadIntervalMs ?? DEFAULT_CALLBACK_READ_INTERVAL_MS,
  });
  if (!claimed?.providerTaskId) return { providerRead: false, task };
  const taskLog = log.child({ taskId: task.taskId });
  // Never `final`: ending a task that is too old is the poll's and the sweeper's decision.
  return { providerRead: true, task: await queryProvider(lc, claimed, claimed.providerTaskId, false, taskLog) };
}

/**
 * Adopts the upstream's task a callback named (`callbackProviderTaskId`) for a task whose create's
 * outcome is unknown: its id is recorded (`stage: running`, conditional on the task still pending
 * without one), then the upstream is read as for any callback. The callback URL is signed for our task
 * and was given to the upstream only in that create, so the id in its body is the upstream's task for
 * ours; the read confirms it exists. Without a named id nothing changes: the task waits.
 */
export async function adoptNamedTask(lc: ProviderLifecycle, task: TaskRecord, log: Logger): Promise<CallbackOutcome> {
  const named = task.callbackProviderTaskId;
  if (task.status !== TaskStatus.PENDING || task.stage !== 'unknown' || named === undefined) {
    return { providerRead: false, task };
  }
  const adopted = await recordProviderTask(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    providerTaskId: named,
    now: lc.now(),
  });
  if (!adopted) return { providerRead: false, task: (await getTask(lc.store, task.userId, task.taskId)) ?? task };
  log.info('Adopted the upstream task a callback named for a create whose outcome was unknown', {
    taskId: task.taskId,
  });
  return refreshFromCallback(lc, adopted, log);
}

/**
 * Asks the provider and acts on the answer. On the `final` query (the task reached its maximum age),
 * anything but success or failure, an unreachable provider included, ends the task with TIMEOUT.
 */
async function queryProvider(
  lc: ProviderLifecycle,
  task: TaskRecord,
  providerTaskId: string,
  final: boolean,
  log: Logger,
): Promise<TaskRecord> {
  let status: ProviderTaskStatus;
  try {
    status = await timedProviderCall(
      'getTask',
      () => providerNamed(lc.upstreams, task.upstream, lc.provider).getTask(providerTaskId),
      log,
    );
  } catch (error) {
    if (!(error instanceof ProviderUnavailableError)) throw error;
    // Unreachable or unintelligible: the task stays pending and the next interval asks again.
    if (!final) return task;
    return failTask(lc, task, { errorCode: 'TIMEOUT', detail: error }, log);
  }
  if (status.state === 'fail') {
    return failTask(
      lc,
      task,
      {
        errorCode: 'PROVIDER_ERROR',
        ...(status.failMessage === undefined ? {} : { providerMessage: status.failMessage }),
        ...(status.failCode === undefined ? {} : { providerCode: status.failCode }),
      },
      log,
    );
  }
  if (status.state !== 'success') {
    return final ? failTask(lc, task, { errorCode: 'TIMEOUT', detail: `provider state ${status.state}` }, log) : task;
  }
  if (status.resultUrls.length === 0) {
    return failTask(lc, task, { errorCode: 'PROVIDER_ERROR', detail: 'success without results' }, log);
  }
  return recordReady(lc, task, status.resultUrls, log);
}

/**
 * Records the paid-for results as ready to copy: at most the task's output count (one for a video).
 * More URLs than that are ignored (and logged): a provider answer never delivers more than was paid.
 * The copy itself is the media worker's (copy-results.ts), off the request path.
 */
async function recordReady(lc: ProviderLifecycle, task: TaskRecord, urls: string[], log: Logger): Promise<TaskRecord> {
  const paid = paidOutputs(task);
  if (urls.length > paid)
    log.warn('Provider returned more results than were paid for', { returned: urls.length, paid });
  const kept = urls.slice(0, paid);
  if (kept.some((url) => url.length > MAX_RESULT_URL_LENGTH)) {
    return failTask(lc, task, { errorCode: 'STORAGE_ERROR', detail: 'result URL too long' }, log);
  }
  const recorded = await recordResultsReady(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    urls: kept,
    now: lc.now(),
  });
  if (recorded) {
    log.info('Results ready to copy', { results: kept.length });
    return recorded;
  }
  return (await getTask(lc.store, task.userId, task.taskId)) ?? task;
}
