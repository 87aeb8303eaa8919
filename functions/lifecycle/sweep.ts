/**
 * The sweeper's walk: every pending task gets the same refresh a poller would give it, so every task
 * reaches a terminal state and every failure is refunded even when nobody polls.
 */
import { DEFAULT_COPY_STALE_MS } from '../core/lifecycle';
import { awaitsCopy, type TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
import { allPendingTasks, getTask } from '../store/tasks';
import { copyResults } from './copy-results';
import type { CopyingLifecycle } from './lifecycle';
import { refreshTask } from './refresh-task';

/**
 * A task whose results have waited for the media worker longer than `copyStaleMs` (its stream record
 * lost or parked in the dead-letter queue) is copied by the sweeper itself, with the worker's code.
 */
async function copyIfStale(lc: CopyingLifecycle, task: TaskRecord, log: Logger): Promise<TaskRecord> {
  const waitedMs = lc.now().getTime() - (task.resultsReadyAt ?? 0);
  if (waitedMs < (lc.config.copyStaleMs ?? DEFAULT_COPY_STALE_MS)) return task;
  return (await copyResults(lc, task, log)) ?? task;
}

export interface SweepReport {
  seen: number;
  completed: number;
  failed: number;
  pending: number;
  errors: number;
  /** The walk stopped early to stay within the time budget; the next run continues. */
  truncated: boolean;
  /** Queued tasks older than {@link QUEUED_STALE_MS}: the dispatcher may have no wake-up coming. */
  queuedStale: number;
}

/**
 * A task queued longer than this makes the sweeper wake the dispatcher: a wake-up lost (a failed send of
 * the message, a run that died) would otherwise leave the queue still until the next insert. A task
 * waiting for the upstream's capacity costs only a run that finds its wake-up already claimed.
 */
export const QUEUED_STALE_MS = 5_000;

export interface SweepOptions {
  /** Tasks refreshed at once; bounded so one run cannot flood the provider. */
  concurrency?: number;
  /** Stop starting new work once this returns false (e.g. Lambda time nearly spent). */
  hasTime?: () => boolean;
}

export async function sweepPendingTasks(
  lc: CopyingLifecycle,
  log: Logger,
  options: SweepOptions = {},
): Promise<SweepReport> {
  const concurrency = options.concurrency ?? 8;
  const hasTime = options.hasTime ?? (() => true);
  const report: SweepReport = {
    seen: 0,
    completed: 0,
    failed: 0,
    pending: 0,
    errors: 0,
    truncated: false,
    queuedStale: 0,
  };
  const inFlight = new Set<Promise<void>>();

  const refreshOne = async (userId: string, taskId: string) => {
    try {
      const task = await getTask(lc.store, userId, taskId);
      if (!task) return;
      const after = awaitsCopy(task) ? await copyIfStale(lc, task, log) : await refreshTask(lc, task, log);
      if (after.status === 1) report.completed++;
      else if (after.status === 2) report.failed++;
      else report.pending++;
      // A lost send is no longer put back in the queue (its outcome is unknown, lifecycle/outcome-unknown.ts):
      // what the sweeper wakes the dispatcher for is a queued task waiting too long.
      if (
        after.status === 0 &&
        after.stage === 'queued' &&
        lc.now().getTime() - Date.parse(after.createdAt) > QUEUED_STALE_MS
      ) {
        report.queuedStale++;
      }
    } catch (error) {
      // One task's fault must not stop the walk; it stays pending and is retried next run.
      report.errors++;
      log.error('Sweeping a task failed', { taskId, error });
    }
  };

  for await (const ref of allPendingTasks(lc.store)) {
    if (!hasTime()) {
      report.truncated = true;
      break;
    }
    report.seen++;
    const job = refreshOne(ref.userId, ref.taskId).finally(() => inFlight.delete(job));
    inFlight.add(job);
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return report;
}
