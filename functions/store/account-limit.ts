/**
 * The account-wide monthly spend limit (docs/api/spend-limits-and-usage.md#spend-limits): set and read here, off the
 * request
 * path; enforced by the accept (store/tasks.ts) through what it learns from the balance shards.
 *
 * The limit lives in two places. `USER#<id>` / `SPENDLIMIT` holds it as set, with a version that grows
 * with every change. Each of the 32 balance shards carries a stamp of it (`acctLimitVersion`,
 * `acctLimitCredits`): every accept debits a shard anyway, and states in that debit's condition the
 * version it holds (store/spend.ts), so an accept holding an older view fails, learns the stamped
 * limit from the shard, and tries again, at no cost to accounts that never set one. A change writes the
 * item first (conditional on the version it read: two changes cannot both win), then stamps every
 * shard (a newer stamp already there stands). Once it returns, every accept uses the new limit.
 */
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { spendPeriodOf } from '../core/spend-limit';
import { type AuditInput, auditPut } from './audit';
import {
  cancellationReasons,
  isConditionalCheckFailed,
  lostCondition,
  type RetryingStoreContext,
  withRetry,
} from './errors';
import { accountKeys } from './keys';
import { ACCOUNT_BUDGET, accountBudget, readSpent, rebalanceSpendCounters } from './spend';
import { TABLE } from './table';
import * as keys from './task-keys';

/** The account's limit as the API and the CLI show it; null when there is none. */
export interface AccountSpendLimit {
  credits: number;
  period: 'month';
  /** Credits debited this UTC month, less refunds, since the limit was first set. */
  spent: number;
  resetsAt: string;
}

async function readSetting(
  ctx: RetryingStoreContext,
  userId: string,
): Promise<{ version: number; credits: number | undefined }> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({ TableName: ctx.tableName, Key: accountKeys.accountSpendLimit(userId), ConsistentRead: true }),
      ),
    ctx.retry,
  );
  const version = out.Item?.version;
  const credits = out.Item?.credits;
  return {
    version: typeof version === 'number' ? version : 0,
    credits: typeof credits === 'number' ? credits : undefined,
  };
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
 * balance shards; from its return on, every accept is judged by it. Only accepts that hold a limit
 * add to the month's counter (`KEYSPEND#ACCOUNT#<month>`), so what counts is spending from the moment
 * a limit is set, as for a key's limit (a limit removed and set again keeps what was counted).
 */
export async function setAccountSpendLimit(
  ctx: RetryingStoreContext,
  input: { userId: string; credits: number | null; now: Date; audit?: Omit<AuditInput, 'details'> },
): Promise<AccountSpendLimit | null> {
  for (let attempt = 1; ; attempt++) {
    const current = await readSetting(ctx, input.userId);
    const version = current.version + 1;
    const item = {
      ...accountKeys.accountSpendLimit(input.userId),
      userId: input.userId,
      version,
      updatedAt: input.now.toISOString(),
      ...(input.credits === null ? {} : { credits: input.credits }),
    };
    const put = {
      TableName: ctx.tableName,
      Item: item,
      ConditionExpression: 'attribute_not_exists(#version) OR #version = :read',
      ExpressionAttributeNames: { '#version': 'version' },
      ExpressionAttributeValues: { ':read': current.version },
    };
    try {
      const details = { credits: input.credits ?? 'none', budget: ACCOUNT_BUDGET };
      await (input.audit
        ? ctx.doc.send(
            new TransactWriteCommand({
              TransactItems: [{ Put: put }, auditPut(ctx, input.userId, { ...input.audit, details }, input.now)],
            }),
          )
        : ctx.doc.send(new PutCommand(put)));
    } catch (error) {
      // Another change won since the read: read again and apply this one after it.
      const lost = isConditionalCheckFailed(error) || cancellationReasons(error) !== undefined;
      if (lost && attempt < 5) continue;
      throw error;
    }
    await stampShards(ctx, { userId: input.userId, version, credits: input.credits ?? undefined });
    // The month's counter shards within the new limit's shares (a lowered limit shrinks them; store/spend.ts).
    if (input.credits !== null) {
      await rebalanceSpendCounters(ctx, { userId: input.userId, limit: accountBudget(input.credits), now: input.now });
    }
    return getAccountSpendLimit(ctx, input.userId, input.now);
  }
}
