/**
 * An account's own request limits (`USER#<id>` / `RATEPLAN`), set by the operator CLI. Accounts without
 * one get the stack's default plan. Deployed, API Gateway enforces the plan (the CLI also writes it into
 * the account's usage plan); this item is the record of what was set, and what the local gateway
 * enforces. Each change writes an audit entry in the same transaction.
 */
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { RatePlan } from '../core/rate-plan';
import { type AuditActor, auditPut } from './audit';
import type { StoreContext } from './client';
import { accountKeys } from './keys';

/** An account's own plan, and (deployed) the API Gateway usage plan that enforces it. */
export interface AccountRatePlan extends RatePlan {
  usagePlanId?: string;
}

/** The account's own plan, or undefined when it follows the default. */
export async function getRatePlan(ctx: StoreContext, userId: string): Promise<AccountRatePlan | undefined> {
  const out = await ctx.doc.send(
    new GetCommand({ TableName: ctx.tableName, Key: accountKeys.ratePlan(userId), ConsistentRead: true }),
  );
  const item = out.Item;
  if (!item) return undefined;
  const plan: AccountRatePlan = { ratePerSecond: Number(item.ratePerSecond), burst: Number(item.burst) };
  if (item.dailyQuota !== undefined) plan.dailyQuota = Number(item.dailyQuota);
  if (typeof item.usagePlanId === 'string') plan.usagePlanId = item.usagePlanId;
  return plan;
}

/** Gives the account its own plan (replacing any earlier one). The caller validated it (`ratePlanProblems`). */
export async function putRatePlan(
  ctx: StoreContext,
  input: { userId: string; plan: AccountRatePlan; actor: AuditActor; now?: Date },
): Promise<void> {
  const now = input.now ?? new Date();
  const { ratePerSecond, burst, dailyQuota, usagePlanId } = input.plan;
  await ctx.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: ctx.tableName,
            Item: {
              ...accountKeys.ratePlan(input.userId),
              ratePerSecond,
              burst,
              ...(dailyQuota === undefined ? {} : { dailyQuota }),
              ...(usagePlanId === undefined ? {} : { usagePlanId }),
              updatedAt: now.toISOString(),
            },
          },
        },
        auditPut(
          ctx,
          input.userId,
          {
            action: 'limits.set',
            actor: input.actor,
            details: { ratePerSecond, burst, ...(dailyQuota === undefined ? {} : { dailyQuota }) },
          },
          now,
        ),
      ],
    }),
  );
}

/** Puts the account back on the default plan. */
export async function deleteRatePlan(
  ctx: StoreContext,
  input: { userId: string; actor: AuditActor; now?: Date },
): Promise<void> {
  const now = input.now ?? new Date();
  await ctx.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        { Delete: { TableName: ctx.tableName, Key: accountKeys.ratePlan(input.userId) } },
        auditPut(ctx, input.userId, { action: 'limits.reset', actor: input.actor }, now),
      ],
    }),
  );
}
