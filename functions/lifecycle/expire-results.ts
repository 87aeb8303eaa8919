/**
 * The sweeper's retention step (docs/design/accounts.md#result-retention): the tasks whose own
 * `resultRetention` has ended lose their results as a delete removes them (lifecycle/delete-data.ts:
 * result files, checked upload copies, inline images), and the task records `resultsExpiredAt`. It
 * reads only what is due (store/retention.ts), so its cost follows the removals, not the tasks.
 *
 * An entry the closure of an account wrote for a task still at the provider (`closed`) waits until the
 * task has ended (completed, or failed and refunded as usual), then the task goes whole as the closure
 * deletes an ended task (lifecycle/delete-data.ts `deleteEndedTask`: its files, then its record; its
 * ledger entries stay).
 */
import { TaskNotFoundError } from '../core/errors';
import { TaskStatus } from '../core/task';
import type { Logger } from '../observability/logger';
import { dropRetention, dueRetentions, RETENTION_SHARDS } from '../store/retention';
import { markResultsExpired } from '../store/task-removal';
import { getTask } from '../store/tasks';
import { deleteEndedTask, type RemovalContext, removeTaskObjects } from './delete-data';

/** Entries read per partition and run: a run's bounded share; the next run takes the rest. */
export const RETENTION_BATCH = 50;

export interface RetentionReport {
  /** Tasks whose results were removed. */
  expired: number;
  /** Tasks of closed accounts removed whole once they ended. */
  deleted: number;
  /** Entries dropped without work: the task was deleted, or never accepted. */
  dropped: number;
  /** Due, but the task is still pending: looked at again by the next run. */
  waiting: number;
  errors: number;
}

/** Removes the results of every task whose retention ended by `ctx.now()` (up to a batch per partition). */
export async function expireResults(ctx: RemovalContext, log: Logger): Promise<RetentionReport> {
  const report: RetentionReport = { expired: 0, deleted: 0, dropped: 0, waiting: 0, errors: 0 };
  const now = ctx.now();
  const shards = Array.from({ length: RETENTION_SHARDS }, (_, shard) => shard);
  await Promise.all(
    shards.map(async (shard) => {
      const due = await dueRetentions(ctx.store, { shard, now, limit: RETENTION_BATCH });
      for (const entry of due) {
        try {
          const task = await getTask(ctx.store, entry.userId, entry.taskId);
          if (!task) {
            await dropRetention(ctx.store, entry);
            report.dropped++;
            continue;
          }
          // A task still running keeps its entry: its results, once there, go at the next run.
          if (task.status === TaskStatus.PENDING) {
            report.waiting++;
            continue;
          }
          if (entry.closed) {
            try {
              await deleteEndedTask(ctx, task, log);
              report.deleted++;
            } catch (error) {
              // Deleted meanwhile (closing the account again): nothing is left to remove.
              if (!(error instanceof TaskNotFoundError)) throw error;
              report.dropped++;
            }
            await dropRetention(ctx.store, entry);
            continue;
          }
          await removeTaskObjects(ctx, task);
          await markResultsExpired(ctx.store, task, now);
          await dropRetention(ctx.store, entry);
          report.expired++;
        } catch (error) {
          // Left in place: the next run tries the entry again.
          report.errors++;
          log.error('Removing expired results failed; the next sweep tries again', { taskId: entry.taskId, error });
        }
      }
    }),
  );
  return report;
}
