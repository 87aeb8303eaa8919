/**
 * Sharded balances. An account's credits are spread over `TABLE.balanceShards` items (`ACCOUNT`,
 * `ACCOUNT#1`, ...); the balance is their sum. DynamoDB cancels a transaction that touches an item
 * another transaction holds, so one balance item lets one accept of an account commit at a time; with
 * shards, accepts pick different items and commit side by side.
 *
 * - An accept debits one shard picked at random; on a conflict it tries another shard at once.
 * - When the picked shard cannot cover the cost, all shards are read and the debit is planned from
 *   them (store/shard-plan.ts): one shard that covers it when enough do, else a gathering of the
 *   shards with credits into lumps of at least one cost, in the same single transaction (each shard
 *   with its own `balance >= take` condition), so a burst on a thin balance settles at once. Only the
 *   total decides a 402.
 * - Grants and refunds credit one shard picked at random (another one at once on a conflict).
 *
 * Every change is still one transaction with its ledger entry; moving credits between shards inside it
 * does not change the balance, so it needs no entry of its own.
 */
import { TransactWriteCommand, type TransactWriteCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as conditions from './condition-fragments';
import { and, conditionParams, LEGACY_KEY_END_PREFIX, update, updateParams, withCondition } from './conditions';
import {
  backoffDelay,
  busy,
  cancellationReasons,
  isRetryable,
  lostCondition,
  type RetryingStoreContext,
  realSleep,
  withRetry,
} from './errors';
import { balanceShardOf, type ItemKey } from './keys';
import { queryAllWithPrefix } from './pages';
import type { ShardPlan } from './shard-plan';
import { TABLE } from './table';
import * as keys from './task-keys';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** Balances by shard number (a missing shard holds 0). */
export type ShardBalances = number[];

/** Picks a shard at random, avoiding `avoid` while any other is left. */
export function randomShard(avoid: ReadonlySet<number> = new Set(), random: () => number = Math.random): number {
  const all = [...Array(TABLE.balanceShards).keys()];
  const free = all.filter((shard) => !avoid.has(shard));
  const pool = free.length > 0 ? free : all;
  return pool[Math.floor(random() * pool.length)] ?? 0;
}

/**
 * Every shard's balance: a consistent Query on the `ACCOUNT` prefix, normally one page of a few hundred
 * bytes (one read unit). Every page is read: the projection trims what comes back, not what a page
 * reads, so shards grown by anything (such as the legacy key-end markers) would otherwise be under-read.
 * A user without an account reads as all zeros.
 */
export async function readShards(ctx: RetryingStoreContext, userId: string): Promise<ShardBalances> {
  const prefix = keys.balancePrefix(userId);
  const balances: ShardBalances = new Array(TABLE.balanceShards).fill(0);
  for (const item of await queryAllWithPrefix(ctx, prefix, [TABLE.sortKey, 'balance'])) {
    const shard = balanceShardOf(String(item[TABLE.sortKey]));
    if (shard < TABLE.balanceShards && typeof item.balance === 'number') balances[shard] = item.balance;
  }
  return balances;
}

/** The sum of the shards. */
export function totalOf(balances: ShardBalances): number {
  return balances.reduce((sum, balance) => sum + balance, 0);
}

/** The API key an accept spends with, and the time its end is checked at (absent for callers without a key). */
export interface KeyGuard {
  keyId: string;
  nowSeconds: number;
  /** The version of the key's spend limit the accept holds (0: none ever); see store/spend.ts. */
  limitVersion: number;
}

/**
 * One shard's part of a transaction: `ADD balance delta`. A negative delta is guarded by
 * `balance >= -delta`, so no shard can go below zero whatever moved since it was read, and, for an
 * accept, by the account spend limit's version it holds (store/spend.ts). ALL_OLD lets the caller see
 * the shard on failure.
 */
export function shardChange(
  ctx: RetryingStoreContext,
  input: { userId: string; shard: number; delta: number; at: string; accountLimitVersion?: number },
): TransactItem {
  const condition =
    input.delta >= 0
      ? undefined
      : input.accountLimitVersion === undefined
        ? conditions.balanceCovers(-input.delta)
        : and(conditions.balanceCovers(-input.delta), conditions.accountLimitIs(input.accountLimitVersion));
  return {
    Update: {
      TableName: ctx.tableName,
      Key: keys.balanceShard(input.userId, input.shard),
      ...updateParams(
        update({
          add: { balance: input.delta },
          set: { userId: input.userId, updatedAt: input.at },
          setIfMissing: { createdAt: input.at },
        }),
        condition,
      ),
      ...(condition ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
    },
  };
}

/** `amount` split over all shards as evenly as whole credits allow (the first shards get the rest). */
export function spreadEvenly(amount: number): number[] {
  const share = Math.floor(amount / TABLE.balanceShards);
  const extra = amount % TABLE.balanceShards;
  return Array.from({ length: TABLE.balanceShards }, (_, shard) => share + (shard < extra ? 1 : 0));
}

/** How a debit is spread: shard number and the (non-zero) change of its balance; the sum is `-cost` (store/shard-plan.ts). */
export type DebitPlan = ShardPlan;

/**
 * Tries per operation that moves credits. A conflict on a shard is retried at once on another shard,
 * so most tries cost no wait; conflicts on other items back off as `withRetry` does.
 */
export const SHARD_ATTEMPTS = 12;

/** Conflicts on a shard retried without any wait before backing off: another shard is likely free. */
const IMMEDIATE_SHARD_RETRIES = 2;

/**
 * The wait after a cancelled try. A conflict on a shard is retried at once on another shard, the first
 * `IMMEDIATE_SHARD_RETRIES` times; after that, or for a conflict on another item (a parallel replay's
 * idempotency record, a task a refund races for), full-jitter backoff: trying shard after shard at once
 * while a transaction holds them all (a grant spread over every shard) would spend the tries in one
 * hold time.
 */
export async function pauseAfterConflict(ctx: RetryingStoreContext, attempt: number, onShard: boolean): Promise<void> {
  if (onShard && attempt <= IMMEDIATE_SHARD_RETRIES) return;
  const retry = onShard ? attempt - IMMEDIATE_SHARD_RETRIES : attempt;
  await (ctx.retry?.sleep ?? realSleep)(backoffDelay(Math.min(retry, 6), ctx.retry));
}

/**
 * Runs a transaction that credits one shard (a grant or a refund). `build(shard)` returns the items and
 * where the shard is among them. A conflict on the shard moves to another shard at once; other
 * conflicts back off; after `SHARD_ATTEMPTS` tries (or `ctx.retry.maxAttempts`) the caller gets `ServiceBusyError` (nothing written).
 * Other failures (failed conditions) propagate for the caller to map.
 */
export async function transactCreditingOneShard(
  ctx: RetryingStoreContext,
  build: (shard: number) => { items: TransactItem[]; shardIndex: number },
): Promise<void> {
  const avoid = new Set<number>();
  for (let attempt = 1; ; attempt++) {
    const shard = randomShard(avoid, ctx.retry?.random);
    const { items, shardIndex } = build(shard);
    try {
      await ctx.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return;
    } catch (error) {
      if (!isRetryable(error)) throw error;
      if (attempt >= (ctx.retry?.maxAttempts ?? SHARD_ATTEMPTS)) throw busy(error);
      const onShard = cancellationReasons(error)?.[shardIndex]?.Code === 'TransactionConflict';
      if (onShard) avoid.add(shard);
      await pauseAfterConflict(ctx, attempt, onShard);
    }
  }
}

/**
 * The accept's check that its key has not ended: a ConditionCheck on the key's guard for the shard the
 * accept debits first. A ConditionCheck on the key item itself would put one shared item into every
 * accept of that key, and DynamoDB cancels transactions that share an item (the one-item ceiling the
 * shards exist to lift); the guards are sharded like the balance, so two accepts meet on a guard only
 * when they already meet on a shard. A guard that does not exist passes.
 */
export function keyEndCheck(ctx: RetryingStoreContext, userId: string, guard: KeyGuard, shard: number): TransactItem {
  return {
    ConditionCheck: {
      TableName: ctx.tableName,
      Key: keys.keyEndGuard(userId, guard.keyId, shard),
      ...conditionParams(and(conditions.keyNotEnded(guard.nowSeconds), conditions.limitCurrent(guard.limitVersion))),
      // acceptFailure tells an ended key (401) from a limit changed since the authorizer read it (503).
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/**
 * The key id of the account's sessions in the key-end guards: an accept with a session checks it as an
 * accept with a key checks the key's, and closing the account ends it (lifecycle/close-account.ts), so no
 * session's submit still in flight debits once the closure has begun. No API key id has this shape.
 */
export const SESSIONS_GUARD_ID = 'SESSIONS';

/** The guard an accept checks: its API key's, or (no key: a session) the account's sessions'. */
export function credentialGuard(keyId: string | undefined, nowSeconds: number, limitVersion: number): KeyGuard {
  return { keyId: keyId ?? SESSIONS_GUARD_ID, nowSeconds, limitVersion };
}

/**
 * How long a key-end guard is kept after the key ended (DynamoDB's TTL removes it). It is needed only
 * while a request that the authorizer allowed before the end can still reach an accept (the authorizer
 * cache is off, so: one request's time through API Gateway and the submit function); a day is ample.
 */
export const KEY_END_GUARD_SECONDS = 24 * 60 * 60;

/**
 * Records that key `keyId` ends at `endSeconds` in each of its key-end guards (one per balance shard; an
 * earlier end already recorded wins), so every accept with that key fails from then on, whatever
 * authorizer decision is still in flight. Revocations write the guards BEFORE the key item says
 * `revokedAt` (see api-keys.ts), so no accept can debit after the revocation is recorded. Each guard is
 * one small item with a TTL, so however many keys end, no item any accept writes grows.
 *
 * Also removes the legacy `keyEnd_*` markers earlier versions wrote onto the balance shards (one Query;
 * an UpdateItem only for a shard that still holds some). Safe to run again.
 */
export async function markKeyEnd(
  ctx: RetryingStoreContext,
  input: { userId: string; keyId: string; endSeconds: number },
): Promise<void> {
  const names = { '#endsAt': 'endsAt', '#userId': 'userId', '#ttl': TABLE.ttlAttribute };
  // Every guard at once (as `stampLimitVersion` stamps them, store/spend.ts): one after another, each
  // waiting out the accepts that hold its guard, a revocation racing 40 accepts took 14 s, and every
  // accept that committed meanwhile was one more task for a closing account to cancel.
  const endGuard = async (shard: number) => {
    const params = withCondition(
      {
        TableName: ctx.tableName,
        Key: keys.keyEndGuard(input.userId, input.keyId, shard),
        UpdateExpression: 'SET #endsAt = :end, #userId = :userId, #ttl = :ttl',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: {
          ':end': input.endSeconds,
          ':userId': input.userId,
          ':ttl': input.endSeconds + KEY_END_GUARD_SECONDS,
        },
      },
      conditions.keyEndLaterThan(input.endSeconds),
    );
    try {
      // Retried on conflicts: guards race with the accepts that check them, and a revocation must not
      // give up where a submit would (it is rare, and a caller that sees 503 would have to retry it).
      // The context's retry options (sleep, delays) apply, but never fewer tries than the guards' own.
      const retry = {
        ...ctx.retry,
        maxAttempts: Math.max(ctx.retry?.maxAttempts ?? 0, KEY_END_RETRY.maxAttempts),
      };
      await withRetry(() => ctx.doc.send(new UpdateCommand(params)), retry);
    } catch (error) {
      // An earlier end is recorded already: it stands.
      lostCondition(error);
    }
  };
  await Promise.all(Array.from({ length: TABLE.balanceShards }, (_, shard) => endGuard(shard)));
  await removeLegacyKeyEndMarkers(ctx, input.userId);
}

/**
 * The guards' retry budget: more tries than a submit's, the same full-jitter backoff (at most about
 * 20 s of waits). 20 tries were enough while a key's 32 guards were written one after another; written
 * side by side for a close racing 40 submits through the conflict layer (stress scale), one guard lost
 * all 20 and the close answered 503.
 */
const KEY_END_RETRY = { maxAttempts: 40 } as const;

/** Attribute names per REMOVE: an expression may hold at most 4 KB, and each name costs about 12 bytes. */
const LEGACY_REMOVALS_PER_UPDATE = 100;

/** Removes the `keyEnd_*` attributes that earlier versions wrote onto the account's balance shards. */
async function removeLegacyKeyEndMarkers(ctx: RetryingStoreContext, userId: string): Promise<void> {
  for (const item of await queryAllWithPrefix(ctx, keys.balancePrefix(userId))) {
    const legacy = Object.keys(item).filter((name) => name.startsWith(LEGACY_KEY_END_PREFIX));
    const shard = balanceShardOf(String(item[TABLE.sortKey]));
    for (let start = 0; start < legacy.length; start += LEGACY_REMOVALS_PER_UPDATE) {
      await removeAttributes(
        ctx,
        keys.balanceShard(userId, shard),
        legacy.slice(start, start + LEGACY_REMOVALS_PER_UPDATE),
      );
    }
  }
}

async function removeAttributes(ctx: RetryingStoreContext, key: ItemKey, attributes: string[]): Promise<void> {
  const names = Object.fromEntries(attributes.map((name, index) => [`#legacy${index}`, name]));
  await withRetry(
    () =>
      ctx.doc.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: key,
          UpdateExpression: `REMOVE ${Object.keys(names).join(', ')}`,
          ExpressionAttributeNames: names,
        }),
      ),
    ctx.retry,
  );
}
