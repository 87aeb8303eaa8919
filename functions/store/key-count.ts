/**
 * The items of an account's count of active API keys (`USER#<id>` / `KEYCOUNT`: `activeKeys`,
 * `initialized`) and the reads of it. Every key has a rate bucket of its own, so the number of keys an
 * account may hold is what bounds its request rate; the count makes the cap exact under races:
 * - a key's listing says `counted` while the key is in the count;
 * - issuing a key adds 1 in the same transaction that writes it, on the condition that the count is
 *   below the cap (`keyCountConditions.roomFor`), so two racing creations cannot both take the last
 *   place;
 * - revoking takes 1 off in the same transaction that revokes (when the listing says `counted`);
 * - a key that reached its expiry is retired (taken off, `counted` removed): when a creation finds no
 *   room, and by the sweeper.
 * So the count always equals the number of listings that say `counted`. Accounts from before the count
 * get it on their first key action: every active key is counted, one transaction each, then the count
 * is marked `initialized`; a creation refuses to run on a count that is not. Those transactions are
 * composed in money/ (money/key-issue.ts, money/key-end.ts, money/key-cap.ts); this module builds their
 * items on the named conditions of `keyCountConditions`.
 */
import { GetCommand, type TransactWriteCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type Env, MAX_ACTIVE_KEYS, readEnv } from '../environment/environment';
import type { StoreContext } from './client';
import { type Expr, keyCountConditions, update, updateParams } from './conditions';
import { withRetry } from './errors';
import { accountKeys } from './keys';
import { queryAllWithPrefix } from './pages';

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

/** The account's count as it is now (0 and not initialized when it has none yet). */
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

/** What the count needs of a key's listing: whether it is counted, and its end if any. */
export interface ListingState {
  keyId: string;
  counted: boolean;
  revokedAt?: number;
  expiresAt?: number;
}

/** The count state of every key listing of an account (one paged Query). */
export async function listingStates(ctx: StoreContext, userId: string): Promise<ListingState[]> {
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

/**
 * Marks the count `initialized` (every older key counted: money/key-cap.ts `ensureKeyCount`), creating
 * it at 0 when missing.
 */
export async function markKeyCountInitialized(ctx: StoreContext, userId: string): Promise<void> {
  await withRetry(() =>
    ctx.doc.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: accountKeys.keyCount(userId),
        ...updateParams(update({ set: { initialized: true }, add: { activeKeys: 0 } })),
      }),
    ),
  );
}
