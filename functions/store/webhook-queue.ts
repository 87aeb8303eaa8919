/**
 * Deliveries past the bound on open deliveries wait, in order, instead of being dropped
 * (docs/api/webhooks.md#ordering-past-the-bound). The account's counter item (`webhookKeys.openDeliveries`)
 * counts both: `openDeliveries` (`sending` or `waiting` for a retry) and `queuedDeliveries` (`queued`:
 * not tried yet, no claim, nothing sent). A delivery opens straight away (store/webhook-delivery-opening.ts) only when
 * the account is below its bound and nothing waits ahead of it; else it is written `queued` with an
 * entry `WHQUEUE#<order>#<id>` (the event's number in the account's feed: the order it happened) in
 * the same transaction that counts it.
 *
 * A queued delivery is promoted (`promoteQueuedDeliveries`): in one transaction the counter moves one
 * from queued to open on the condition that open is below the bound, the delivery goes `queued` ->
 * `sending` with a fresh claim (that write, through the stream, makes its first attempt, as a new
 * delivery's does), and its entry goes. Who promotes: whoever frees a place (the worker that records a
 * delivery's last attempt) and whoever queues (it may have queued just as the last place freed), so a
 * waiting delivery is woken as soon as a place frees; the counter item also sits in the sparse `GSI1`
 * under `WEBHOOKQUEUED` while the account has queued deliveries, and the sweeper promotes for every
 * account listed there each minute: a promotion lost to a crash waits at most that long.
 */
import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as conditions from './condition-fragments';
import { attr, conditionParams, deliveryConditions, update, updateParams } from './conditions';
import { cancellationReasons, lostCondition, type RetryingStoreContext, withRetry } from './errors';
import { webhookKeys } from './keys';
import { TABLE } from './table';
import { type TransactItem, transact } from './transaction';
import * as webhookConditions from './webhook-condition-fragments';

/** The sweeper's index partition of accounts with queued deliveries (`GSI1PK`; `GSI1SK` = the account). */
export const QUEUED_ACCOUNTS_PARTITION = 'WEBHOOKQUEUED';

/** An account's queued delivery entry: in order of `order` (fixed width), then id. */
export function queueEntryKey(userId: string, order: string, id: string): { PK: string; SK: string } {
  return { PK: `USER#${userId}`, SK: `WHQUEUE#${order}#${id}` };
}

/**
 * Writes a delivery `queued` behind the account's others (`order`), counted in `queuedDeliveries`, with
 * an account event's marker when given. `exists`: it (or the event's marker) is there already.
 */
export async function queueDelivery(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    id: string;
    order: string;
    /** The delivery's fields, as it would have opened (no claim). */
    delivery: Record<string, unknown>;
    ttl: Record<string, number>;
    maxOpen: number;
    now: string;
    markerPut?: TransactItem;
  },
): Promise<'queued' | 'exists'> {
  const { userId, id } = input;
  try {
    await transact(
      ctx,
      [
        {
          Put: {
            TableName: ctx.tableName,
            Item: {
              ...webhookKeys.delivery(userId, id),
              ...input.delivery,
              deliveryState: 'queued',
              queueOrder: input.order,
              ...input.ttl,
            },
            ...conditionParams(conditions.itemIsNew()),
          },
        },
        {
          Put: {
            TableName: ctx.tableName,
            Item: { ...queueEntryKey(userId, input.order, id), userId, deliveryId: id, ...input.ttl },
          },
        },
        {
          Update: {
            TableName: ctx.tableName,
            Key: webhookKeys.openDeliveries(userId),
            ...updateParams(
              update({
                set: {
                  userId,
                  updatedAt: input.now,
                  // The bound it was queued under, for the sweeper's promotions.
                  maxOpen: input.maxOpen,
                  [TABLE.pendingIndex.partitionKey]: QUEUED_ACCOUNTS_PARTITION,
                  [TABLE.pendingIndex.sortKey]: userId,
                },
                add: { queuedDeliveries: 1 },
              }),
            ),
          },
        },
        ...(input.markerPut ? [input.markerPut] : []),
      ],
      ctx.retry,
    );
    return 'queued';
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (reasons?.[0]?.Code === 'ConditionalCheckFailed' || reasons?.[3]?.Code === 'ConditionalCheckFailed') {
      return 'exists';
    }
    throw error;
  }
}

/** The account's counts as the counter item holds them. */
export interface DeliveryCounts {
  open: number;
  queued: number;
  /** The bound the account last opened or queued a delivery under (the sweeper opens by it). */
  maxOpen?: number;
}

async function readCounts(ctx: RetryingStoreContext, userId: string): Promise<DeliveryCounts> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({ TableName: ctx.tableName, Key: webhookKeys.openDeliveries(userId), ConsistentRead: true }),
      ),
    ctx.retry,
  );
  const item = out.Item ?? {};
  const number = (value: unknown) => (typeof value === 'number' ? value : 0);
  return {
    open: number(item.openDeliveries),
    queued: number(item.queuedDeliveries),
    ...(typeof item.maxOpen === 'number' ? { maxOpen: item.maxOpen } : {}),
  };
}

/** The account's counts of open and queued deliveries (0 each when it never had one). */
export function countDeliveries(ctx: RetryingStoreContext, userId: string): Promise<DeliveryCounts> {
  return readCounts(ctx, userId);
}

async function oldestQueued(ctx: RetryingStoreContext, userId: string, limit: number) {
  const prefix = queueEntryKey(userId, '', '');
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          KeyConditionExpression: `${attr('pk')} = :pk AND begins_with(${attr('sk')}, :sk)`,
          ExpressionAttributeNames: { [attr('pk')]: TABLE.partitionKey, [attr('sk')]: TABLE.sortKey },
          ExpressionAttributeValues: { ':pk': prefix.PK, ':sk': 'WHQUEUE#' },
          ConsistentRead: true,
          ScanIndexForward: true,
          Limit: limit,
        }),
      ),
    ctx.retry,
  );
  return (out.Items ?? []).map((item) => ({ sk: String(item[TABLE.sortKey]), id: String(item.deliveryId) }));
}

/**
 * Promotes the account's oldest queued deliveries while it is below `maxOpen` (the bound stored with
 * the queue when not given), each to `sending` with a claim from `newClaim`. Each promotion is one
 * transaction, conditional on the bound, on the delivery still `queued` and on its entry: any number of
 * promoters at once promote each delivery once and never past the bound.
 * @returns the ids promoted, in order
 */
export async function promoteQueuedDeliveries(
  ctx: RetryingStoreContext,
  input: { userId: string; maxOpen?: number; now: Date; newClaim: () => { claimId: string; leaseUntil: Date } },
): Promise<string[]> {
  const { userId } = input;
  const promoted: string[] = [];
  for (;;) {
    const counts = await readCounts(ctx, userId);
    const maxOpen = input.maxOpen ?? counts.maxOpen ?? 100;
    if (counts.queued <= 0) {
      await leaveQueuedIndex(ctx, userId);
      return promoted;
    }
    const room = maxOpen - counts.open;
    if (room <= 0) return promoted;
    const entries = await oldestQueued(ctx, userId, Math.min(room, counts.queued, 25));
    if (entries.length === 0) return promoted;
    for (const entry of entries) {
      const outcome = await promoteOne(ctx, { userId, entry, maxOpen, now: input.now, ...input.newClaim() });
      if (outcome === 'full') return promoted;
      if (outcome === 'promoted') promoted.push(entry.id);
    }
  }
}

async function promoteOne(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    entry: { sk: string; id: string };
    maxOpen: number;
    now: Date;
    claimId: string;
    leaseUntil: Date;
  },
): Promise<'promoted' | 'taken' | 'full'> {
  const { userId, entry } = input;
  const now = input.now.toISOString();
  const leaseIso = input.leaseUntil.toISOString();
  try {
    await transact(
      ctx,
      [
        {
          Update: {
            TableName: ctx.tableName,
            Key: webhookKeys.openDeliveries(userId),
            ...updateParams(
              update({ set: { updatedAt: now }, add: { openDeliveries: 1, queuedDeliveries: -1 } }),
              deliveryConditions.openBelow(input.maxOpen),
            ),
          },
        },
        {
          Update: {
            TableName: ctx.tableName,
            Key: webhookKeys.delivery(userId, entry.id),
            ...updateParams(
              update({
                set: {
                  deliveryState: 'sending',
                  claimId: input.claimId,
                  dueAt: leaseIso,
                  countsOpen: true,
                  updatedAt: now,
                  ...webhookKeys.due(entry.id, leaseIso),
                },
                remove: ['queueOrder'],
              }),
              webhookConditions.deliveryQueued(),
            ),
          },
        },
        {
          Delete: {
            TableName: ctx.tableName,
            Key: { PK: `USER#${userId}`, SK: entry.sk },
            ...conditionParams(conditions.itemExists()),
          },
        },
      ],
      ctx.retry,
    );
    return 'promoted';
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (!reasons) throw error;
    if (reasons[0]?.Code === 'ConditionalCheckFailed') return 'full';
    if (reasons[1]?.Code === 'ConditionalCheckFailed' || reasons[2]?.Code === 'ConditionalCheckFailed') {
      // Promoted by another meanwhile; an entry left behind by a crash is removed.
      if (reasons[2]?.Code !== 'ConditionalCheckFailed') await dropEntry(ctx, userId, entry.sk);
      return 'taken';
    }
    throw error;
  }
}

async function dropEntry(ctx: RetryingStoreContext, userId: string, sk: string): Promise<void> {
  await withRetry(
    () => ctx.doc.send(new DeleteCommand({ TableName: ctx.tableName, Key: { PK: `USER#${userId}`, SK: sk } })),
    ctx.retry,
  );
}

/** Takes the account out of the sweeper's list once nothing is queued (only then). */
async function leaveQueuedIndex(ctx: RetryingStoreContext, userId: string): Promise<void> {
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: webhookKeys.openDeliveries(userId),
            ...updateParams(
              update({ remove: [TABLE.pendingIndex.partitionKey, TABLE.pendingIndex.sortKey] }),
              webhookConditions.listedWithNoneQueued(),
            ),
          }),
        ),
      ctx.retry,
    );
  } catch (error) {
    lostCondition(error);
  }
}

/** The accounts with queued deliveries (the sweeper's backstop), at most `limit`. */
export async function accountsWithQueuedDeliveries(ctx: RetryingStoreContext, limit = 100): Promise<string[]> {
  const index = TABLE.pendingIndex;
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          IndexName: index.name,
          KeyConditionExpression: `${attr(index.partitionKey)} = :queued`,
          ExpressionAttributeNames: { [attr(index.partitionKey)]: index.partitionKey },
          ExpressionAttributeValues: { ':queued': QUEUED_ACCOUNTS_PARTITION },
          Limit: limit,
        }),
      ),
    ctx.retry,
  );
  return (out.Items ?? []).map((item) => String(item[index.sortKey]));
}
