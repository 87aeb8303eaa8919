/**
 * API Gateway keys that still need attention, so that none is left behind by a crash or a refusal:
 * `USER#<id>` / `GATEWAYKEY#<keyId>` with `keyId`, `userId` and an entry in the due index (`GSI1`,
 * partition `GATEWAYKEYDUE`, sort key `<due time>#<keyId>`). Written before a key's API Gateway key is
 * made (due a few minutes later, in case the issuing never finishes), moved to the key's expiry once the
 * key is written, and to "now" when the key is revoked or replaced; the sweeper reconciles what is due
 * (functions/auth/gateway-keys.ts): a key that ended or was never written loses its API Gateway key, an
 * active one is enrolled (again). The item is deleted once nothing is left to do.
 */
import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { StoreContext } from './client';
import * as conditions from './condition-fragments';
import { attr, conditionParams, withKeyCondition } from './conditions';
import { isConditionalCheckFailed, withRetry } from './errors';
import { accountKeys, GATEWAY_KEY_DUE, userIdFromPk } from './keys';
import { TABLE } from './table';

export interface GatewayKeyRef {
  userId: string;
  keyId: string;
}

export interface DueGatewayKey extends GatewayKeyRef {
  /** The due-index sort key as read: a later change only applies while it is still this. */
  dueKey: string;
}

/** The item's due-index sort key is still `dueKey` (nobody rescheduled it since it was read). */
const stillDue = (dueKey: string) => ({
  expression: `${attr(TABLE.pendingIndex.sortKey)} = :gatewayDueKey`,
  names: { [attr(TABLE.pendingIndex.sortKey)]: TABLE.pendingIndex.sortKey },
  values: { ':gatewayDueKey': dueKey },
});

/**
 * Schedules the key's API Gateway key for a look at `due` (replacing any earlier schedule); with `ifDueKey`
 * only while the schedule is still the one read (the sweeper's reschedule).
 */
export async function scheduleGatewayKey(
  ctx: StoreContext,
  input: GatewayKeyRef & { due: Date; ifDueKey?: string },
): Promise<boolean> {
  try {
    await withRetry(() =>
      ctx.doc.send(
        new PutCommand({
          TableName: ctx.tableName,
          Item: {
            ...accountKeys.gatewayKey(input.userId, input.keyId),
            ...accountKeys.gatewayKeyDue(input.keyId, input.due.toISOString()),
            userId: input.userId,
            keyId: input.keyId,
          },
          ...(input.ifDueKey === undefined ? {} : conditionParams(stillDue(input.ifDueKey))),
        }),
      ),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/** Nothing is left to do for the key's API Gateway key; with `ifDueKey` only while it is still that schedule. */
export async function clearGatewayKey(
  ctx: StoreContext,
  input: GatewayKeyRef & { ifDueKey?: string },
): Promise<boolean> {
  try {
    await withRetry(() =>
      ctx.doc.send(
        new DeleteCommand({
          TableName: ctx.tableName,
          Key: accountKeys.gatewayKey(input.userId, input.keyId),
          ...(input.ifDueKey === undefined ? {} : conditionParams(stillDue(input.ifDueKey))),
        }),
      ),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/** Up to `limit` API Gateway keys due by `now`, oldest first (one Query of the due index). */
export async function dueGatewayKeys(ctx: StoreContext, now: Date, limit = 100): Promise<DueGatewayKey[]> {
  const index = TABLE.pendingIndex;
  const out = await withRetry(() =>
    ctx.doc.send(
      new QueryCommand({
        TableName: ctx.tableName,
        IndexName: index.name,
        // `<time>#<keyId>` sorts by time; '$' follows '#', so this takes every key due up to now.
        ...withKeyCondition(
          {},
          conditions.partitionIs(GATEWAY_KEY_DUE, index.partitionKey),
          conditions.sortKeyBefore(`${now.toISOString()}$`, index.sortKey),
        ),
        ScanIndexForward: true,
        Limit: limit,
      }),
    ),
  );
  const prefix = accountKeys.gatewayKey('', '').SK;
  return (out.Items ?? []).flatMap((item) => {
    const pk = String(item[TABLE.partitionKey]);
    const sk = String(item[TABLE.sortKey]);
    if (!sk.startsWith(prefix)) return [];
    return [{ userId: userIdFromPk(pk), keyId: sk.slice(prefix.length), dueKey: String(item[index.sortKey]) }];
  });
}
