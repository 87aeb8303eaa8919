/**
 * Deliveries to an account's webhook endpoints (core/webhook-endpoints.ts). Where a delivery to the
 * default endpoint (or a task's `webhookUrl`) is opened (lifecycle/webhooks.ts for a task's end,
 * lifecycle/account-events.ts for an account event), `fanOutToEndpoints` opens one more per enabled
 * endpoint whose `events` take the event, each with the event's id as its `webhook-id`. The write that
 * opens it reaches the webhook worker through the table's stream as every delivery does, and
 * `attemptEndpointDelivery` makes the attempt; retries, the sweeper's claims and the bound on open
 * deliveries are a task's delivery's (store/webhooks.ts and the modules it names), unchanged.
 *
 * The one entry for events (`fanOutToEndpoints(ctx, event)`) is what a feed of ordered events can call
 * as well: it needs the event's id, type, time and subject, nothing about where it came from.
 */
import { randomUUID } from 'node:crypto';
import type { AccountEventData } from '../core/account-events';
import { TaskStatus } from '../core/task';
import {
  type EndpointEventType,
  endpointDeliveryId,
  endpointTakes,
  isEndpointDeliveryId,
} from '../core/webhook-endpoints';
import { DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES, WEBHOOK_CLAIM_SECONDS } from '../core/webhooks';
import type { ResolveHost } from '../media/public-address';
import type { SourcePolicy } from '../media/source-policy';
import type { Logger } from '../observability/logger';
import type { RetryingStoreContext } from '../store/errors';
import { getTask } from '../store/tasks';
import { accountEventMarkerPut, type DeliveryOpened, type MarkerPutInput } from '../store/webhook-delivery-opening';
import { getEndpointDelivery } from '../store/webhook-endpoint-log';
import {
  type EndpointDelivery,
  getEndpoint,
  listEndpoints,
  openEndpointDelivery,
  type WebhookEndpointRecord,
} from '../store/webhook-endpoints';
import type { AfterAttempt } from '../store/webhooks';
import type { SecretBox } from '../webhooks/secret-box';
import { type AttemptOutcome, sendWebhook } from '../webhooks/send';
import { ACCOUNT_CLOSED_REASON, isAccountClosed } from './closed-account';
import type { Lifecycle } from './lifecycle';
import { presentTask } from './present-task';
import { recordFinishedAttempt } from './record-attempt';

/** A claimed attempt as the stream announces it (`taskId`: the delivery's key, here its `dlv_` id). */
interface ClaimedDeliveryRef {
  userId: string;
  taskId: string;
  claimId: string;
}

/** What an attempt needs: the lifecycle (tasks are presented as GET shows them) and the webhook wiring. */
type WebhookLifecycle = Lifecycle & {
  webhooks: {
    box: SecretBox;
    policy: SourcePolicy;
    retryDelays: readonly number[];
    maxOpenDeliveries?: number;
    resolve?: ResolveHost;
    timeoutMs?: number;
  };
};

/** An event as the endpoints get it. */
export interface EndpointEvent {
  userId: string;
  /** The event's id: every delivery's `webhook-id`. */
  eventId: string;
  type: EndpointEventType;
  /** When it happened (the payload's `timestamp`); with the id, it names the delivery. */
  eventAt: string;
  /**
   * Its place among the account's deliveries waiting past the bound: the feed event's number
   * (`queueOrderOf`), as the default endpoint's delivery of it. Absent (a test event): over the bound
   * its delivery is not opened (`full`).
   */
  order?: string;
  /** The task whose end it is (its resource is read afresh at each attempt)... */
  taskId?: string;
  /** ...or what the event is about. */
  data?: AccountEventData | Record<string, unknown>;
  /** An account event's once-only marker, when no delivery to the default endpoint put it. */
  marker?: MarkerPutInput;
  /** Only this endpoint (a test event); otherwise every enabled endpoint that takes the type. */
  endpointId?: string;
}

/** What fanning out needs: the table, the clock, the bound on open deliveries. */
export interface FanOutContext {
  store: RetryingStoreContext;
  now: () => Date;
  maxOpenDeliveries?: number;
}

/** What each endpoint's delivery came to. */
export type FanOutOutcome = { endpointId: string; deliveryId: string; opened: DeliveryOpened | 'full' }[];

/**
 * Opens the event's delivery to each enabled endpoint of the account that takes its type (one write
 * each, idempotent: the delivery's id is the endpoint's, the event's time and its id). With a marker,
 * the first delivery carries it, so an account event is opened once whatever number of looks see it;
 * `exists` on that one stops the rest.
 */
export async function fanOutToEndpoints(
  ctx: FanOutContext,
  event: EndpointEvent,
  log: Logger,
  endpoints?: readonly WebhookEndpointRecord[],
): Promise<FanOutOutcome> {
  const all = endpoints ?? (await listEndpoints(ctx.store, event.userId));
  const targets = all.filter(
    (endpoint) =>
      (event.endpointId === undefined ? endpoint.enabled : endpoint.endpointId === event.endpointId) &&
      endpointTakes(endpoint.events, event.type),
  );
  const outcome: FanOutOutcome = [];
  const now = ctx.now();
  const maxOpen = ctx.maxOpenDeliveries ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES;
  let marker = event.marker;
  for (const endpoint of targets) {
    const deliveryId = endpointDeliveryId(endpoint.endpointId, new Date(event.eventAt), event.eventId);
    const opened = await openEndpointDelivery(ctx.store, {
      userId: event.userId,
      endpointId: endpoint.endpointId,
      deliveryId,
      webhookId: event.eventId,
      url: endpoint.url,
      eventType: event.type,
      eventAt: event.eventAt,
      ...(event.taskId === undefined ? {} : { subjectTaskId: event.taskId }),
      ...(event.data === undefined ? {} : { data: event.data }),
      claimId: randomUUID(),
      leaseUntil: new Date(now.getTime() + WEBHOOK_CLAIM_SECONDS * 1000),
      now,
      maxOpen,
      ...(event.order === undefined ? {} : { queueOrder: event.order }),
      ...(marker ? { markerPut: accountEventMarkerPut(ctx.store, { ...marker, now }) } : {}),
    });
    if (marker && opened === 'exists') break;
    marker = undefined;
    outcome.push({ endpointId: endpoint.endpointId, deliveryId, opened });
    if (opened === 'queued') {
      log.info('Webhook endpoint delivery queued: the account is at its bound of open deliveries', {
        endpointId: endpoint.endpointId,
        maxOpen,
      });
    }
  }
  if (outcome.length > 0)
    log.info('Webhook endpoint deliveries opened', { eventType: event.type, count: outcome.length });
  return outcome;
}

/** The secrets an attempt is signed with: the endpoint's, and the previous one during its grace. */
export async function signingSecrets(box: SecretBox, endpoint: WebhookEndpointRecord, now: Date): Promise<string[]> {
  const secrets = [await box.open(endpoint.userId, endpoint.sealedSecret)];
  if (
    endpoint.previousSealedSecret &&
    endpoint.previousSecretExpiresAt &&
    new Date(endpoint.previousSecretExpiresAt).getTime() > now.getTime()
  ) {
    secrets.push(await box.open(endpoint.userId, endpoint.previousSealedSecret));
  }
  return secrets;
}

/** Whether a claimed delivery is an endpoint's (else a task's or an account event's to the default). */
export function isEndpointDelivery(ref: ClaimedDeliveryRef): boolean {
  return isEndpointDeliveryId(ref.taskId);
}

/**
 * Makes the claimed attempt of an endpoint's delivery and records it as lifecycle/webhooks.ts records
 * a task's: to the endpoint's URL as it is now (judged again by the URL rules at every attempt), signed
 * with its secret (and the previous one during a rotation's grace). An endpoint deleted or disabled
 * meanwhile, or the account closed (lifecycle/closed-account.ts), ends the delivery (`failed`, its
 * reason recorded) without a call.
 * @returns the recorded outcome, or undefined when nothing was attempted (the claim is not the delivery's)
 */
export async function attemptEndpointDelivery(
  lc: WebhookLifecycle,
  ref: ClaimedDeliveryRef,
  log: Logger,
): Promise<(AttemptOutcome & { next: AfterAttempt['state'] }) | undefined> {
  const delivery = await getEndpointDelivery(lc.store, ref.userId, ref.taskId);
  if (delivery?.deliveryState !== 'sending' || delivery.claimId !== ref.claimId) return undefined;
  const [endpoint, closed] = await Promise.all([
    getEndpoint(lc.store, ref.userId, delivery.endpointId),
    isAccountClosed(lc.store, ref.userId),
  ]);
  const attempt = delivery.attempts + 1;
  const startedAt = lc.now();
  let outcome: AttemptOutcome;
  let endsNow = false;
  if (closed) {
    outcome = { error: ACCOUNT_CLOSED_REASON, durationMs: 0 };
    endsNow = true;
  } else if (!endpoint) {
    outcome = { error: 'The endpoint was deleted', durationMs: 0 };
    endsNow = true;
  } else if (!endpoint.enabled && delivery.eventType !== 'webhook.test') {
    outcome = { error: 'The endpoint is disabled', durationMs: 0 };
    endsNow = true;
  } else {
    outcome = await sendToEndpoint(lc, delivery, endpoint, startedAt, log);
  }
  // As a task's attempt: recorded until it is (never made twice by our own retry), and a place freed
  // goes to the account's oldest queued delivery. An ended endpoint or a redelivery (one attempt) has
  // no schedule after a failure.
  const countsOpen = delivery.countsOpen === true;
  const last = endsNow || delivery.singleAttempt === true;
  const { recorded, next } = await recordFinishedAttempt(
    lc,
    { ref, attempt, startedAt, outcome, countsOpen, last },
    log,
  );
  const fields = { deliveryId: ref.taskId, attempt, statusCode: outcome.statusCode, error: outcome.error };
  if (!recorded) log.warn('Webhook endpoint attempt made but its claim was lost; not recorded', fields);
  else log.info('Webhook endpoint attempt recorded', { ...fields, next: next.state });
  return { ...outcome, next: next.state };
}

async function sendToEndpoint(
  lc: WebhookLifecycle,
  delivery: EndpointDelivery,
  endpoint: WebhookEndpointRecord,
  startedAt: Date,
  log: Logger,
): Promise<AttemptOutcome> {
  try {
    let data = delivery.data;
    if (delivery.subjectTaskId !== undefined) {
      const task = await getTask(lc.store, delivery.userId, delivery.subjectTaskId);
      if (!task || task.status === TaskStatus.PENDING) return { error: 'The task is gone', durationMs: 0 };
      // The resource as GET shows it now: result URLs signed afresh for every attempt.
      data = await presentTask(lc, task);
    }
    const secrets = await signingSecrets(lc.webhooks.box, endpoint, startedAt);
    const body = JSON.stringify({ type: delivery.eventType, timestamp: delivery.eventAt, data: data ?? {} });
    return await sendWebhook(endpoint.url, { id: delivery.webhookId, timestamp: startedAt, body }, secrets, {
      policy: lc.webhooks.policy,
      ...(lc.webhooks.resolve ? { resolve: lc.webhooks.resolve } : {}),
      ...(lc.webhooks.timeoutMs ? { timeoutMs: lc.webhooks.timeoutMs } : {}),
    });
  } catch (error) {
    log.error('Preparing a webhook endpoint attempt failed', { deliveryId: delivery.deliveryId, error });
    return { error: 'The service could not prepare the delivery', durationMs: 0 };
  }
}
