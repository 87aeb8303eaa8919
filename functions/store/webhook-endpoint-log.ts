/**
 * An endpoint's delivery log (GET /api/webhooks/{id}/deliveries): its deliveries newest first with their
 * attempts, and one delivery by id. Reading only; the deliveries are written by
 * store/webhook-endpoints.ts and the webhook worker.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ENDPOINT_DELIVERY_PREFIX, ENDPOINT_ID_PREFIX } from '../core/webhook-endpoints';
import { attr } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { webhookKeys } from './keys';
import { TABLE } from './table';
import type { EndpointDelivery } from './webhook-endpoints';
import { type DeliveryState, type WebhookAttempt, withoutKeys } from './webhooks';

export interface LoggedDelivery {
  delivery: EndpointDelivery;
  attempts: WebhookAttempt[];
}

/** The sort key shape of an endpoint's deliveries (a cursor must be one of them). */
export function endpointDeliverySortKeyShape(endpointId: string): RegExp {
  const hex = endpointId.slice(ENDPOINT_ID_PREFIX.length);
  return new RegExp(`^WEBHOOK#${ENDPOINT_DELIVERY_PREFIX}${hex}_[0-9]{13}_[0-9a-f]{32}$`);
}

/**
 * A page of an endpoint's deliveries, newest first, each with its attempts: one Query over the
 * endpoint's key range read backwards (a delivery's attempts sort right after it, so they come just
 * before it), filtered here by state and event type. `next` is the sort key of the last delivery
 * returned, when more may follow.
 */
export async function listEndpointDeliveries(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    endpointId: string;
    limit: number;
    afterSortKey?: string;
    state?: DeliveryState;
    eventType?: string;
  },
): Promise<{ items: LoggedDelivery[]; nextSortKey?: string }> {
  const hex = input.endpointId.slice(ENDPOINT_ID_PREFIX.length);
  const low = `WEBHOOK#${ENDPOINT_DELIVERY_PREFIX}${hex}_`;
  const high = `${low}~`;
  const items: LoggedDelivery[] = [];
  let start: Record<string, unknown> | undefined = input.afterSortKey
    ? { [TABLE.partitionKey]: webhookKeys.delivery(input.userId, '').PK, [TABLE.sortKey]: input.afterSortKey }
    : undefined;
  let attempts: WebhookAttempt[] = [];
  for (;;) {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            KeyConditionExpression: `${attr(TABLE.partitionKey)} = :pk AND ${attr(TABLE.sortKey)} BETWEEN :low AND :high`,
            ExpressionAttributeNames: {
              [attr(TABLE.partitionKey)]: TABLE.partitionKey,
              [attr(TABLE.sortKey)]: TABLE.sortKey,
            },
            ExpressionAttributeValues: { ':pk': webhookKeys.delivery(input.userId, '').PK, ':low': low, ':high': high },
            ScanIndexForward: false,
            ConsistentRead: true,
            Limit: 200,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    for (const item of out.Items ?? []) {
      const sk = String(item[TABLE.sortKey]);
      if (sk.includes('#ATTEMPT#')) {
        const {
          userId: _u,
          taskId: _t,
          eventId: _e,
          ...attempt
        } = withoutKeys<WebhookAttempt & { userId: string; taskId?: string; eventId?: string }>(item);
        attempts.unshift(attempt);
        continue;
      }
      const delivery = withoutKeys<EndpointDelivery>(item);
      // Attempts read belong to this delivery (they sort right after it): kept only for it.
      const own = attempts.filter((attempt) => attempt.attempt >= 1);
      attempts = [];
      if (input.state && delivery.deliveryState !== input.state) continue;
      if (input.eventType && delivery.eventType !== input.eventType) continue;
      items.push({ delivery, attempts: own.sort((a, b) => a.attempt - b.attempt) });
      if (items.length === input.limit) return { items, nextSortKey: sk };
    }
    start = out.LastEvaluatedKey;
    if (!start) return { items };
  }
}

/** One endpoint delivery (consistent read), or undefined. */
export async function getEndpointDelivery(
  ctx: RetryingStoreContext,
  userId: string,
  deliveryId: string,
): Promise<EndpointDelivery | undefined> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: webhookKeys.delivery(userId, deliveryId),
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  return out.Item && typeof out.Item.deliveryId === 'string' ? withoutKeys<EndpointDelivery>(out.Item) : undefined;
}
