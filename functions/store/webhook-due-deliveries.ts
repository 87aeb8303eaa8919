/**
 * The sweeper's side of webhook deliveries: the due index (`GSI1`, sharded, `<time>#<id>`) lists the
 * deliveries whose next attempt's time came (`waiting`) and the claims that ran out (`sending`), and a
 * claim takes one for its next attempt. The claim's write is what the table's stream hands to the
 * webhook worker (store/webhooks.ts describes the states).
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { UsageError } from '../core/errors';
import { attr, deliveryConditions, update, updateParams } from './conditions';
import { lostCondition, type RetryingStoreContext, withRetry } from './errors';
import { userIdFromPk, webhookDueShardKey, webhookKeys } from './keys';
import { TABLE } from './table';

/** A delivery the due index lists: enough to claim it. */
export interface DueDeliveryRef {
  userId: string;
  /** The delivery's key: its task's id, or an account event's id (`evt_...`). */
  taskId: string;
  /** Its due-index sort key as listed; the claim requires it unchanged. */
  dueKey: string;
}

/**
 * Claims the next attempt of a due delivery (`waiting` whose time came, or `sending` whose claim ran
 * out): only if it still sits in the index where the sweeper listed it. The write starts the attempt
 * (stream). False when someone else moved it first.
 */
export async function claimDelivery(
  ctx: RetryingStoreContext,
  input: DueDeliveryRef & { claimId: string; leaseUntil: Date; now: Date },
): Promise<boolean> {
  const leaseIso = input.leaseUntil.toISOString();
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: webhookKeys.delivery(input.userId, input.taskId),
            ...updateParams(
              update({
                set: {
                  deliveryState: 'sending',
                  claimId: input.claimId,
                  dueAt: leaseIso,
                  updatedAt: input.now.toISOString(),
                  ...webhookKeys.due(input.taskId, leaseIso),
                },
              }),
              deliveryConditions.dueAt(input.dueKey),
            ),
          }),
        ),
      ctx.retry,
    );
    return true;
  } catch (error) {
    lostCondition(error);
    return false;
  }
}

/** Deliveries of one due-index shard that are due at `now` (oldest first, at most `limit`). */
export async function listDueDeliveries(
  ctx: RetryingStoreContext,
  input: { shard: number; now: Date; limit?: number },
): Promise<DueDeliveryRef[]> {
  if (!Number.isInteger(input.shard) || input.shard < 0 || input.shard >= TABLE.webhookDueShards) {
    throw new UsageError(`shard must be an integer in 0..${TABLE.webhookDueShards - 1}`);
  }
  const index = TABLE.pendingIndex;
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          IndexName: index.name,
          // `<time>#<taskId>` sorts by time; '$' follows '#', so this takes every key of times up to now.
          KeyConditionExpression: `${attr(index.partitionKey)} = :shard AND ${attr(index.sortKey)} < :upTo`,
          ExpressionAttributeNames: {
            [attr(index.partitionKey)]: index.partitionKey,
            [attr(index.sortKey)]: index.sortKey,
          },
          ExpressionAttributeValues: {
            ':shard': webhookDueShardKey(input.shard),
            ':upTo': `${input.now.toISOString()}$`,
          },
          ScanIndexForward: true,
          Limit: input.limit ?? 100,
        }),
      ),
    ctx.retry,
  );
  const prefix = webhookKeys.delivery('', '').SK;
  return (out.Items ?? []).map((item) => ({
    userId: userIdFromPk(String(item[TABLE.partitionKey])),
    taskId: String(item[TABLE.sortKey]).slice(prefix.length),
    dueKey: String(item[index.sortKey]),
  }));
}

/** Every due delivery of every shard (for the sweeper), a page per shard. */
export async function allDueDeliveries(ctx: RetryingStoreContext, now: Date): Promise<DueDeliveryRef[]> {
  const shards = Array.from({ length: TABLE.webhookDueShards }, (_, shard) => shard);
  const pages = await Promise.all(shards.map((shard) => listDueDeliveries(ctx, { shard, now })));
  return pages.flat();
}
