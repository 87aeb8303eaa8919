/**
 * Webhook endpoints in DynamoDB (core/webhook-endpoints.ts): one item per endpoint with its sealed
 * signing secret (and, during a rotation's grace, the previous one), a counter the bound on endpoints
 * is enforced on, and their deliveries. An endpoint's delivery is a delivery item as a task's is
 * (store/webhooks.ts: the same states, claims, attempts, due index and open-delivery counter, so the
 * worker and the sweeper drive both), keyed by the delivery's id `dlv_<endpoint>_<time>_<event>`: one
 * Query lists an endpoint's deliveries newest first with their attempts, and an event opens at most
 * one delivery per endpoint.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AccountEventData } from '../core/account-events';
import type { TaskResource } from '../core/task';
import { OpenDeliveriesFullError, WebhookEndpointLimitError } from '../core/webhook-endpoint-errors';
import type { EndpointEventType } from '../core/webhook-endpoints';
import * as conditions from './condition-fragments';
import { conditionParams, update, updateParams } from './conditions';
import {
  cancellationReasons,
  isConditionalCheckFailed,
  lostCondition,
  type RetryingStoreContext,
  withRetry,
} from './errors';
import { webhookEndpointKeys, webhookKeys } from './keys';
import { queryAllWithPrefix } from './pages';
import type { TransactItem } from './transaction';
import * as webhookConditions from './webhook-condition-fragments';
import { type DeliveryOpened, openDeliveryRecord } from './webhook-delivery-opening';
import { reopenCounterUpdate } from './webhook-open-count';
import { type DeliveryState, withoutKeys } from './webhooks';

/** An endpoint as stored (the sealed secrets never leave the lifecycle layer). */
export interface WebhookEndpointRecord {
  userId: string;
  endpointId: string;
  url: string;
  /** The event types it takes; absent: all. */
  events?: string[];
  enabled: boolean;
  description?: string;
  /** The signing secret sealed by webhooks/secret-box.ts. */
  sealedSecret: string;
  secretCreatedAt: string;
  /** The secret before the last rotation, still signing until `previousSecretExpiresAt`. */
  previousSealedSecret?: string;
  previousSecretExpiresAt?: string;
  createdAt: string;
  updatedAt: string;
}

/** An endpoint's delivery (the fields store/webhooks.ts's worker paths read, and the endpoint's own). */
export interface EndpointDelivery {
  userId: string;
  deliveryId: string;
  endpointId: string;
  /** The event's id: the `webhook-id` of every attempt. */
  webhookId: string;
  eventType: EndpointEventType;
  eventAt: string;
  /** The task whose end it announces (read afresh at each attempt), or the event's data. */
  subjectTaskId?: string;
  data?: AccountEventData | TaskResource | Record<string, unknown>;
  url: string;
  deliveryState: DeliveryState;
  claimId?: string;
  attempts: number;
  dueAt?: string;
  createdAt: string;
  updatedAt: string;
  deliveredAt?: string;
  gaveUpAt?: string;
  countsOpen?: boolean;
  dropReason?: string;
  /** Set by a redelivery of an ended delivery: one attempt, no schedule after it. */
  singleAttempt?: boolean;
}

/**
 * Puts a new endpoint and counts it, in one transaction, on the condition that the account has fewer
 * than `maxEndpoints`.
 * @throws WebhookEndpointLimitError at the bound
 */
export async function putEndpoint(
  ctx: RetryingStoreContext,
  endpoint: WebhookEndpointRecord,
  maxEndpoints: number,
): Promise<void> {
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: ctx.tableName,
                  Item: { ...webhookEndpointKeys.endpoint(endpoint.userId, endpoint.endpointId), ...endpoint },
                  ...conditionParams(conditions.itemIsNew()),
                },
              },
              {
                Update: {
                  TableName: ctx.tableName,
                  Key: webhookEndpointKeys.endpointCount(endpoint.userId),
                  ...updateParams(
                    update({ set: { userId: endpoint.userId, updatedAt: endpoint.createdAt }, add: { endpoints: 1 } }),
                    webhookConditions.endpointsBelow(maxEndpoints),
                  ),
                },
              },
            ],
          }),
        ),
      ctx.retry,
    );
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (reasons?.[1]?.Code === 'ConditionalCheckFailed') throw new WebhookEndpointLimitError(maxEndpoints);
    throw error;
  }
}

/** One endpoint of the account, or undefined (consistent read). */
export async function getEndpoint(
  ctx: RetryingStoreContext,
  userId: string,
  endpointId: string,
): Promise<WebhookEndpointRecord | undefined> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: webhookEndpointKeys.endpoint(userId, endpointId),
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  return out.Item ? withoutKeys<WebhookEndpointRecord>(out.Item) : undefined;
}

/** Every endpoint of the account, oldest first (at most the bound: one page). */
export async function listEndpoints(ctx: RetryingStoreContext, userId: string): Promise<WebhookEndpointRecord[]> {
  const items = await queryAllWithPrefix(ctx, webhookEndpointKeys.endpointPrefix(userId));
  return items
    .map((item) => withoutKeys<WebhookEndpointRecord>(item))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/**
 * Changes an endpoint (`remove` names attributes to drop, as `events` for "all again").
 * @returns the endpoint as now stored, or undefined when there is none
 */
export async function changeEndpoint(
  ctx: RetryingStoreContext,
  input: { userId: string; endpointId: string; set: Record<string, unknown>; remove?: string[] },
): Promise<WebhookEndpointRecord | undefined> {
  try {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: webhookEndpointKeys.endpoint(input.userId, input.endpointId),
            ...updateParams(
              update({ set: input.set, ...(input.remove?.length ? { remove: input.remove } : {}) }),
              conditions.itemExists(),
            ),
            ReturnValues: 'ALL_NEW',
          }),
        ),
      ctx.retry,
    );
    return withoutKeys<WebhookEndpointRecord>(out.Attributes ?? {});
  } catch (error) {
    lostCondition(error);
    return undefined;
  }
}

/**
 * Deletes an endpoint and uncounts it in one transaction (its deliveries stay until their TTL; the
 * worker finds the endpoint gone and ends them).
 * @returns false when there was none
 */
export async function deleteEndpoint(
  ctx: RetryingStoreContext,
  input: { userId: string; endpointId: string; now: Date },
): Promise<boolean> {
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Delete: {
                  TableName: ctx.tableName,
                  Key: webhookEndpointKeys.endpoint(input.userId, input.endpointId),
                  ...conditionParams(conditions.itemExists()),
                },
              },
              {
                Update: {
                  TableName: ctx.tableName,
                  Key: webhookEndpointKeys.endpointCount(input.userId),
                  ...updateParams(update({ set: { updatedAt: input.now.toISOString() }, add: { endpoints: -1 } })),
                },
              },
            ],
          }),
        ),
      ctx.retry,
    );
    return true;
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (reasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
    throw error;
  }
}

/** What opening an endpoint's delivery needs. */
export interface EndpointDeliveryOpening {
  userId: string;
  endpointId: string;
  deliveryId: string;
  webhookId: string;
  url: string;
  eventType: EndpointEventType;
  eventAt: string;
  subjectTaskId?: string;
  data?: EndpointDelivery['data'];
  claimId: string;
  leaseUntil: Date;
  now: Date;
  maxOpen: number;
  /**
   * Its place among the account's queued deliveries past the bound (the event's feed number, as the
   * default endpoint's: store/webhook-queue.ts); absent (a test event): over the bound it is not written.
   */
  queueOrder?: string;
  /** An account event's once-only marker, put in the same transaction (store/webhook-delivery-opening.ts). */
  markerPut?: TransactItem;
}

/**
 * Opens an endpoint's delivery with its first attempt claimed (`sending`), counted in the account's
 * open deliveries, by the rule a task's follows (store/webhook-delivery-opening.ts): past the bound (or behind deliveries
 * queued already) it waits `queued` in the order of `queueOrder`, promoted as places free
 * (store/webhook-queue.ts); without a `queueOrder`, `full` and nothing written. `exists`: this event has
 * a delivery to this endpoint already (or the marker says the account event was opened before).
 */
export function openEndpointDelivery(
  ctx: RetryingStoreContext,
  input: EndpointDeliveryOpening,
): Promise<DeliveryOpened | 'full'> {
  const { claimId, leaseUntil, now, maxOpen, queueOrder, markerPut } = input;
  return openDeliveryRecord(ctx, {
    userId: input.userId,
    id: input.deliveryId,
    fields: {
      userId: input.userId,
      deliveryId: input.deliveryId,
      endpointId: input.endpointId,
      webhookId: input.webhookId,
      eventType: input.eventType,
      eventAt: input.eventAt,
      ...(input.subjectTaskId === undefined ? {} : { subjectTaskId: input.subjectTaskId }),
      ...(input.data === undefined ? {} : { data: input.data }),
      url: input.url,
    },
    claimId,
    leaseUntil,
    now,
    maxOpen,
    ...(queueOrder === undefined ? {} : { queueOrder }),
    ...(markerPut ? { markerPut } : {}),
  });
}

/**
 * Claims a new attempt of a delivery now (a redelivery): a `waiting` one is claimed where it waits (its
 * schedule goes on after the attempt); a `delivered` or `failed` one is opened again for one attempt
 * (`singleAttempt`), counted in the account's open deliveries on the condition that it is below
 * `maxOpen`. The write starts the attempt (stream) with the delivery's `webhook-id` unchanged.
 * @returns false when the delivery moved meanwhile (or is `sending`): nothing was written
 * @throws OpenDeliveriesFullError at the bound
 */
export async function claimRedelivery(
  ctx: RetryingStoreContext,
  input: { delivery: EndpointDelivery; claimId: string; leaseUntil: Date; now: Date; maxOpen: number },
): Promise<boolean> {
  const { delivery } = input;
  const leaseIso = input.leaseUntil.toISOString();
  const now = input.now.toISOString();
  const key = webhookKeys.delivery(delivery.userId, delivery.deliveryId);
  const asRead = webhookConditions.deliveryAsRead(delivery.deliveryState, delivery.updatedAt);
  const claim = {
    deliveryState: 'sending',
    claimId: input.claimId,
    dueAt: leaseIso,
    updatedAt: now,
    ...webhookKeys.due(delivery.deliveryId, leaseIso),
  };
  if (delivery.deliveryState === 'sending') return false;
  if (delivery.deliveryState === 'waiting') {
    try {
      await withRetry(
        () =>
          ctx.doc.send(
            new UpdateCommand({ TableName: ctx.tableName, Key: key, ...updateParams(update({ set: claim }), asRead) }),
          ),
        ctx.retry,
      );
      return true;
    } catch (error) {
      lostCondition(error);
      return false;
    }
  }
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Update: {
                  TableName: ctx.tableName,
                  Key: key,
                  ...updateParams(
                    update({
                      set: { ...claim, countsOpen: true, singleAttempt: true },
                      remove: ['deliveredAt', 'gaveUpAt', 'dropReason'],
                    }),
                    asRead,
                  ),
                },
              },
              reopenCounterUpdate(ctx.tableName, { userId: delivery.userId, maxOpen: input.maxOpen, now }),
            ],
          }),
        ),
      ctx.retry,
    );
    return true;
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (reasons?.[1]?.Code === 'ConditionalCheckFailed') throw new OpenDeliveriesFullError(input.maxOpen);
    if (reasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}
