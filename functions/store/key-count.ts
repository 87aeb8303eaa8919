/**
 * An account's count of active API keys (`USER#<id>` / `KEYCOUNT`: `activeKeys`, `initialized`). Every
 * key has a rate bucket of its own, so the number of keys an account may hold is what bounds its request
 * rate; the count makes the cap exact under races:
 * - a key's listing says `counted` while the key is in the count;
 * - issuing a key adds 1 in the same transaction that writes it, on the condition that the count is
 *   below the cap (`keyCountConditions.roomFor`), so two racing creations cannot both take the last
 *   place;
 * - revoking takes 1 off in the same transaction that revokes (when the listing says `counted`);
 * - a key that reached its expiry is retired (taken off, `counted` removed) by {@link retireEndedKeys}:
 *   when a creation finds no room, and by the sweeper.
 * So the count always equals the number of listings that say `counted`. Accounts from before the count
 * get it on their first key action: every active key is counted, one transaction each, then the count
 * is marked `initialized`; a creation refuses to run on a count that is not.
 */
import { GetCommand, type TransactWriteCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { KeyLimitError } from '../core/errors';
import { type Env, MAX_ACTIVE_KEYS, readEnv } from '../environment/environment';
import type { StoreContext } from './client';
import * as conditions from './condition-fragments';
import { and, type Expr, keyCountConditions, update, updateParams } from './conditions';
import { cancellationReasons, withRetry } from './errors';
import { accountKeys } from './keys';
import { queryAllWithPrefix } from './pages';
import { transact } from './transaction';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The default cap on an account's active keys (`maxActiveKeys` / `MAX_ACTIVE_KEYS`). */
export const DEFAULT_MAX_ACTIVE_KEYS = 20;

/**
 * The cap from `MAX_ACTIVE_KEYS` (the stack sets it from `maxActiveKeys`), else the default.
 * @throws Error naming the variable when it is not a whole number from 1 to 1000
 */
export function maxActiveKeysFromEnv(env?: Env): number {
  return readEnv(MAX_ACTIVE_KEYS, env) ?? DEFAULT_MAX_ACTIVE_KEYS;
}

/** The count's change in a key transaction: `delta` keys, checked against `limit` when it adds one. */
export function keyCountUpdate(ctx: StoreContext, userId: string, delta: number, limit?: number): TransactItem {
  return {
    Update: {
      TableName: ctx.tableName,
      Key: accountKeys.keyCount(userId),
      ...updateParams(
        update({ add: { activeKeys: delta } }),
        delta > 0 && limit !== undefined ? keyCountConditions.roomFor(limit) : undefined,
      ),
    },
  };
}

/** A listing update of a key transaction: `change`, on `condition` and on the `counted` state read before. */
export function listingUpdate(
  ctx: StoreContext,
  key: { userId: string; keyId: string },
  change: Expr,
  condition: Expr,
): TransactItem {
  return {
    Update: {
      TableName: ctx.tableName,
      Key: accountKeys.keyListing(key.userId, key.keyId),
      ...updateParams(change, condition),
    },
  };
}

export interface KeyCount {
  activeKeys: number;
  initialized: boolean;
}

export async function readKeyCount(ctx: StoreContext, userId: string): Promise<KeyCount> {
  const result = await ctx.doc.send(
    new GetCommand({ TableName: ctx.tableName, Key: accountKeys.keyCount(userId), ConsistentRead: true }),
  );
  const activeKeys = result.Item?.activeKeys;
  return {
    activeKeys: typeof activeKeys === 'number' ? activeKeys : 0,
    initialized: result.Item?.initialized === true,
  };
}

/** Whether the key's listing says it is in the count (read before a transaction that ends the key). */
export async function isKeyCounted(ctx: StoreContext, userId: string, keyId: string): Promise<boolean> {
  const result = await ctx.doc.send(
    new GetCommand({
      TableName: ctx.tableName,
      Key: accountKeys.keyListing(userId, keyId),
      ConsistentRead: true,
      ProjectionExpression: '#counted',
      ExpressionAttributeNames: { '#counted': 'counted' },
    }),
  );
  return result.Item?.counted === true;
}

interface ListingState {
  keyId: string;
  counted: boolean;
  revokedAt?: number;
  expiresAt?: number;
}

async function listingStates(ctx: StoreContext, userId: string): Promise<ListingState[]> {
  const items = await queryAllWithPrefix(ctx, accountKeys.keyListing(userId, ''), [
    'keyId',
    'counted',
    'revokedAt',
    'expiresAt',
  ]);
  return items.flatMap((item) =>
    typeof item.keyId === 'string'
      ? [
          {
            keyId: item.keyId,
            counted: item.counted === true,
            ...(typeof item.revokedAt === 'number' ? { revokedAt: item.revokedAt } : {}),
            ...(typeof item.expiresAt === 'number' ? { expiresAt: item.expiresAt } : {}),
          },
        ]
      : [],
  );
}

/** True when a transaction lost only on a condition (the state moved on: nothing to do). */
function lostOnCondition(error: unknown): boolean {
  return cancellationReasons(error)?.some((reason) => reason.Code === 'ConditionalCheckFailed') ?? false;
}

/** Sends `items` (retried on transient failures): false when a condition lost, nothing written. */
async function transactUnlessLost(ctx: StoreContext, items: TransactItem[]): Promise<boolean> {
  try {
    await transact(ctx, items);
    return true;
  } catch (error) {
    if (lostOnCondition(error)) return false;
    throw error;
  }
}

/**
 * Sets the count up for an account from before it: every active key not yet counted is counted (its
 * listing marked in the same transaction as the count's increment, so racing setups count each key
 * once), then the count is marked `initialized`.
 */
export async function ensureKeyCount(ctx: StoreContext, userId: string, now: Date): Promise<KeyCount> {
  const current = await readKeyCount(ctx, userId);
  if (current.initialized) return current;
  const nowSeconds = Math.floor(now.getTime() / 1000);
  for (const listing of await listingStates(ctx, userId)) {
    if (listing.counted || listing.revokedAt !== undefined) continue;
    if (listing.expiresAt !== undefined && listing.expiresAt <= nowSeconds) continue;
    await transactUnlessLost(ctx, [
      listingUpdate(
        ctx,
        { userId, keyId: listing.keyId },
        update({ set: { counted: true } }),
        and(conditions.itemExists(), keyCountConditions.notCounted(), keyCountConditions.keyActiveAt(nowSeconds)),
      ),
      keyCountUpdate(ctx, userId, 1),
    ]);
  }
  await withRetry(() =>
    ctx.doc.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: accountKeys.keyCount(userId),
        ...updateParams(update({ set: { initialized: true }, add: { activeKeys: 0 } })),
      }),
    ),
  );
  return readKeyCount(ctx, userId);
}

/**
 * Takes every counted key that has ended by `now` (in practice: reached its expiry) out of the count,
 * each in a transaction with its listing; returns the ids retired here.
 */
export async function retireEndedKeys(ctx: StoreContext, userId: string, now: Date): Promise<string[]> {
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const retired: string[] = [];
  for (const listing of await listingStates(ctx, userId)) {
    if (!listing.counted) continue;
    const ended =
      listing.revokedAt !== undefined || (listing.expiresAt !== undefined && listing.expiresAt <= nowSeconds);
    if (!ended) continue;
    if (await retireKey(ctx, { userId, keyId: listing.keyId }, now)) retired.push(listing.keyId);
  }
  return retired;
}

/** Takes one ended key out of the count; false when it was not in it (or has not ended). */
export async function retireKey(
  ctx: StoreContext,
  key: { userId: string; keyId: string },
  now: Date,
): Promise<boolean> {
  const nowSeconds = Math.floor(now.getTime() / 1000);
  return transactUnlessLost(ctx, [
    listingUpdate(
      ctx,
      key,
      update({ remove: ['counted'] }),
      and(keyCountConditions.counted(), keyCountConditions.keyEndedBy(nowSeconds)),
    ),
    keyCountUpdate(ctx, key.userId, -1),
  ]);
}

/**
 * Checks, before anything else is done for a new key (API Gateway's control plane is called next), that
 * the account has room for it: keys that ended since are retired first. The transaction that writes the
 * key checks again, exactly (`keyCountConditions.roomFor`). Throws KeyLimitError.
 */
export async function assertRoomForKey(ctx: StoreContext, userId: string, limit: number, now: Date): Promise<void> {
  const count = await ensureKeyCount(ctx, userId, now);
  if (count.activeKeys < limit) return;
  if ((await retireEndedKeys(ctx, userId, now)).length === 0) throw new KeyLimitError(limit);
  if ((await readKeyCount(ctx, userId)).activeKeys >= limit) throw new KeyLimitError(limit);
}
