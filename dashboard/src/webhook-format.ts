/** How webhook endpoints and their deliveries read on the Webhooks pages (no DOM). */
import type { WebhookDelivery, WebhookDeliveryState, WebhookEndpoint, WebhookEventType } from './api';
import { dateTime } from './format';

/** Every event type an endpoint may choose, with what it means, in the order the forms offer them. */
export const WEBHOOK_EVENT_TYPES: readonly { type: WebhookEventType; meaning: string }[] = [
  { type: 'task.completed', meaning: 'a task completed' },
  { type: 'task.failed', meaning: 'a task failed; its credits were refunded' },
  { type: 'key.spend_limit.warning', meaning: 'a key spent 80% of its spend limit' },
  { type: 'key.spend_limit.reached', meaning: 'a key reached its spend limit' },
  { type: 'credits.low', meaning: 'the balance fell below the low-balance alert' },
];

/** The event the "Send test event" button sends (to that endpoint only, whatever its event types). */
export const TEST_EVENT_TYPE = 'webhook.test';

/** The delivery states of the log, in the order the filter offers them, with what each means. */
export const DELIVERY_STATES: readonly { state: WebhookDeliveryState; meaning: string }[] = [
  { state: 'queued', meaning: 'Queued (past the open-delivery bound, goes out in order)' },
  { state: 'sending', meaning: 'Sending' },
  { state: 'waiting', meaning: 'Waiting to retry' },
  { state: 'delivered', meaning: 'Delivered' },
  { state: 'failed', meaning: 'Failed' },
];

/** A delivery state as a word. */
export function deliveryStateName(state: WebhookDeliveryState): string {
  return DELIVERY_STATES.find((one) => one.state === state)?.meaning ?? state;
}

/** An endpoint's event types: "All event types" when it takes every one (null), else the list. */
export function endpointEventsText(events: WebhookEndpoint['events']): string {
  return events === null ? 'All event types' : events.join(', ');
}

/** One attempt of a delivery: "#2 · <time> · HTTP 200 · 35 ms", with its error when it has one. */
export function attemptText(attempt: WebhookDelivery['attempts'][number]): string {
  const parts = [`#${attempt.attempt}`, dateTime(attempt.at)];
  parts.push(attempt.statusCode === null ? 'no answer' : `HTTP ${attempt.statusCode}`);
  parts.push(`${attempt.durationMs} ms`);
  if (attempt.error) parts.push(attempt.error);
  return parts.join(' · ');
}

/** What comes next for a delivery, or why it ended, beside its state (empty when nothing to add). */
export function deliveryStateDetail(delivery: WebhookDelivery): string {
  if (delivery.reason) return delivery.reason;
  if (delivery.state === 'waiting' && delivery.nextAttemptAt) return `next attempt ${dateTime(delivery.nextAttemptAt)}`;
  if (delivery.state === 'failed' && delivery.gaveUpAt) return `gave up ${dateTime(delivery.gaveUpAt)}`;
  return '';
}
