/**
 * Credit accounts: a user's balance is the sum of its balance shards (balance.ts); every change comes
 * with a ledger entry in the same transaction (see ledger.ts for the audit; the grant is money/grant.ts).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { readShards, totalOf } from './balance';
import * as conditions from './condition-fragments';
import { attr, namesOf, withKeyCondition } from './conditions';
import type { RetryingStoreContext } from './errors';
import { TABLE } from './table';
import * as keys from './task-keys';

/**
 * The user's balance: the sum of the balance shards (one consistent Query); 0 when the user has no
 * account.
 */
export async function getBalance(ctx: RetryingStoreContext, userId: string): Promise<number> {
  return totalOf(await readShards(ctx, userId));
}

/**
 * Whether the user has anything at all: credits, a key, an invitation's account, a session. One Query
 * of at most one key-only item, so the operator CLI can tell "no such user" from "a balance of 0".
 */
export async function accountExists(ctx: RetryingStoreContext, userId: string): Promise<boolean> {
  const out = await ctx.doc.send(
    new QueryCommand({
      TableName: ctx.tableName,
      ...withKeyCondition(
        { ExpressionAttributeNames: namesOf(TABLE.partitionKey) },
        conditions.partitionIs(keys.account(userId).PK),
      ),
      ProjectionExpression: attr(TABLE.partitionKey),
      Limit: 1,
    }),
  );
  return (out.Count ?? 0) > 0;
}
