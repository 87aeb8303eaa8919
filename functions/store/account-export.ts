/**
 * Reading an account's own items for its export (lifecycle/account-export.ts): one Query of the
 * account's partition per call, on one sort-key prefix, in sort-key order, after a given sort key.
 * The partition is always the caller's own, so no cursor can reach another account's items.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as conditions from './condition-fragments';
import { withKeyCondition } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { USER } from './keys';
import { TABLE } from './table';

/** Up to `limit` items of the account whose sort key starts with `prefix`, after `afterSortKey`. */
export async function accountItemsAfter(
  ctx: RetryingStoreContext,
  input: { userId: string; prefix: string; afterSortKey?: string; limit: number },
): Promise<{ items: Record<string, unknown>[]; more: boolean }> {
  const pk = `${USER}${input.userId}`;
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          ...withKeyCondition({}, conditions.partitionIs(pk), conditions.sortKeyBeginsWith(input.prefix)),
          Limit: input.limit,
          // Closing lists the tasks right after ending the credentials: a task accepted just before must be seen.
          ConsistentRead: true,
          ...(input.afterSortKey
            ? { ExclusiveStartKey: { [TABLE.partitionKey]: pk, [TABLE.sortKey]: input.afterSortKey } }
            : {}),
        }),
      ),
    ctx.retry,
  );
  return { items: out.Items ?? [], more: out.LastEvaluatedKey !== undefined };
}
