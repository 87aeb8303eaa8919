/**
 * Recording a webhook delivery's attempt: the attempt's item, the delivery's next state and, when the
 * delivery ends, its place in the account's open deliveries, in one transaction conditional on the
 * claim (store/webhooks.ts describes the states).
 */
import { isAccountEventId } from '../core/account-events';
import * as conditions from './condition-fragments';
import { conditionParams, deliveryConditions, update, updateParams } from './conditions';
import { attemptRecordLost, type RetryingStoreContext } from './errors';
import { webhookKeys } from './keys';
import { TABLE } from './table';
import { transact } from './transaction';
import { releaseOpenPlaceUpdate } from './webhook-open-count';
import { type AfterAttempt, type WebhookAttempt, webhookRecordTtl } from './webhooks';

/** What recording an attempt needs. */
export interface AttemptRecord {
  userId: string;
  /** The delivery's key: its task's id, or an account event's id (`evt_...`). */
  taskId: string;
  claimId: string;
  attempt: WebhookAttempt;
  next: AfterAttempt;
  now: Date;
  /** The delivery is counted in the account's open deliveries (`countsOpen`). */
  countsOpen?: boolean;
}

/** The delivery's change after an attempt: waiting in the due index for the next, or out of it for good. */
function deliveryAfter(input: AttemptRecord, now: string) {
  const { next } = input;
  if (next.state === 'waiting') {
    return update({
      set: {
        deliveryState: 'waiting',
        attempts: input.attempt.attempt,
        dueAt: next.dueAt.toISOString(),
        updatedAt: now,
        ...webhookKeys.due(input.taskId, next.dueAt.toISOString()),
      },
      remove: ['claimId'],
    });
  }
  return update({
    set: {
      deliveryState: next.state,
      attempts: input.attempt.attempt,
      updatedAt: now,
      ...(next.state === 'delivered' ? { deliveredAt: now } : { gaveUpAt: now }),
    },
    remove: ['claimId', 'dueAt', TABLE.pendingIndex.partitionKey, TABLE.pendingIndex.sortKey],
  });
}

/**
 * Records attempt `attempt.attempt` of the delivery claimed by `claimId`, and what comes next, in one
 * transaction: the attempt item and the delivery's new state. False (nothing written) when the claim
 * was lost meanwhile.
 */
export async function recordAttempt(ctx: RetryingStoreContext, input: AttemptRecord): Promise<boolean> {
  const now = input.now.toISOString();
  try {
    await transact(
      ctx,
      [
        {
          Put: {
            TableName: ctx.tableName,
            Item: {
              ...webhookKeys.attempt(input.userId, input.taskId, input.attempt.attempt),
              userId: input.userId,
              ...(isAccountEventId(input.taskId) ? { eventId: input.taskId } : { taskId: input.taskId }),
              ...input.attempt,
              ...webhookRecordTtl(input.now),
            },
            ...conditionParams(conditions.itemIsNew()),
          },
        },
        {
          Update: {
            TableName: ctx.tableName,
            Key: webhookKeys.delivery(input.userId, input.taskId),
            ...updateParams(deliveryAfter(input, now), deliveryConditions.claimedBy(input.claimId)),
          },
        },
        // Delivered or given up: no longer open, so the account may open another.
        ...(input.next.state !== 'waiting' && input.countsOpen
          ? [releaseOpenPlaceUpdate(ctx.tableName, { userId: input.userId, now })]
          : []),
      ],
      ctx.retry,
    );
    return true;
  } catch (error) {
    attemptRecordLost(error);
    return false;
  }
}
