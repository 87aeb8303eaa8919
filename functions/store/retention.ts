/**
 * The retention schedule: one item per task that asked for a `resultRetention`, under `RETENTION#<n>`
 * (eight partitions, by the task id, so a burst of submits spreads its writes), sorted by the time its
 * results go. The sweeper reads each partition's due entries (one Query each, bounded) and removes
 * them once the task's results are gone: the work per sweep follows what is due, never the number of
 * tasks. The entry is written before the task is accepted, so an accepted task always has one; an
 * entry whose task was never accepted (refused, crashed) is dropped when it comes due. Closing an
 * account schedules one more, due at once, for each task still at the provider (`closed`).
 */
import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as conditions from './condition-fragments';
import { withKeyCondition } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';

/** Partitions of the schedule. */
export const RETENTION_SHARDS = 8;
const PREFIX = 'RETENTION#';

/** A scheduled removal: the task whose results go at `dueAt` (epoch ms). */
export interface RetentionEntry {
  userId: string;
  taskId: string;
  dueAt: number;
  /**
   * The account was closed while the task was at the provider (lifecycle/close-account.ts): once it has
   * ended the whole task goes, as the closure deletes every ended task, not only its results.
   */
  closed?: true;
}

function shardOfTask(taskId: string): number {
  let sum = 0;
  for (const char of taskId) sum = (sum + (char.codePointAt(0) ?? 0)) % RETENTION_SHARDS;
  return sum;
}

function entryKey(entry: RetentionEntry) {
  return {
    PK: `${PREFIX}${shardOfTask(entry.taskId)}`,
    SK: `${new Date(entry.dueAt).toISOString()}#${entry.taskId}`,
  };
}

/** Schedules the removal of a task's results (a PutItem; the same entry twice is one entry). */
export async function scheduleRetention(ctx: RetryingStoreContext, entry: RetentionEntry): Promise<void> {
  await withRetry(
    () => ctx.doc.send(new PutCommand({ TableName: ctx.tableName, Item: { ...entryKey(entry), ...entry } })),
    ctx.retry,
  );
}

/** Up to `limit` entries of partition `shard` due at `now` or before, oldest first. */
export async function dueRetentions(
  ctx: RetryingStoreContext,
  input: { shard: number; now: Date; limit: number },
): Promise<RetentionEntry[]> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          // '~' sorts after every task id character: entries due at exactly `now` are included.
          ...withKeyCondition(
            {},
            conditions.partitionIs(`${PREFIX}${input.shard}`),
            conditions.sortKeyAtMost(`${input.now.toISOString()}#~`),
          ),
          Limit: input.limit,
        }),
      ),
    ctx.retry,
  );
  return (out.Items ?? []).map((item) => ({
    userId: String(item.userId),
    taskId: String(item.taskId),
    dueAt: Number(item.dueAt),
    ...(item.closed === true ? { closed: true as const } : {}),
  }));
}

/** Removes an entry whose work is done. */
export async function dropRetention(ctx: RetryingStoreContext, entry: RetentionEntry): Promise<void> {
  await withRetry(() => ctx.doc.send(new DeleteCommand({ TableName: ctx.tableName, Key: entryKey(entry) })), ctx.retry);
}
