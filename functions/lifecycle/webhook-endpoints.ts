/**
 * The rules of an account's webhook endpoints (docs/api/webhooks.md#endpoints): create (the secret in
 * the answer and nowhere else, sealed in the table), read, change, delete, rotate the secret with a
 * grace, send a test event, read an endpoint's delivery log, redeliver. The API's entries
 * (functions/webhook-endpoints-*) and the operator CLI use these; every URL is judged by the rule that
 * judges a task's `webhookUrl` (webhooks/target-policy.ts), here and again at every attempt.
 */
import { randomUUID } from 'node:crypto';
import { ValidationError } from '../core/errors';
import {
  OpenDeliveriesFullError,
  WebhookDeliveryNotFoundError,
  WebhookDeliveryStateError,
  WebhookEndpointNotFoundError,
} from '../core/webhook-endpoint-errors';
import {
  type CreateEndpointInput,
  DEFAULT_WEBHOOK_MAX_ENDPOINTS,
  isEndpointDeliveryId,
  isEndpointId,
  newEndpointId,
  newEventId,
  TEST_EVENT_TYPE,
  type UpdateEndpointInput,
} from '../core/webhook-endpoints';
import { DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES, newWebhookSecret, WEBHOOK_CLAIM_SECONDS } from '../core/webhooks';
import type { SourcePolicy } from '../media/source-policy';
import type { Logger } from '../observability/logger';
import type { StoreContext } from '../store/client';
import { decodeCursor, encodeCursor } from '../store/pages';
import {
  endpointDeliverySortKeyShape,
  getEndpointDelivery,
  type LoggedDelivery,
  listEndpointDeliveries,
} from '../store/webhook-endpoint-log';
import {
  changeEndpoint,
  claimRedelivery,
  deleteEndpoint,
  type EndpointDelivery,
  getEndpoint,
  listEndpoints,
  putEndpoint,
  type WebhookEndpointRecord,
} from '../store/webhook-endpoints';
import type { DeliveryState } from '../store/webhooks';
import type { SecretBox } from '../webhooks/secret-box';
import { webhookUrlProblem } from '../webhooks/target-policy';
import { fanOutToEndpoints } from './endpoint-deliveries';

/** An endpoint as the API shows it: never a secret, sealed or not. */
export interface EndpointView {
  id: string;
  url: string;
  /** The event types it takes; null: all. */
  events: string[] | null;
  enabled: boolean;
  description: string | null;
  secretCreatedAt: string;
  /** Until when the previous secret still signs (after a rotation), else null. */
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A delivery as the log shows it. */
export interface DeliveryView {
  id: string;
  endpointId: string;
  /** The event's id: the `webhook-id` header of every attempt. */
  eventId: string;
  eventType: string;
  eventAt: string;
  state: DeliveryState;
  attempts: { attempt: number; at: string; statusCode: number | null; durationMs: number; error: string | null }[];
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  gaveUpAt: string | null;
  /** Why it was never tried (the bound on open deliveries), else null. */
  reason: string | null;
  createdAt: string;
}

/** What the endpoint routes need besides the table. */
export interface EndpointWiring {
  store: StoreContext;
  box: SecretBox;
  policy: SourcePolicy;
  now: () => Date;
  maxEndpoints?: number;
  maxOpenDeliveries?: number;
}

/** The view of a stored endpoint. */
export function describeEndpoint(endpoint: WebhookEndpointRecord): EndpointView {
  return {
    id: endpoint.endpointId,
    url: endpoint.url,
    events: endpoint.events ?? null,
    enabled: endpoint.enabled,
    description: endpoint.description ?? null,
    secretCreatedAt: endpoint.secretCreatedAt,
    previousSecretExpiresAt: endpoint.previousSecretExpiresAt ?? null,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt,
  };
}

/** The view of a delivery and its attempts. */
export function describeDelivery(logged: LoggedDelivery): DeliveryView {
  const { delivery } = logged;
  return {
    id: delivery.deliveryId,
    endpointId: delivery.endpointId,
    eventId: delivery.webhookId,
    eventType: delivery.eventType,
    eventAt: delivery.eventAt,
    state: delivery.deliveryState,
    attempts: logged.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      at: attempt.at,
      statusCode: attempt.statusCode ?? null,
      durationMs: attempt.durationMs,
      error: attempt.error ?? null,
    })),
    nextAttemptAt: delivery.deliveryState === 'waiting' ? (delivery.dueAt ?? null) : null,
    deliveredAt: delivery.deliveredAt ?? null,
    gaveUpAt: delivery.gaveUpAt ?? null,
    reason: delivery.dropReason ?? null,
    createdAt: delivery.createdAt,
  };
}

function checkUrl(url: string, policy: SourcePolicy): void {
  const problem = webhookUrlProblem(url, policy);
  if (problem) throw new ValidationError({ fieldErrors: { url: [problem] }, formErrors: [] });
}

/**
 * Creates an endpoint with a new signing secret.
 * @returns the endpoint and its secret: the only time the secret is shown
 * @throws ValidationError for a URL the rules refuse; WebhookEndpointLimitError at the bound
 */
export async function createEndpoint(
  w: EndpointWiring,
  input: CreateEndpointInput & { userId: string },
): Promise<EndpointView & { secret: string }> {
  checkUrl(input.url, w.policy);
  const now = w.now().toISOString();
  const endpointId = newEndpointId();
  const secret = newWebhookSecret();
  const record: WebhookEndpointRecord = {
    userId: input.userId,
    endpointId,
    url: input.url,
    ...(input.events ? { events: input.events } : {}),
    enabled: true,
    ...(input.description !== undefined ? { description: input.description } : {}),
    sealedSecret: await w.box.seal(input.userId, secret),
    secretCreatedAt: now,
    createdAt: now,
    updatedAt: now,
  };
  await putEndpoint(w.store, record, w.maxEndpoints ?? DEFAULT_WEBHOOK_MAX_ENDPOINTS);
  return { ...describeEndpoint(record), secret };
}

/**
 * The account's endpoint `endpointId`.
 * @throws WebhookEndpointNotFoundError when it has none of that id
 */
export async function findEndpoint(store: StoreContext, userId: string, endpointId: string) {
  const endpoint = isEndpointId(endpointId) ? await getEndpoint(store, userId, endpointId) : undefined;
  if (!endpoint) throw new WebhookEndpointNotFoundError();
  return endpoint;
}

/** The account's endpoints, oldest first. */
export async function listAccountEndpoints(store: StoreContext, userId: string): Promise<EndpointView[]> {
  return (await listEndpoints(store, userId)).map(describeEndpoint);
}

/**
 * Changes an endpoint's URL (judged by the rules), events (null: all), enabled or description.
 * @throws WebhookEndpointNotFoundError, ValidationError
 */
export async function updateEndpoint(
  w: Pick<EndpointWiring, 'store' | 'policy' | 'now'>,
  input: UpdateEndpointInput & { userId: string; endpointId: string },
): Promise<EndpointView> {
  if (input.url !== undefined) checkUrl(input.url, w.policy);
  if (!isEndpointId(input.endpointId)) throw new WebhookEndpointNotFoundError();
  const set: Record<string, unknown> = { updatedAt: w.now().toISOString() };
  const remove: string[] = [];
  if (input.url !== undefined) set.url = input.url;
  if (input.events === null) remove.push('events');
  else if (input.events !== undefined) set.events = input.events;
  if (input.enabled !== undefined) set.enabled = input.enabled;
  if (input.description !== undefined) set.description = input.description;
  const changed = await changeEndpoint(w.store, { userId: input.userId, endpointId: input.endpointId, set, remove });
  if (!changed) throw new WebhookEndpointNotFoundError();
  return describeEndpoint(changed);
}

/**
 * Deletes an endpoint; its open deliveries end at their next attempt, unsent.
 * @throws WebhookEndpointNotFoundError
 */
export async function removeEndpoint(
  w: Pick<EndpointWiring, 'store' | 'now'>,
  input: { userId: string; endpointId: string },
): Promise<void> {
  if (!isEndpointId(input.endpointId)) throw new WebhookEndpointNotFoundError();
  if (!(await deleteEndpoint(w.store, { ...input, now: w.now() }))) throw new WebhookEndpointNotFoundError();
}

/**
 * Gives the endpoint a new secret; the current one becomes the previous one and still signs (beside
 * the new one) for `graceSeconds`, so a receiver can switch without losing a delivery.
 * @returns the endpoint and its new secret, shown only now
 * @throws WebhookEndpointNotFoundError
 */
export async function rotateEndpointSecret(
  w: Pick<EndpointWiring, 'store' | 'box' | 'now'>,
  input: { userId: string; endpointId: string; graceSeconds: number },
): Promise<EndpointView & { secret: string }> {
  const endpoint = await findEndpoint(w.store, input.userId, input.endpointId);
  const now = w.now();
  const secret = newWebhookSecret();
  const set: Record<string, unknown> = {
    sealedSecret: await w.box.seal(input.userId, secret),
    secretCreatedAt: now.toISOString(),
    updatedAt: now.toISOString(),
  };
  const remove: string[] = [];
  if (input.graceSeconds > 0) {
    set.previousSealedSecret = endpoint.sealedSecret;
    set.previousSecretExpiresAt = new Date(now.getTime() + input.graceSeconds * 1000).toISOString();
  } else remove.push('previousSealedSecret', 'previousSecretExpiresAt');
  const changed = await changeEndpoint(w.store, {
    userId: input.userId,
    endpointId: input.endpointId,
    set,
    remove,
  });
  if (!changed) throw new WebhookEndpointNotFoundError();
  return { ...describeEndpoint(changed), secret };
}

/**
 * Sends a `webhook.test` event to this endpoint only (enabled or not), as a delivery of its log.
 * @returns the delivery's id and the event's id
 * @throws WebhookEndpointNotFoundError
 */
export async function sendTestEvent(
  w: Pick<EndpointWiring, 'store' | 'now' | 'maxOpenDeliveries'>,
  input: { userId: string; endpointId: string },
  log: Logger,
): Promise<{ deliveryId: string; eventId: string }> {
  const endpoint = await findEndpoint(w.store, input.userId, input.endpointId);
  const eventId = newEventId();
  const eventAt = w.now().toISOString();
  const [opened] = await fanOutToEndpoints(
    { store: w.store, now: w.now, maxOpenDeliveries: w.maxOpenDeliveries ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES },
    {
      userId: input.userId,
      eventId,
      type: TEST_EVENT_TYPE,
      eventAt,
      data: { endpointId: endpoint.endpointId, message: 'A test event sent from the API or the dashboard.' },
      endpointId: endpoint.endpointId,
    },
    log,
    [endpoint],
  );
  if (!opened) throw new WebhookEndpointNotFoundError();
  if (opened.opened === 'full') {
    throw new OpenDeliveriesFullError(w.maxOpenDeliveries ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES);
  }
  return { deliveryId: opened.deliveryId, eventId };
}

const STATES: readonly DeliveryState[] = ['queued', 'sending', 'waiting', 'delivered', 'failed'];

/**
 * The filters of the delivery log (`state`, `eventType`) beside `limit` and `cursor`.
 * @returns the field errors found (empty when none) and the filters
 */
export function deliveryFilters(query: Record<string, string | undefined>): {
  errors: Record<string, string[]>;
  state?: DeliveryState;
  eventType?: string;
} {
  const errors: Record<string, string[]> = {};
  const state = query.state;
  if (state !== undefined && !STATES.includes(state as DeliveryState)) {
    errors.state = [`Must be one of ${STATES.join(', ')}`];
  }
  const eventType = query.eventType;
  if (eventType !== undefined && !/^[a-z_.]{1,64}$/.test(eventType)) errors.eventType = ['Not an event type'];
  return {
    errors,
    ...(state !== undefined && !errors.state ? { state: state as DeliveryState } : {}),
    ...(eventType !== undefined && !errors.eventType ? { eventType } : {}),
  };
}

/** The decoder of this endpoint's log cursors (a cursor of another endpoint's log is refused). */
export function deliveryCursorDecoder(endpointId: string): (cursor: string) => string | undefined {
  const shape = isEndpointId(endpointId) ? endpointDeliverySortKeyShape(endpointId) : /^$/;
  return (cursor) => decodeCursor(cursor, shape);
}

/**
 * A page of the endpoint's delivery log, newest first.
 * @throws WebhookEndpointNotFoundError
 */
export async function listDeliveries(
  store: StoreContext,
  input: {
    userId: string;
    endpointId: string;
    limit: number;
    afterSortKey?: string;
    state?: DeliveryState;
    eventType?: string;
  },
): Promise<{ deliveries: DeliveryView[]; next: string | null }> {
  await findEndpoint(store, input.userId, input.endpointId);
  const page = await listEndpointDeliveries(store, input);
  return {
    deliveries: page.items.map(describeDelivery),
    next: page.nextSortKey ? encodeCursor(page.nextSortKey) : null,
  };
}

/**
 * Sends a delivery again now, with the same `webhook-id`: a new attempt, recorded in its log.
 * @throws WebhookEndpointNotFoundError, WebhookDeliveryNotFoundError, WebhookDeliveryStateError (an
 * attempt is under way), OpenDeliveriesFullError (the account's bound)
 */
export async function redeliver(
  w: Pick<EndpointWiring, 'store' | 'now' | 'maxOpenDeliveries'>,
  input: { userId: string; endpointId: string; deliveryId: string },
): Promise<DeliveryView> {
  await findEndpoint(w.store, input.userId, input.endpointId);
  const delivery: EndpointDelivery | undefined = isEndpointDeliveryId(input.deliveryId)
    ? await getEndpointDelivery(w.store, input.userId, input.deliveryId)
    : undefined;
  if (!delivery || delivery.endpointId !== input.endpointId) throw new WebhookDeliveryNotFoundError();
  const now = w.now();
  const claimed = await claimRedelivery(w.store, {
    delivery,
    claimId: randomUUID(),
    leaseUntil: new Date(now.getTime() + WEBHOOK_CLAIM_SECONDS * 1000),
    now,
    maxOpen: w.maxOpenDeliveries ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES,
  });
  if (!claimed) throw new WebhookDeliveryStateError('An attempt of this delivery is under way; try again shortly');
  const after = await getEndpointDelivery(w.store, input.userId, input.deliveryId);
  return describeDelivery({ delivery: after ?? delivery, attempts: [] });
}
