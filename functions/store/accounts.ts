/**
 * Credit accounts: one item per user holding `balance`; every change comes with a ledger entry in the
 * same transaction (see ledger.ts for the audit).
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { UsageError } from '../core/errors';
import { conditionParams, conditions, update, updateParams } from './conditions';
import { grantFailure, type RetryingStoreContext, withRetry } from './errors';
import { keys } from './keys';
import { ledgerEntryItem } from './ledger-entry';

/**
 * Adds `amount` credits to a user's account, creating the account if missing, in ONE
 * `TransactWriteItems` with the ledger entry (kind 'grant', delta +amount). The returned balance is
 * read right after (a second, consistent request): concurrent operations may have moved it already.
 * `amount` must be a positive whole number, else `UsageError`.
 */
export async function grantCredits(
  ctx: RetryingStoreContext,
  input: { userId: string; amount: number; grantId?: string; now?: Date },
): Promise<{ userId: string; balance: number }> {
  const { userId, amount } = input;
  if (!userId) throw new UsageError('userId must not be empty');
  if (!Number.isSafeInteger(amount) || amount <= 0) {
    throw new UsageError(`amount must be a positive whole number, got ${amount}`);
  }
  const grantId = input.grantId ?? randomUUID();
  const at = (input.now ?? new Date()).toISOString();
  const command = () =>
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: ctx.tableName,
            Key: keys.account(userId),
            ...updateParams(
              update({ add: { balance: amount }, set: { userId, updatedAt: at }, setIfMissing: { createdAt: at } }),
            ),
          },
        },
        {
          Put: {
            TableName: ctx.tableName,
            Item: ledgerEntryItem({ userId, kind: 'grant', delta: amount, at, grantId }),
            ...conditionParams(conditions.itemIsNew()),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ],
    });
  try {
    await withRetry(() => ctx.doc.send(command()), ctx.retry);
  } catch (error) {
    grantFailure(error, { ledger: 1, grantId });
  }
  return { userId, balance: await getBalance(ctx, userId) };
}

/** The user's balance (one consistent GetItem); 0 when the user has no account. */
export async function getBalance(ctx: RetryingStoreContext, userId: string): Promise<number> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: keys.account(userId),
          ConsistentRead: true,
          ProjectionExpression: '#balance',
          ExpressionAttributeNames: { '#balance': 'balance' },
        }),
      ),
    ctx.retry,
  );
  const balance = out.Item?.balance;
  return typeof balance === 'number' ? balance : 0;
}
