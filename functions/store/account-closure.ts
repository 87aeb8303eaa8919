/**
 * An account's closure record (`USER#<id>` / `CLOSED`): when the owner (or an operator) closed it.
 * Sign-in reads it and refuses a closed account (functions/auth-callback); closing again keeps the first
 * time. Written with the closure's audit entry in one transaction.
 */
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { type AuditInput, auditPut } from './audit';
import * as conditions from './condition-fragments';
import { conditionParams } from './conditions';
import { isConditionalCheckFailed, type RetryingStoreContext, withRetry } from './errors';
import { USER } from './keys';

/** The closure record's key: beside the account's other items, so a sign-in reads it with one GetItem. */
function closureKey(userId: string) {
  return { PK: `${USER}${userId}`, SK: 'CLOSED' };
}

/** When the account was closed (ISO 8601), or undefined when it is open. */
export async function getClosedAt(ctx: RetryingStoreContext, userId: string): Promise<string | undefined> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: closureKey(userId), ConsistentRead: true })),
    ctx.retry,
  );
  return typeof out.Item?.closedAt === 'string' ? out.Item.closedAt : undefined;
}

/**
 * Records the closure (and its audit entry) unless it is recorded already.
 * @returns the closure's time: now, or the first closure's
 */
export async function recordClosure(
  ctx: RetryingStoreContext,
  input: { userId: string; now: Date; audit: AuditInput },
): Promise<{ closedAt: string; first: boolean }> {
  const closedAt = input.now.toISOString();
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: ctx.tableName,
                  Item: { ...closureKey(input.userId), userId: input.userId, closedAt },
                  ...conditionParams(conditions.itemIsNew()),
                },
              },
              auditPut(ctx, input.userId, input.audit, input.now),
            ],
          }),
        ),
      ctx.retry,
    );
    return { closedAt, first: true };
  } catch (error) {
    const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
    if (reasons?.[0]?.Code !== 'ConditionalCheckFailed' && !isConditionalCheckFailed(error)) throw error;
    return { closedAt: (await getClosedAt(ctx, input.userId)) ?? closedAt, first: false };
  }
}
