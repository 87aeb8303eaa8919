/**
 * Spend limits per API key and per account, enforced inside the accept transaction
 * (docs/api/spend-limits-and-usage.md#spend-limits, docs/decisions/0013-sharded-spend-allowances.md).
 *
 * A budget's count for one period is split over `SPEND_SHARDS` counter items, as the balance is split
 * over its shards: shard 0 is `USER#<id>` / `KEYSPEND#<budgetKeyId>#<period>` (the one counter of
 * earlier versions), shard n `...#S<n>`. Each shard owns a fixed share of the limit (`spendCaps`: the
 * limit split as evenly as whole credits allow), and holds `spent`: what accepts counted on it, less
 * refunds and less what was moved away. An accept takes its cost from the room of one shard
 * (`ADD spent :take` on the condition `spent <= cap - take`), normally the shard number it debits the
 * balance on, so two accepts meet on a counter only where they already meet on a balance shard. When
 * the shards' rooms are thin the accept reads them all and gathers room from several in its one
 * transaction (store/shard-plan.ts), moving `spent` between shards without changing its sum. Every
 * shard stays within its share, so the sum, what was spent, stays within the limit however many accepts
 * race; only the sum decides a 402. A conflict is retried like one on a balance shard, and what
 * cannot win answers 503 (nothing written), never more spending. A refund takes the task's credits off
 * the shard its accept counted them on (the task records it: `spendCounter`, `spendShard`).
 *
 * A lowered limit shrinks every share: a shard may then hold more than its new share (room below
 * zero). Before the new limit takes effect the shards are rebalanced (`rebalanceSpendCounters`), so
 * that no shard is over its share while the sum is within the limit.
 *
 * Where a key's limit comes from: the authorizer reads the key item on every request (strongly
 * consistent, no result cache) and passes the limit and its version in its context, so the accept costs
 * no extra read. A change made between that read and the accept must not let the old limit through: a
 * change first stamps its new version on each of the key's 32 key-end guards (`limitVersion`), then
 * rebalances the counters, and only then writes the key, and the guard check every key accept already
 * makes (balance.ts `keyEndCheck`) also requires `limitVersion <= ` the version the accept holds. An
 * accept holding an older view fails that check and answers 503 (retry: the next authorizer read has
 * the new limit). So lowering, raising, adding and removing a limit are exact too, at no cost to accepts.
 */
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { spendPeriodOf } from '../core/spend-limit';
import type { KeySpendLimit } from '../core/task';
import type { TransactItem } from './balance';
import * as conditions from './condition-fragments';
import { and, withCondition } from './conditions';
import { isRetryable, lostCondition, type RetryingStoreContext, withRetry } from './errors';
import type { ItemKey } from './keys';
import { queryAllWithPrefix } from './pages';
import { TABLE } from './table';
import * as keys from './task-keys';

/** How long a period's counter is kept after the period ends (a refund of a late task still finds it). */
export const SPEND_COUNTER_KEEP_SECONDS = 7 * 24 * 60 * 60;

/** Counter shards per budget and period: as many as balance shards, so an accept's items align on one number. */
export const SPEND_SHARDS = TABLE.balanceShards;

/** The counter a limit spends into at `at` (its shard 0), and when its period ends (undefined: `total`). */
export function spendCounterOf(
  userId: string,
  limit: KeySpendLimit,
  at: Date,
): { key: { PK: string; SK: string }; resetsAt: Date | undefined } {
  const period = spendPeriodOf(limit.period, at);
  return { key: keys.spendCounter(userId, limit.budgetKeyId, period.name), resetsAt: period.resetsAt };
}

/** Counter shard `shard` of the counter whose shard 0 is `base` (`<base SK>#S<n>` beyond 0). */
export function spendShardKey(base: ItemKey, shard: number): ItemKey {
  return shard === 0 ? base : { PK: base.PK, SK: `${base.SK}#S${shard}` };
}

/** The shard number of a counter item's sort key, or undefined for another item under the same prefix. */
function spendShardOf(baseSk: string, sk: string): number | undefined {
  if (sk === baseSk) return 0;
  const rest = sk.startsWith(`${baseSk}#S`) ? sk.slice(baseSk.length + 2) : '';
  const shard = /^\d+$/.test(rest) ? Number(rest) : Number.NaN;
  return Number.isSafeInteger(shard) && shard > 0 && shard < SPEND_SHARDS ? shard : undefined;
}

/** Each shard's share of a limit of `credits`, as evenly as whole credits allow (shard 0 gets the rest first). */
export function spendCaps(credits: number): number[] {
  const share = Math.floor(credits / SPEND_SHARDS);
  const extra = credits % SPEND_SHARDS;
  return Array.from({ length: SPEND_SHARDS }, (_, shard) => share + (shard < extra ? 1 : 0));
}

/** The room left on each shard: its share less what it holds (below zero after a lowered limit, until rebalanced). */
export function spendRooms(credits: number, spent: readonly number[]): number[] {
  return spendCaps(credits).map((cap, shard) => cap - (spent[shard] ?? 0));
}

function counterTtl(resetsAt: Date | undefined): number | undefined {
  return resetsAt === undefined ? undefined : Math.floor(resetsAt.getTime() / 1000) + SPEND_COUNTER_KEEP_SECONDS;
}

/**
 * One counter shard's part of an accept: its room changes by `delta` (`spent` by `-delta`). Taking room
 * (`delta <= 0`) holds while the shard stays within its share: `spent <= cap + delta`; a take beyond
 * the share can never fit, and then needs `spent` to exist (a comparison with a missing attribute
 * fails), so it fails on a fresh shard too. Giving room back (a gathering moving `spent` to other
 * shards) needs no condition. ALL_OLD shows the failed shard.
 */
export function spendCounterChange(
  ctx: RetryingStoreContext,
  input: { userId: string; limit: KeySpendLimit; shard: number; delta: number; at: Date },
): TransactItem {
  const { key, resetsAt } = spendCounterOf(input.userId, input.limit, input.at);
  const ttl = counterTtl(resetsAt);
  const take = -input.delta;
  const room = (spendCaps(input.limit.credits)[input.shard] ?? 0) - take;
  const guarded = take >= 0;
  const change = {
    TableName: ctx.tableName,
    Key: spendShardKey(key, input.shard),
    UpdateExpression: `SET #userId = :spendUser${ttl === undefined ? '' : ', #ttl = if_not_exists(#ttl, :spendTtl)'} ADD #spent :spendCost`,
    ExpressionAttributeNames: {
      '#spent': 'spent',
      '#userId': 'userId',
      ...(ttl === undefined ? {} : { '#ttl': TABLE.ttlAttribute }),
    },
    ExpressionAttributeValues: {
      ':spendUser': input.userId,
      ':spendCost': take,
      ...(ttl === undefined ? {} : { ':spendTtl': ttl }),
    },
  };
  return {
    Update: guarded
      ? {
          ...withCondition(change, conditions.spentAtMost(room)),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
        }
      : change,
  };
}

/**
 * A refund's counter item: the task's credits back to the counter shard its accept counted them on. No
 * condition (the refund transaction is exactly-once already); a counter TTL-deleted meanwhile comes back
 * negative for a while and is deleted again (the TTL is set when missing). `sk` is the task's
 * `spendCounter`, `shard` its `spendShard` (absent on tasks accepted before the counters were sharded: 0).
 */
export function spendCounterRefund(
  ctx: RetryingStoreContext,
  input: { userId: string; sk: string; shard?: number; credits: number; at: Date },
): TransactItem {
  return {
    Update: {
      TableName: ctx.tableName,
      Key: spendShardKey(keys.spendCounterBySk(input.userId, input.sk), input.shard ?? 0),
      UpdateExpression: 'SET #ttl = if_not_exists(#ttl, :spendTtl) ADD #spent :spendBack',
      ExpressionAttributeNames: { '#spent': 'spent', '#ttl': TABLE.ttlAttribute },
      ExpressionAttributeValues: {
        ':spendBack': -input.credits,
        ':spendTtl': Math.floor(input.at.getTime() / 1000) + SPEND_COUNTER_KEEP_SECONDS,
      },
    },
  };
}

/** What each counter shard of a limit holds in the period of `at` (one consistent Query; 0 where not written). */
export async function readSpentShards(
  ctx: RetryingStoreContext,
  userId: string,
  limit: KeySpendLimit,
  at: Date,
): Promise<number[]> {
  const { key } = spendCounterOf(userId, limit, at);
  const spent: number[] = new Array(SPEND_SHARDS).fill(0);
  for (const item of await queryAllWithPrefix(ctx, key, [TABLE.sortKey, 'spent'])) {
    const shard = spendShardOf(key.SK, String(item[TABLE.sortKey]));
    if (shard !== undefined && typeof item.spent === 'number') spent[shard] = item.spent;
  }
  return spent;
}

/** What a limit has spent in the period of `at`: the sum of its counter shards (one consistent Query). */
export async function readSpent(
  ctx: RetryingStoreContext,
  userId: string,
  limit: KeySpendLimit,
  at: Date,
): Promise<number> {
  return (await readSpentShards(ctx, userId, limit, at)).reduce((sum, spent) => sum + spent, 0);
}

/** What a budget's counter items under `baseSk` hold in all: its shards, not its alert markers. */
export function sumSpentShards(baseSk: string, items: ReadonlyArray<Record<string, unknown>>): number {
  let sum = 0;
  for (const item of items) {
    if (spendShardOf(baseSk, String(item[TABLE.sortKey])) !== undefined && typeof item.spent === 'number') {
      sum += item.spent;
    }
  }
  return sum;
}

/** Tries of a rebalance: it races only refunds (and accepts of a key in its rotation grace). */
const REBALANCE_ATTEMPTS = 20;

/**
 * Moves `spent` between the counter shards of `limit`'s current period so that no shard holds more than
 * its share of the limit while the sum fits in it (when it does not, every shard but shard 0 is left
 * exactly full and shard 0 holds the excess: nothing fits until refunds bring the sum back under the
 * limit). Run by a change of a limit before accepts use it (a lowered limit shrinks the shares); a
 * no-op when every shard is within its share. One transaction, each shard conditioned on what was read.
 */
export async function rebalanceSpendCounters(
  ctx: RetryingStoreContext,
  input: { userId: string; limit: KeySpendLimit; now: Date },
): Promise<void> {
  const { key, resetsAt } = spendCounterOf(input.userId, input.limit, input.now);
  const ttl = counterTtl(resetsAt);
  const caps = spendCaps(input.limit.credits);
  for (let attempt = 1; ; attempt++) {
    const spent = await readSpentShards(ctx, input.userId, input.limit, input.now);
    const rooms = caps.map((cap, shard) => cap - (spent[shard] ?? 0));
    if (rooms.every((room) => room >= 0)) return;
    const total = rooms.reduce((sum, room) => sum + room, 0);
    const wanted = total >= 0 ? spendCaps(total) : rooms.map((_, shard) => (shard === 0 ? total : 0));
    const items: TransactItem[] = [];
    for (const [shard, cap] of caps.entries()) {
      const was = spent[shard] ?? 0;
      const next = cap - (wanted[shard] ?? 0);
      if (next === was) continue;
      items.push({
        Update: withCondition(
          {
            TableName: ctx.tableName,
            Key: spendShardKey(key, shard),
            UpdateExpression: `SET #spent = :next, #userId = :userId${ttl === undefined ? '' : ', #ttl = if_not_exists(#ttl, :ttl)'}`,
            ExpressionAttributeNames: {
              '#spent': 'spent',
              '#userId': 'userId',
              ...(ttl === undefined ? {} : { '#ttl': TABLE.ttlAttribute }),
            },
            ExpressionAttributeValues: {
              ':next': next,
              ':userId': input.userId,
              ...(ttl === undefined ? {} : { ':ttl': ttl }),
            },
          },
          conditions.spentIs(was),
        ),
      });
    }
    try {
      await ctx.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return;
    } catch (error) {
      // A refund moved a shard since the read (a failed condition or a conflict): read again.
      const moved = isRetryable(error) || (error as { name?: string }).name === 'TransactionCanceledException';
      if (!moved || attempt >= REBALANCE_ATTEMPTS) throw error;
    }
  }
}

/**
 * The account's monthly spend limit as an accept sees it (docs/api/spend-limits-and-usage.md#spend-limits,
 * account-wide): the
 * version stamped on the balance shards (0: never set) and the credits (undefined: no limit).
 */
export interface AccountLimitView {
  version: number;
  credits?: number;
}

/** The budget id of the account-wide counter (`KEYSPEND#ACCOUNT#<month>`): key ids start with `key_`. */
export const ACCOUNT_BUDGET = 'ACCOUNT';

/**
 * What this process last learnt of each account's limit. The accept needs the limit without a read
 * of its own: it assumes what it learnt (nothing: no limit), states that version in its debit's
 * condition, and a debit that finds another version on the shard fails and returns the shard (ALL_OLD),
 * from which the accept learns and tries again at once. So an account costs one failed try per
 * process after a change, and nothing otherwise. Bounded: forgetting costs only that one try.
 */
const accountLimits = new Map<string, AccountLimitView>();

export function knownAccountLimit(userId: string): AccountLimitView {
  return accountLimits.get(userId) ?? { version: 0 };
}

export function learnAccountLimit(userId: string, view: AccountLimitView): void {
  if (accountLimits.size >= 10_000) accountLimits.clear();
  accountLimits.set(userId, view);
}

/** An account limit as the counter code takes a key's: per UTC month, into the account's counter. */
export function accountBudget(credits: number): KeySpendLimit {
  return { credits, period: 'month', budgetKeyId: ACCOUNT_BUDGET };
}

/** How long a guard stamped only with a limit version is kept: far beyond any request in flight. */
const LIMIT_STAMP_SECONDS = 24 * 60 * 60;

/**
 * Stamps limit version `version` on every key-end guard of `keyId` (run BEFORE the key item takes the
 * new limit, see the module comment). A guard that records a key end keeps its own TTL; a newer stamp
 * already there stands. Safe to run again.
 */
export async function stampLimitVersion(
  ctx: RetryingStoreContext,
  input: { userId: string; keyId: string; version: number; now: Date },
): Promise<void> {
  const newer = conditions.limitStampOlderThan(input.version);
  const stamp = async (shard: number) => {
    const base = {
      TableName: ctx.tableName,
      Key: keys.keyEndGuard(input.userId, input.keyId, shard),
    };
    const retry = { ...ctx.retry, maxAttempts: Math.max(ctx.retry?.maxAttempts ?? 0, 20) };
    try {
      await withRetry(
        () =>
          ctx.doc.send(
            new UpdateCommand(
              withCondition(
                {
                  ...base,
                  UpdateExpression: 'SET #limitVersion = :version, #userId = :userId, #ttl = :ttl',
                  ExpressionAttributeNames: {
                    '#limitVersion': 'limitVersion',
                    '#userId': 'userId',
                    '#ttl': TABLE.ttlAttribute,
                  },
                  ExpressionAttributeValues: {
                    ':version': input.version,
                    ':userId': input.userId,
                    ':ttl': Math.floor(input.now.getTime() / 1000) + LIMIT_STAMP_SECONDS,
                  },
                },
                and(conditions.keyEndNotRecorded(), newer),
              ),
            ),
          ),
        retry,
      );
      return;
    } catch (error) {
      lostCondition(error);
    }
    // The guard records the key's end (its TTL is the end's), or a newer stamp is there.
    try {
      await withRetry(
        () =>
          ctx.doc.send(
            new UpdateCommand(
              withCondition(
                {
                  ...base,
                  UpdateExpression: 'SET #limitVersion = :version',
                  ExpressionAttributeNames: { '#limitVersion': 'limitVersion' },
                  ExpressionAttributeValues: { ':version': input.version },
                },
                newer,
              ),
            ),
          ),
        retry,
      );
    } catch (error) {
      lostCondition(error);
    }
  };
  await Promise.all(Array.from({ length: TABLE.balanceShards }, (_, shard) => stamp(shard)));
}
