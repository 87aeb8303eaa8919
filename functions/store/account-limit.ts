/**
 * The account-wide monthly spend limit (docs/api/spend-limits-and-usage.md#spend-limits): set and read here, off the
 * request
 * path; enforced by the accept (store/tasks.ts) through what it learns from the balance shards.
 *
 * The limit lives in two places. `USER#<id>` / `SPENDLIMIT` holds it as set, with a version that grows
 * with every change. Each of the 32 balance shards carries a stamp of it (`acctLimitVersion`,
 * `acctLimitCredits`): every accept debits a shard anyway, and states in that debit's condition the
 * version it holds (store/spend.ts), so an accept holding an older view fails, learns the stamped
 * limit from the shard, and tries again, at no cost to accounts that never set one.
 *
 * A change is shown only once it is enforced everywhere: it reserves the next version on the item
 * (`pendingVersion`, conditional on what it read, so two changes never share a version), stamps every
 * shard (a newer stamp already there stands), brings the counter shards within the new shares, and only
 * then writes the limit the API and the CLI show. A change that fails part way (a stamp timing out)
 * shows nothing new and puts the shown limit back on the shards it reached (another version), so no
 * shard enforces terms nobody sees; the caller gets the error (500) and may save again. Once it
 * returns, every accept uses the new limit.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { spendPeriodOf } from '../core/spend-limit';
import { type AuditInput, auditPut } from './audit';
import {
  cancellationReasons,
  isConditionalCheckFailed,
  isRetryable,
  lostCondition,
  type RetryingStoreContext,
  withRetry,
} from './errors';
import { accountKeys } from './keys';
import { ACCOUNT_BUDGET, accountBudget, readSpent, rebalanceSpendCounters } from './spend';
import { TABLE } from './table';
import * as keys from './task-keys';
import { transact } from './transaction';

/** The account's limit as the API and the CLI show it; null when there is none. */
export interface AccountSpendLimit {
  credits: number;
  period: 'month';
  /** Credits debited this UTC month, less refunds, since the limit was first set. */
  spent: number;
  resetsAt: string;
}

/** The setting: the limit shown (`credits`, `version`) and the highest version handed out (`issued`). */
async function readSetting(
  ctx: RetryingStoreContext,
  userId: string,
): Promise<{ version: number; credits: number | undefined; issued: number }> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({ TableName: ctx.tableName, Key: accountKeys.accountSpendLimit(userId), ConsistentRead: true }),
      ),
    ctx.retry,
  );
  const version = typeof out.Item?.version === 'number' ? out.Item.version : 0;
  const pending = typeof out.Item?.pendingVersion === 'number' ? out.Item.pendingVersion : 0;
  const credits = out.Item?.credits;
  return { version, credits: typeof credits === 'number' ? credits : undefined, issued: Math.max(version, pending) };
}

/** The account's monthly limit with what it spent this month, or null. One or two GetItems. */
export async function getAccountSpendLimit(
  ctx: RetryingStoreContext,
  userId: string,
  now: Date,
): Promise<AccountSpendLimit | null> {
  const { credits } = await readSetting(ctx, userId);
  if (credits === undefined) return null;
  const spent = await readSpent(ctx, userId, accountBudget(credits), now);
  const resetsAt = spendPeriodOf('month', now).resetsAt ?? now;
  return { credits, period: 'month', spent, resetsAt: resetsAt.toISOString() };
}

/** Stamps version `version` of the limit on every balance shard of `userId`; a newer stamp stands. */
async function stampShards(
  ctx: RetryingStoreContext,
  input: { userId: string; version: number; credits: number | undefined },
): Promise<void> {
  const retry = { ...ctx.retry, maxAttempts: Math.max(ctx.retry?.maxAttempts ?? 0, 20) };
  const stamp = async (shard: number) => {
    try {
      await withRetry(
        () =>
          ctx.doc.send(
            new UpdateCommand({
              TableName: ctx.tableName,
              Key: keys.balanceShard(input.userId, shard),
              UpdateExpression:
                input.credits === undefined
                  ? 'SET #version = :version, #userId = :userId REMOVE #credits'
                  : 'SET #version = :version, #userId = :userId, #credits = :credits',
              ConditionExpression: 'attribute_not_exists(#version) OR #version < :version',
              ExpressionAttributeNames: {
                '#version': 'acctLimitVersion',
                '#credits': 'acctLimitCredits',
                '#userId': 'userId',
              },
              ExpressionAttributeValues: {
                ':version': input.version,
                ':userId': input.userId,
                ...(input.credits === undefined ? {} : { ':credits': input.credits }),
              },
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

/**
 * Sets (`credits`) or removes (`null`) the account's monthly limit, audited, and stamps it on the
 * balance shards; from its return on, every accept is judged by it, and not before it is shown (see
 * above). Only accepts that hold a limit add to the month's counter (`KEYSPEND#ACCOUNT#<month>`), so
 * what counts is spending from the moment a limit is set, as for a key's limit (a limit removed and
 * set again keeps what was counted).
 */
export async function setAccountSpendLimit(
  ctx: RetryingStoreContext,
  input: { userId: string; credits: number | null; now: Date; audit?: Omit<AuditInput, 'details'> },
): Promise<AccountSpendLimit | null> {
  const credits = input.credits ?? undefined;
  const version = await reserveVersion(ctx, input.userId, input.now);
  try {
    await enforce(ctx, { userId: input.userId, version, credits, now: input.now });
  } catch (error) {
    // Part way: the shards reached carry terms nobody is shown. Put the shown ones back on every shard
    // (best effort: when this fails too, the next save stamps over both).
    await restoreShown(ctx, input.userId, input.now).catch(() => undefined);
    throw error;
  }
  const details = { credits: input.credits ?? 'none', budget: ACCOUNT_BUDGET };
  await show(ctx, {
    userId: input.userId,
    version,
    credits,
    now: input.now,
    ...(input.audit ? { audit: { ...input.audit, details } } : {}),
  });
  return getAccountSpendLimit(ctx, input.userId, input.now);
}

/** Stamps `credits` as version `version` on every shard and fits the counter shards to its shares. */
async function enforce(
  ctx: RetryingStoreContext,
  input: { userId: string; version: number; credits: number | undefined; now: Date },
): Promise<void> {
  await stampShards(ctx, input);
  // The month's counter shards within the new limit's shares (a lowered limit shrinks them; store/spend.ts).
  if (input.credits !== undefined) {
    await rebalanceSpendCounters(ctx, { userId: input.userId, limit: accountBudget(input.credits), now: input.now });
  }
}

/** Stamps the limit shown now on every shard, under a version of its own, and records that version. */
async function restoreShown(ctx: RetryingStoreContext, userId: string, now: Date): Promise<void> {
  const version = await reserveVersion(ctx, userId, now);
  const { credits } = await readSetting(ctx, userId);
  await enforce(ctx, { userId, version, credits, now });
  await show(ctx, { userId, version, credits, now });
}

/** The next version, reserved on the item (`pendingVersion`) without changing what it shows. */
async function reserveVersion(ctx: RetryingStoreContext, userId: string, now: Date): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const current = await readSetting(ctx, userId);
    const version = current.issued + 1;
    try {
      await ctx.doc.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: accountKeys.accountSpendLimit(userId),
          UpdateExpression: 'SET #pending = :version, #userId = :userId, #updatedAt = :now',
          ConditionExpression: 'attribute_not_exists(#pending) OR #pending < :version',
          ExpressionAttributeNames: { '#pending': 'pendingVersion', '#userId': 'userId', '#updatedAt': 'updatedAt' },
          ExpressionAttributeValues: { ':version': version, ':userId': userId, ':now': now.toISOString() },
        }),
      );
      return version;
    } catch (error) {
      // Another change reserved it since the read: read again and take the next one.
      const lost = isConditionalCheckFailed(error) || isRetryable(error);
      if (lost && attempt < 5) continue;
      throw error;
    }
  }
}

/**
 * Shows `credits` as version `version`, once every shard enforces it; a newer version already shown
 * stands (a later change finished first). Audited in the same transaction.
 */
async function show(
  ctx: RetryingStoreContext,
  input: { userId: string; version: number; credits: number | undefined; now: Date; audit?: AuditInput },
): Promise<void> {
  const update = {
    TableName: ctx.tableName,
    Key: accountKeys.accountSpendLimit(input.userId),
    UpdateExpression:
      input.credits === undefined
        ? 'SET #version = :version, #updatedAt = :now REMOVE #credits'
        : 'SET #version = :version, #updatedAt = :now, #credits = :credits',
    ConditionExpression: 'attribute_not_exists(#version) OR #version < :version',
    ExpressionAttributeNames: { '#version': 'version', '#credits': 'credits', '#updatedAt': 'updatedAt' },
    ExpressionAttributeValues: {
      ':version': input.version,
      ':now': input.now.toISOString(),
      ...(input.credits === undefined ? {} : { ':credits': input.credits }),
    },
  };
  try {
    await transact(
      ctx,
      [{ Update: update }, ...(input.audit ? [auditPut(ctx, input.userId, input.audit, input.now)] : [])],
      ctx.retry,
    );
  } catch (error) {
    if (!(cancellationReasons(error)?.[0]?.Code === 'ConditionalCheckFailed')) throw error;
  }
}
