/**
 * Webhook deliveries in DynamoDB: one delivery per ended task or account event (keyed by the task's id,
 * or the event's `evt_...` id) or per endpoint and event (`dlv_...`, store/webhook-endpoints.ts), and
 * one item per attempt. This module holds their records and reads; the writes are split by what they
 * do: opening (store/webhook-delivery-opening.ts), the sweeper's due index and claims
 * (store/webhook-due-deliveries.ts), recording an attempt (store/webhook-attempts.ts), the account's
 * open-delivery counter (store/webhook-open-count.ts) and its queue past the bound
 * (store/webhook-queue.ts); the account's settings are store/webhook-settings.ts. A delivery moves
 * between states only by conditional writes, so a redelivered stream record, two workers or a worker
 * and the sweeper never record one attempt twice:
 *
 * - `sending`: an attempt is claimed (`claimId`). The write that claims it (creation, or the sweeper's
 *   claim) is what the table's stream hands to the webhook worker. Until the claim runs out
 *   (`leaseUntil`), it sits in the due index under that time, so a claim whose worker died is taken
 *   again by the sweeper.
 * - `waiting`: the last attempt failed; in the due index under the time of the next one.
 * - `delivered` or `failed` (the schedule is spent): out of the index, kept for 30 days.
 *
 * An account has at most `maxOpen` deliveries `sending` or `waiting` at once: a counter item
 * (`webhookKeys.openDeliveries`) goes up in the transaction that opens a delivery, on the condition
 * that it is below the bound and nothing is queued, and down in the one that records its last attempt.
 * A delivery over the bound waits `queued`, in order (store/webhook-queue.ts).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ACCOUNT_EVENT_ID_PREFIX, type AccountEventData } from '../core/account-events';
import type { WebhookEventType } from '../core/webhooks';
import { type RetryingStoreContext, withRetry } from './errors';
import { webhookKeys } from './keys';
import { queryAllWithPrefix } from './pages';
import { TABLE } from './table';

/** How long delivery and attempt records are kept after the delivery is created (TTL). */
export const WEBHOOK_RECORD_DAYS = 30;

export type DeliveryState = 'queued' | 'sending' | 'waiting' | 'delivered' | 'failed';

/** A task's webhook delivery, or an account event's (`eventId` and `data` in place of `taskId`). */
export interface WebhookDelivery {
  userId: string;
  /** The task whose end it announces; absent on an account event's delivery. */
  taskId?: string;
  /** An account event's id (`evt_...`): its delivery is keyed by it. */
  eventId?: string;
  /** An account event's `data`, as every attempt sends it. */
  data?: AccountEventData;
  /** `webhook-id`: the same on every attempt. */
  webhookId: string;
  /** The endpoint, fixed when the task ended (or the account event was seen). */
  url: string;
  eventType: WebhookEventType;
  /** When the task ended (ISO 8601): the payload's `timestamp`. */
  eventAt: string;
  deliveryState: DeliveryState;
  /** The claim of the attempt under way (`sending`). */
  claimId?: string;
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due (`waiting`) or the running claim runs out (`sending`), ISO 8601. */
  dueAt?: string;
  createdAt: string;
  updatedAt: string;
  deliveredAt?: string;
  gaveUpAt?: string;
  /** Counted in the account's open deliveries while `sending` or `waiting` (released when it ends). */
  countsOpen?: boolean;
  /** Why the delivery was never tried: the bound dropped it, before deliveries past it waited (old records). */
  dropReason?: string;
}

/** One recorded attempt. */
export interface WebhookAttempt {
  attempt: number;
  /** When it started (ISO 8601). */
  at: string;
  durationMs: number;
  statusCode?: number;
  error?: string;
}

/** What comes after an attempt. */
export type AfterAttempt = { state: 'delivered' } | { state: 'waiting'; dueAt: Date } | { state: 'failed' };

const KEY_ATTRIBUTES = [
  TABLE.partitionKey,
  TABLE.sortKey,
  TABLE.pendingIndex.partitionKey,
  TABLE.pendingIndex.sortKey,
  TABLE.ttlAttribute,
];

/** A webhook item (settings, delivery, attempt, endpoint) without its table keys, as callers see it. */
export function withoutKeys<T>(item: Record<string, unknown>): T {
  const record: Record<string, unknown> = { ...item };
  for (const name of KEY_ATTRIBUTES) delete record[name];
  return record as T;
}

/** The TTL attribute of a delivery or attempt written at `now`: kept `WEBHOOK_RECORD_DAYS`. */
export function webhookRecordTtl(now: Date): Record<string, number> {
  return { [TABLE.ttlAttribute]: Math.floor(now.getTime() / 1000) + WEBHOOK_RECORD_DAYS * 86_400 };
}

/** A task's delivery (consistent read), or undefined. */
export async function getDelivery(
  ctx: RetryingStoreContext,
  userId: string,
  taskId: string,
): Promise<WebhookDelivery | undefined> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: webhookKeys.delivery(userId, taskId),
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  return out.Item ? withoutKeys<WebhookDelivery>(out.Item) : undefined;
}

/** A task's delivery and its attempts, oldest first (consistent, one Query a page). */
export async function getDeliveryWithAttempts(
  ctx: RetryingStoreContext,
  userId: string,
  taskId: string,
): Promise<{ delivery?: WebhookDelivery; attempts: WebhookAttempt[] }> {
  const items = await queryAllWithPrefix(ctx, webhookKeys.deliveryPrefix(userId, taskId));
  const deliverySk = webhookKeys.delivery(userId, taskId).SK;
  let delivery: WebhookDelivery | undefined;
  const attempts: WebhookAttempt[] = [];
  for (const item of items) {
    const sk = String(item[TABLE.sortKey]);
    if (sk === deliverySk) delivery = withoutKeys<WebhookDelivery>(item);
    // Another task whose id starts with this one's would share the prefix: only this task's attempts.
    else if (sk.startsWith(`${deliverySk}#ATTEMPT#`)) {
      const {
        userId: _u,
        taskId: _t,
        eventId: _e,
        ...attempt
      } = withoutKeys<WebhookAttempt & { userId: string; taskId?: string; eventId?: string }>(item);
      attempts.push(attempt);
    }
  }
  return { ...(delivery ? { delivery } : {}), attempts };
}

/** The account's account-event deliveries (not their attempts), oldest first by id order (one Query per page). */
export async function listAccountEventDeliveries(
  ctx: RetryingStoreContext,
  userId: string,
): Promise<WebhookDelivery[]> {
  const items = await queryAllWithPrefix(ctx, webhookKeys.deliveryPrefix(userId, ACCOUNT_EVENT_ID_PREFIX));
  return items
    .filter((item) => !String(item[TABLE.sortKey]).includes('#ATTEMPT#'))
    .map((item) => withoutKeys<WebhookDelivery>(item));
}
