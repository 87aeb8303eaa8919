/**
 * The account-wide monthly spend limit (docs/api/spend-limits-and-usage.md#spend-limits): its items and reads
 * here, off the request path; a change is composed in money/account-limit.ts; enforced by the accept
 * (money/accept.ts) through what it learns from the balance shards.
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
import * as conditions from './condition-fragments';
import { update, updateParams } from './conditions';
import { isConditionalCheckFailed, isRetryable, lostCondition, type RetryingStoreContext, withRetry } from './errors';
import { accountKeys } from './keys';
import { accountBudget, readSpent } from './spend';
import { TABLE } from './table';
import * as keys from './task-keys';
import type { TransactItem } from './transaction';

/** The account's limit as the API and the CLI show it; null when there is none. */
export interface AccountSpendLimit {
  credits: number;
  period: 'month';
  /** Credits debited this UTC month, less refunds, since the limit was first set. */
  spent: number;
  resetsAt: string;
}

/** The setting: the limit shown (`credits`, `version`) and the highest version handed out (`issued`). */
export async function readAccountLimitSetting(
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
  const { credits } = await readAccountLimitSetting(ctx, userId);
  if (credits === undefined) return null;
  const spent = await readSpent(ctx, userId, accountBudget(credits), now);
  const resetsAt = spendPeriodOf('month', now).resetsAt ?? now;
  return { credits, period: 'month', spent, resetsAt: resetsAt.toISOString() };
}

/** Stamps version `version` of the limit on every balance shard of `userId`; a newer stamp stands. */
export async function stampAccountLimit(
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
              ...updateParams(
                update({
                  set: {
                    acctLimitVersion: input.version,
                    userId: input.userId,
                    ...(input.credits === undefined ? {} : { acctLimitCredits: input.credits }),
                  },
                  remove: input.credits === undefined ? ['acctLimitCredits'] : [],
                }),
                conditions.accountLimitStampOlderThan(input.version),
              ),
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

/** The next version, reserved on the item (`pendingVersion`) without changing what it shows. */
export async function reserveAccountLimitVersion(
  ctx: RetryingStoreContext,
  userId: string,
  now: Date,
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const current = await readAccountLimitSetting(ctx, userId);
    const version = current.issued + 1;
    try {
      await ctx.doc.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: accountKeys.accountSpendLimit(userId),
          ...updateParams(
            update({ set: { pendingVersion: version, userId, updatedAt: now.toISOString() } }),
            conditions.limitReservationBelow(version),
          ),
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
 * The update that shows `credits` (undefined: none) as version `version`, on the condition that no newer
 * version is shown already (a later change finished first): once every shard enforces it.
 */
export function shownLimitUpdate(
  ctx: RetryingStoreContext,
  input: { userId: string; version: number; credits: number | undefined; now: Date },
): TransactItem {
  return {
    Update: {
      TableName: ctx.tableName,
      Key: accountKeys.accountSpendLimit(input.userId),
      ...updateParams(
        update({
          set: {
            version: input.version,
            updatedAt: input.now.toISOString(),
            ...(input.credits === undefined ? {} : { credits: input.credits }),
          },
          remove: input.credits === undefined ? ['credits'] : [],
        }),
        conditions.limitShownOlderThan(input.version),
      ),
    },
  };
}
