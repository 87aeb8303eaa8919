/**
 * The account's quota of open uploads (`USER#<id>` / `UPLOADCOUNT`: `open`), exact under races as the
 * key cap is (store/key-count.ts):
 * - an upload made by POST /api/ai/uploads is written with `counted: true` in the same transaction that
 *   adds 1 to `open`, on the condition that `open` is below the quota, so two racing uploads cannot both
 *   take the last place;
 * - uploads end by expiring, which writes nothing (DynamoDB's TTL removes the record later, by up to
 *   days), so when an upload finds no room the count is taken again from the records: the counted ones
 *   not yet expired, set on the condition that `open` is still what was read (an upload committing in
 *   between fails it, and the count is taken again).
 * Inline `data:` images of a submit are not counted: they exist only for an accepted task, paid for.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { UploadQuotaError } from '../core/uploads';
import * as conditions from './condition-fragments';
import { conditionParams, update, updateParams, withKeyCondition } from './conditions';
import { cancellationReasons, isConditionalCheckFailed, type RetryingStoreContext, withRetry } from './errors';
import { TABLE } from './table';
import { transact } from './transaction';
import { type UploadRecord, uploadItem } from './uploads';

function countKey(userId: string) {
  return { [TABLE.partitionKey]: `USER#${userId}`, [TABLE.sortKey]: 'UPLOADCOUNT' };
}

/** Recounts before giving up: a recount lost to racing uploads is taken again, a few times. */
const RECOUNTS = 3;

/**
 * Writes a new upload record counted against the account's quota of `maxOpen` open uploads.
 * @throws UploadQuotaError when `maxOpen` uploads of the account are open (nothing written)
 */
export async function putCountedUpload(
  ctx: RetryingStoreContext,
  record: UploadRecord,
  input: { maxOpen: number; now: Date },
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await transact(
        ctx,
        [
          {
            Put: {
              TableName: ctx.tableName,
              Item: { ...uploadItem(record), counted: true },
              ...conditionParams(conditions.itemIsNew()),
            },
          },
          {
            Update: {
              TableName: ctx.tableName,
              Key: countKey(record.userId),
              ...updateParams(update({ add: { open: 1 } }), conditions.openUploadsBelow(input.maxOpen)),
            },
          },
        ],
        ctx.retry,
      );
      return;
    } catch (error) {
      if (cancellationReasons(error)?.[1]?.Code !== 'ConditionalCheckFailed') throw error;
      if (attempt >= RECOUNTS || !(await recount(ctx, record.userId, input.now))) {
        throw new UploadQuotaError(input.maxOpen);
      }
    }
  }
}

/** Sets `open` to the counted uploads not yet expired, when fewer; true when that freed a place. */
async function recount(ctx: RetryingStoreContext, userId: string, now: Date): Promise<boolean> {
  const count = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          ...withKeyCondition({}, conditions.partitionIs(`USER#${userId}`), conditions.sortKeyIs('UPLOADCOUNT')),
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  const open = Number(count.Items?.[0]?.open ?? 0);
  let live = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            FilterExpression: '#counted = :yes AND #expiresAt > :now',
            ...withKeyCondition(
              {
                ExpressionAttributeNames: { '#counted': 'counted', '#expiresAt': 'expiresAt' },
                ExpressionAttributeValues: { ':yes': true, ':now': now.toISOString() },
              },
              conditions.partitionIs(`USER#${userId}`),
              conditions.sortKeyBeginsWith('UPLOAD#'),
            ),
            Select: 'COUNT',
            ConsistentRead: true,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    live += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  if (live >= open) return false;
  try {
    await ctx.doc.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: countKey(userId),
        ...updateParams(update({ set: { open: live } }), conditions.openUploadsAre(open)),
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
  }
  // Either this recount freed places or a racing one changed the count: the upload tries again.
  return true;
}
