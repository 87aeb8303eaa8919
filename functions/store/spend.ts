/**
 * Spend limits per API key, enforced inside the accept transaction (docs/api/spend-limits-and-usage.md#spend-limits).
 *
 * An accept with a key that has a limit adds ONE item to its transaction: the key's counter for the
 * current period (`USER#<id>` / `KEYSPEND#<budgetKeyId>#<period>`), `ADD spent :cost` under the
 * condition `attribute_not_exists(spent) OR spent <= :limit - cost`. DynamoDB serialises transactions
 * on an item, so however many accepts race, the credits counted in a period never pass the limit; a
 * conflict on the counter is retried like one on a shard, and what cannot win answers 503 (nothing
 * written), never more spending. A refund takes the task's credits off the counter it was counted in
 * (the task records it: `spendCounter`).
 *
 * Where the limit comes from: the authorizer reads the key item on every request (strongly consistent,
 * no result cache) and passes the limit and its version in its context, so the accept costs no extra
 * read. A change made between that read and the accept must not let the old limit through: a change
 * first stamps its new version on each of the key's 32 key-end guards (`limitVersion`) and only then
 * writes the key, and the guard check every key accept already makes (balance.ts `keyEndCheck`) also
 * requires `limitVersion <= ` the version the accept holds. An accept holding an older view fails that
 * check and answers 503 (retry: the next authorizer read has the new limit). So lowering, raising,
 * adding and removing a limit are exact too, at no cost to accepts.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { spendPeriodOf } from '../core/spend-limit';
import type { KeySpendLimit } from '../core/task';
import type { TransactItem } from './balance';
import { lostCondition, type RetryingStoreContext, withRetry } from './errors';
import { TABLE } from './table';
import * as keys from './task-keys';

/** How long a period's counter is kept after the period ends (a refund of a late task still finds it). */
export const SPEND_COUNTER_KEEP_SECONDS = 7 * 24 * 60 * 60;

/** The counter a limit spends into at `at`, and when its period ends (undefined: `total`). */
export function spendCounterOf(
  userId: string,
  limit: KeySpendLimit,
  at: Date,
): { key: { PK: string; SK: string }; resetsAt: Date | undefined } {
  const period = spendPeriodOf(limit.period, at);
  return { key: keys.spendCounter(userId, limit.budgetKeyId, period.name), resetsAt: period.resetsAt };
}

function counterTtl(resetsAt: Date | undefined): number | undefined {
  return resetsAt === undefined ? undefined : Math.floor(resetsAt.getTime() / 1000) + SPEND_COUNTER_KEEP_SECONDS;
}

/**
 * The accept's counter item: `ADD spent :cost` while what was spent leaves room for `cost`. A cost above
 * the whole limit can never fit: the condition then needs `spent` to exist (a comparison with a missing
 * attribute fails), so it fails on a fresh counter too. ALL_OLD gives acceptFailure the `spent` to report.
 */
export function spendCounterDebit(
  ctx: RetryingStoreContext,
  input: { userId: string; limit: KeySpendLimit; cost: number; at: Date },
): TransactItem {
  const { key, resetsAt } = spendCounterOf(input.userId, input.limit, input.at);
  const room = input.limit.credits - input.cost;
  const ttl = counterTtl(resetsAt);
  return {
    Update: {
      TableName: ctx.tableName,
      Key: key,
      UpdateExpression: `SET #userId = :spendUser${ttl === undefined ? '' : ', #ttl = if_not_exists(#ttl, :spendTtl)'} ADD #spent :spendCost`,
      ConditionExpression: room >= 0 ? 'attribute_not_exists(#spent) OR #spent <= :spendRoom' : '#spent <= :spendRoom',
      ExpressionAttributeNames: {
        '#spent': 'spent',
        '#userId': 'userId',
        ...(ttl === undefined ? {} : { '#ttl': TABLE.ttlAttribute }),
      },
      ExpressionAttributeValues: {
        ':spendUser': input.userId,
        ':spendCost': input.cost,
        ':spendRoom': room,
        ...(ttl === undefined ? {} : { ':spendTtl': ttl }),
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/**
 * A refund's counter item: the task's credits back to the counter its accept added them to. No
 * condition (the refund transaction is exactly-once already); a counter TTL-deleted meanwhile comes back
 * negative for a while and is deleted again (the TTL is set when missing). `sk` is the task's `spendCounter`.
 */
export function spendCounterRefund(
  ctx: RetryingStoreContext,
  input: { userId: string; sk: string; credits: number; at: Date },
): TransactItem {
  return {
    Update: {
      TableName: ctx.tableName,
      Key: keys.spendCounterBySk(input.userId, input.sk),
      UpdateExpression: 'SET #ttl = if_not_exists(#ttl, :spendTtl) ADD #spent :spendBack',
      ExpressionAttributeNames: { '#spent': 'spent', '#ttl': TABLE.ttlAttribute },
      ExpressionAttributeValues: {
        ':spendBack': -input.credits,
        ':spendTtl': Math.floor(input.at.getTime() / 1000) + SPEND_COUNTER_KEEP_SECONDS,
      },
    },
  };
}

/** What a limit has spent in the period of `at` (one consistent GetItem; 0 for a counter not written yet). */
export async function readSpent(
  ctx: RetryingStoreContext,
  userId: string,
  limit: KeySpendLimit,
  at: Date,
): Promise<number> {
  const { key } = spendCounterOf(userId, limit, at);
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: key,
          ConsistentRead: true,
          ProjectionExpression: '#spent',
          ExpressionAttributeNames: { '#spent': 'spent' },
        }),
      ),
    ctx.retry,
  );
  const spent = out.Item?.spent;
  return typeof spent === 'number' ? spent : 0;
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
  const newer = '(attribute_not_exists(#limitVersion) OR #limitVersion < :version)';
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
            new UpdateCommand({
              ...base,
              UpdateExpression: 'SET #limitVersion = :version, #userId = :userId, #ttl = :ttl',
              ConditionExpression: `attribute_not_exists(#endsAt) AND ${newer}`,
              ExpressionAttributeNames: {
                '#limitVersion': 'limitVersion',
                '#userId': 'userId',
                '#ttl': TABLE.ttlAttribute,
                '#endsAt': 'endsAt',
              },
              ExpressionAttributeValues: {
                ':version': input.version,
                ':userId': input.userId,
                ':ttl': Math.floor(input.now.getTime() / 1000) + LIMIT_STAMP_SECONDS,
              },
            }),
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
            new UpdateCommand({
              ...base,
              UpdateExpression: 'SET #limitVersion = :version',
              ConditionExpression: newer,
              ExpressionAttributeNames: { '#limitVersion': 'limitVersion' },
              ExpressionAttributeValues: { ':version': input.version },
            }),
          ),
        retry,
      );
    } catch (error) {
      lostCondition(error);
    }
  };
  await Promise.all(Array.from({ length: TABLE.balanceShards }, (_, shard) => stamp(shard)));
}
