/**
 * The account's count of open deliveries (`webhookKeys.openDeliveries`: `sending` or `waiting` for a
 * retry), the counter the bound on open deliveries is enforced on. A delivery takes a place in the
 * transaction that opens it (or opens it again for a redelivery) and gives it back in the one that
 * records its last attempt. The same item counts the deliveries queued past the bound
 * (`queuedDeliveries`); those moves are store/webhook-queue.ts's.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { deliveryConditions, type Expr, update, updateParams } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { webhookKeys } from './keys';
import type { TransactItem } from './transaction';
import * as webhookConditions from './webhook-condition-fragments';

/** The account's open deliveries as counted (0 when it never had one). */
export async function countOpenDeliveries(ctx: RetryingStoreContext, userId: string): Promise<number> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({ TableName: ctx.tableName, Key: webhookKeys.openDeliveries(userId), ConsistentRead: true }),
      ),
    ctx.retry,
  );
  const open = out.Item?.openDeliveries;
  return typeof open === 'number' ? open : 0;
}

/**
 * The counter's part of opening a delivery straight away: one more open, on the condition that the
 * account is below `maxOpen` with none queued (`openNow`). It stores the bound too, for the sweeper,
 * which opens what a lost worker record left (and has no setting).
 */
export function openNowCounterUpdate(
  tableName: string,
  input: { userId: string; maxOpen: number; now: string },
): TransactItem {
  return takeOpenPlace(tableName, input, { maxOpen: input.maxOpen }, webhookConditions.openNow(input.maxOpen));
}

/**
 * The counter's part of opening an ended delivery again (a redelivery): one more open, on the condition
 * that the account is below `maxOpen` (deliveries queued ahead do not hold it back).
 */
export function reopenCounterUpdate(
  tableName: string,
  input: { userId: string; maxOpen: number; now: string },
): TransactItem {
  return takeOpenPlace(tableName, input, {}, deliveryConditions.openBelow(input.maxOpen));
}

function takeOpenPlace(
  tableName: string,
  input: { userId: string; now: string },
  alsoSet: Record<string, unknown>,
  condition: Expr,
): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: webhookKeys.openDeliveries(input.userId),
      ...updateParams(
        update({ set: { userId: input.userId, updatedAt: input.now, ...alsoSet }, add: { openDeliveries: 1 } }),
        condition,
      ),
    },
  };
}

/** The counter's part of recording a delivery's last attempt (delivered or given up): its place is free. */
export function releaseOpenPlaceUpdate(tableName: string, input: { userId: string; now: string }): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: webhookKeys.openDeliveries(input.userId),
      ...updateParams(update({ set: { updatedAt: input.now }, add: { openDeliveries: -1 } })),
    },
  };
}
