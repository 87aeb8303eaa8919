/**
 * Reads of the dispatch queue (docs/design/dispatching.md): the queue entries of queued tasks, written by
 * the accept transaction (`keys.queueEntry`) under the one `DISPATCH#QUEUE` partition, read in
 * round-robin order by the dispatcher and counted for `queuedAhead` and the queue bound.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT } from '../core/queue-bound';
import { QUEUED_AHEAD_CAP } from '../core/task';
import { type Env, MAX_QUEUED_TASKS_PER_ACCOUNT, readEnv } from '../environment/environment';
import * as conditions from './condition-fragments';
import { attr, namesOf, withKeyCondition } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { DISPATCH_QUEUE, queueAccount } from './keys';
import { TABLE } from './table';
import * as keys from './task-keys';

/** A queued task as its queue entry addresses it. */
export interface QueuedRef {
  userId: string;
  taskId: string;
  createdAt: string;
  /** The account part of the entry's sort key (`queueAccount(userId)`). */
  account: string;
  /** The task's model (entries written before 2026-11-27 lack it). */
  model?: string;
}

/** Entries one filtered Query evaluates (see `nextQueued`): about 10 KB, 3 read units. */
const FILTERED_PAGE = 50;
/** Filtered Queries per pass over the queue (before and after the wrap), so a step's reads stay bounded. */
const FILTERED_PAGES = 6;

/**
 * Up to `limit` queue entries in round-robin order: those of the accounts after `afterAccount` (each
 * account's oldest first), then, wrapping around, from the first account on.
 *
 * With `excludeModels` (the models in backoff), entries of those models are passed over, so a refused
 * model's tasks do not hold up other tasks of the same account nor of the accounts after it: the Query
 * filters them out (entries without a model, written before the model was kept, pass; their claim
 * checks the model). A filtered page that found nothing and ended inside one account's entries moves on
 * to the next account: past that page the account's queue is all the refused model's, as far as one step
 * looks. At most {@link FILTERED_PAGES} pages of {@link FILTERED_PAGE} entries are read per pass.
 */
export async function nextQueued(
  ctx: RetryingStoreContext,
  input: { afterAccount?: string; limit: number; excludeModels?: readonly string[] },
): Promise<QueuedRef[]> {
  const excluded = input.excludeModels ?? [];
  const filter =
    excluded.length === 0
      ? undefined
      : {
          FilterExpression: `attribute_not_exists(${attr('model')}) OR NOT (${attr('model')} IN (${excluded.map((_, index) => `:model${index}`).join(', ')}))`,
          names: { [attr('model')]: 'model' },
          values: Object.fromEntries(excluded.map((model, index) => [`:model${index}`, model])),
        };
  const query = async (after: string | undefined, limit: number) => {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            ...withKeyCondition(
              { ExpressionAttributeNames: { ...filter?.names }, ExpressionAttributeValues: { ...filter?.values } },
              conditions.partitionIs(DISPATCH_QUEUE),
              after === undefined ? undefined : conditions.sortKeyAfter(after),
            ),
            ...(filter ? { FilterExpression: filter.FilterExpression } : {}),
            ConsistentRead: true,
            Limit: limit,
          }),
        ),
      ctx.retry,
    );
    const refs = (out.Items ?? []).flatMap((item) => {
      const [account, createdAt] = String(item[TABLE.sortKey]).split('#');
      if (typeof item.userId !== 'string' || typeof item.taskId !== 'string' || !account || !createdAt) return [];
      const ref: QueuedRef = { userId: item.userId, taskId: item.taskId, createdAt, account };
      if (typeof item.model === 'string') ref.model = item.model;
      return [ref];
    });
    const last = out.LastEvaluatedKey?.[TABLE.sortKey];
    return { refs, lastKey: typeof last === 'string' ? last : undefined };
  };
  /** One pass from `start` (a sort key to read after; undefined: the queue's start) to the queue's end. */
  const pass = async (start: string | undefined, want: number): Promise<QueuedRef[]> => {
    if (!filter) return (await query(start, want)).refs;
    const found: QueuedRef[] = [];
    let after = start;
    for (let page = 0; page < FILTERED_PAGES && found.length < want; page++) {
      const { refs, lastKey } = await query(after, FILTERED_PAGE);
      found.push(...refs);
      if (lastKey === undefined) break;
      // Nothing here but the refused models' entries, and the page ended inside an account: the next
      // account comes next, not the rest of this one's backlog of the same models.
      after = refs.length === 0 ? `${lastKey.split('#')[0] ?? ''}#\uffff` : lastKey;
    }
    return found.slice(0, want);
  };
  const found = await pass(input.afterAccount === undefined ? undefined : `${input.afterAccount}#\uffff`, input.limit);
  if (found.length >= input.limit || input.afterAccount === undefined) return found;
  const seen = new Set(found.map((ref) => ref.taskId));
  const wrapped = (await pass(undefined, input.limit)).filter((ref) => !seen.has(ref.taskId));
  return [...found, ...wrapped].slice(0, input.limit);
}

/** The bound from `MAX_QUEUED_TASKS_PER_ACCOUNT` (the stack sets it from `maxQueuedTasksPerAccount`), else the default. */
export function maxQueuedTasksFromEnv(env?: Env): number {
  return readEnv(MAX_QUEUED_TASKS_PER_ACCOUNT, env) ?? DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT;
}

/**
 * How many of the account's tasks are queued, counted no further than `limit`: a counting Query on the
 * account's own range of `DISPATCH#QUEUE` (`<account>#` to `<account>#\uffff`) that stops after `limit`
 * entries, so its cost is bounded by the limit whatever the queue's length (entries are about 150
 * bytes: some 37 read units at the default bound of 1,000, 1 per 27 entries; docs/design/dispatching.md#scale).
 *
 * It reads and writes nothing the accept transaction holds: no per-account counter, so a burst of
 * submits from one account never conflicts over it. The price is a soft bound: submits counting at the
 * same moment all see the same count, so the account can pass the bound by at most the number of its
 * submits accepted at that moment (docs/design/dispatching.md).
 */
export async function countQueued(
  ctx: RetryingStoreContext,
  input: { userId: string; limit: number },
): Promise<number> {
  const account = queueAccount(input.userId);
  return countQueueRange(ctx, { from: `${account}#`, to: `${account}#\uffff`, limit: input.limit });
}

/**
 * The number of the account's tasks queued before this one, while it is queued, capped at
 * {@link QUEUED_AHEAD_CAP} ("that many or more"): one counting Query that stops after the cap's entries
 * plus its own, so a GET of a task deep in a long queue reads no more than one near its head. Eventually
 * consistent (half the units: at most 3): a figure shown to a caller who polls, where an entry accepted
 * or sent a moment ago may count or not either way.
 */
export async function queuedAhead(
  ctx: RetryingStoreContext,
  input: { userId: string; createdAt: string; taskId: string },
): Promise<number> {
  // Up to and with this task's own entry, which is then not counted. Reaching the limit means the own
  // entry is the last one counted or lies further on: either way `QUEUED_AHEAD_CAP` or more are ahead.
  const own = keys.queueEntry(input.userId, input.createdAt, input.taskId).SK;
  const count = await countQueueRange(ctx, {
    from: `${queueAccount(input.userId)}#`,
    to: own,
    limit: QUEUED_AHEAD_CAP + 1,
    consistent: false,
  });
  return Math.min(QUEUED_AHEAD_CAP, Math.max(0, count - 1));
}

/**
 * Counts the queue entries whose sort keys lie from `from` to `to` (both included), paging, with one
 * counting Query per page, consistent unless `consistent` is false (then an entry accepted a moment ago
 * may not count yet); stops once `limit` are counted, when given.
 */
async function countQueueRange(
  ctx: RetryingStoreContext,
  input: { from: string; to: string; limit?: number; consistent?: boolean },
): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            ...withKeyCondition(
              {},
              conditions.partitionIs(DISPATCH_QUEUE),
              conditions.sortKeyBetween(input.from, input.to),
            ),
            Select: 'COUNT',
            ConsistentRead: input.consistent ?? true,
            ...(input.limit === undefined ? {} : { Limit: input.limit - count }),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    count += out.Count ?? 0;
    start = out.LastEvaluatedKey;
  } while (start && (input.limit === undefined || count < input.limit));
  return count;
}

/**
 * The ids of the account's tasks that have a queue entry among those created from `from` to `to` (ISO
 * times, both included): one Query over that range of the account's entries, so a listing learns which
 * of its pending tasks still wait here without reading each task.
 */
export async function queuedTaskIds(
  ctx: RetryingStoreContext,
  input: { userId: string; from: string; to: string },
): Promise<Set<string>> {
  const account = queueAccount(input.userId);
  const ids = new Set<string>();
  let start: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            ...withKeyCondition(
              { ExpressionAttributeNames: namesOf('taskId') },
              conditions.partitionIs(DISPATCH_QUEUE),
              conditions.sortKeyBetween(`${account}#${input.from}`, `${account}#${input.to}#\uffff`),
            ),
            ProjectionExpression: attr('taskId'),
            ConsistentRead: true,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    for (const item of out.Items ?? []) if (typeof item.taskId === 'string') ids.add(item.taskId);
    start = out.LastEvaluatedKey;
  } while (start);
  return ids;
}
