/**
 * Webhook endpoints a customer manages (docs/api/webhooks.md#endpoints): their ids, the event types
 * they may filter on, the bodies of the routes that create and change them, and the ids that tie an
 * event to its deliveries. Pure: no I/O.
 */
import { randomBytes } from 'node:crypto';
import { ValidationError } from './errors';
import type { WebhookEventType } from './webhooks';

/** The event an endpoint's test button sends (only to that endpoint, never to the default one). */
export const TEST_EVENT_TYPE = 'webhook.test';

/** Every event an endpoint may receive: the task and account events, and the test event. */
export type EndpointEventType = WebhookEventType | typeof TEST_EVENT_TYPE;

/** The event types an endpoint may name in `events` (absent: all of them, those to come included). */
export const ENDPOINT_EVENT_TYPES: readonly WebhookEventType[] = [
  'task.completed',
  'task.failed',
  'key.spend_limit.warning',
  'key.spend_limit.reached',
  'credits.low',
];

/** Endpoints one account may have (`WEBHOOK_MAX_ENDPOINTS`), unless the setting says otherwise. */
export const DEFAULT_WEBHOOK_MAX_ENDPOINTS = 10;

/** How long the previous secret still signs after a rotation, by default (as a key rotation's grace). */
export const DEFAULT_SECRET_GRACE_SECONDS = 86_400;

/** The longest grace a rotation may give the previous secret: a week. */
export const MAX_SECRET_GRACE_SECONDS = 7 * 86_400;

/** The longest `description`. */
export const MAX_ENDPOINT_DESCRIPTION = 200;

/** The prefix of an endpoint's id; the rest is 24 hex digits. */
export const ENDPOINT_ID_PREFIX = 'ep_';

/** The prefix of an endpoint delivery's id (its delivery item is keyed by it, beside the task's). */
export const ENDPOINT_DELIVERY_PREFIX = 'dlv_';

const ENDPOINT_ID = /^ep_[0-9a-f]{24}$/;
const DELIVERY_ID = /^dlv_[0-9a-f]{24}_[0-9]{13}_[0-9a-f]{32}$/;

/** A new endpoint id. */
export function newEndpointId(): string {
  return `${ENDPOINT_ID_PREFIX}${randomBytes(12).toString('hex')}`;
}

/** Whether `text` is shaped like an endpoint id (anything else is a 404 without a read). */
export function isEndpointId(text: string): boolean {
  return ENDPOINT_ID.test(text);
}

/** Whether `text` is shaped like an endpoint delivery id. */
export function isEndpointDeliveryId(text: string): boolean {
  return DELIVERY_ID.test(text);
}

/** A new event id for an event with no natural key (a test event). */
export function newEventId(): string {
  return `msg_${randomBytes(16).toString('hex')}`;
}

/**
 * The delivery of event `eventId` (`msg_<32 hex>` or `evt_<32 hex>`) to an endpoint: the endpoint first,
 * then the event's time, so one Query lists an endpoint's deliveries newest first; the event's hex last,
 * so the same event never opens two deliveries to one endpoint.
 */
export function endpointDeliveryId(endpointId: string, eventAt: Date, eventId: string): string {
  const hex = eventId.replace(/^(msg|evt)_/, '');
  return `${ENDPOINT_DELIVERY_PREFIX}${endpointId.slice(ENDPOINT_ID_PREFIX.length)}_${String(eventAt.getTime()).padStart(13, '0')}_${hex}`;
}

/** Whether an endpoint with `events` (undefined: all) takes an event of `type`; the test event always. */
export function endpointTakes(events: readonly string[] | undefined, type: EndpointEventType): boolean {
  return type === TEST_EVENT_TYPE || events === undefined || events.includes(type);
}

/** `POST /api/webhooks`. */
export interface CreateEndpointInput {
  url: string;
  events?: WebhookEventType[];
  description?: string;
}

/** `PATCH /api/webhooks/{id}`: any of these; `events: null` means all events again. */
export interface UpdateEndpointInput {
  url?: string;
  events?: WebhookEventType[] | null;
  enabled?: boolean;
  description?: string;
}

function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError({ fieldErrors: {}, formErrors: ['Request body must be a JSON object'] });
  }
  return body as Record<string, unknown>;
}

function unknownFields(input: Record<string, unknown>, known: readonly string[], errors: Record<string, string[]>) {
  for (const field of Object.keys(input)) {
    if (!known.includes(field)) errors[field] = [`Unknown field "${field}"`];
  }
}

function eventsProblem(value: unknown): string | undefined {
  if (!Array.isArray(value) || value.length === 0) return 'Must be a non-empty list of event types (omit it for all)';
  const unknown = value.filter((type) => !ENDPOINT_EVENT_TYPES.includes(type as WebhookEventType));
  if (unknown.length > 0)
    return `Unknown event type(s): ${unknown.map(String).join(', ')}; known: ${ENDPOINT_EVENT_TYPES.join(', ')}`;
  return undefined;
}

function descriptionProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > MAX_ENDPOINT_DESCRIPTION) {
    return `Must be text of at most ${MAX_ENDPOINT_DESCRIPTION} characters`;
  }
  return undefined;
}

/**
 * `{ url, events?, description? }`; the URL's rules are checked by the caller (they need the policy).
 * @throws ValidationError (400) naming every bad field
 */
export function parseCreateEndpoint(body: unknown): CreateEndpointInput {
  const input = objectBody(body);
  const errors: Record<string, string[]> = {};
  unknownFields(input, ['url', 'events', 'description'], errors);
  if (typeof input.url !== 'string') errors.url = ['Required: an https URL'];
  const events = input.events === undefined ? undefined : eventsProblem(input.events);
  if (events) errors.events = [events];
  const description = input.description === undefined ? undefined : descriptionProblem(input.description);
  if (description) errors.description = [description];
  if (Object.keys(errors).length > 0) throw new ValidationError({ fieldErrors: errors, formErrors: [] });
  return {
    url: input.url as string,
    ...(input.events === undefined ? {} : { events: [...new Set(input.events as WebhookEventType[])] }),
    ...(input.description === undefined ? {} : { description: input.description as string }),
  };
}

/**
 * `{ url?, events?, enabled?, description? }`, at least one.
 * @throws ValidationError (400) naming every bad field
 */
export function parseUpdateEndpoint(body: unknown): UpdateEndpointInput {
  const input = objectBody(body);
  const errors: Record<string, string[]> = {};
  unknownFields(input, ['url', 'events', 'enabled', 'description'], errors);
  if (input.url !== undefined && typeof input.url !== 'string') errors.url = ['Must be an https URL'];
  const events = input.events === undefined || input.events === null ? undefined : eventsProblem(input.events);
  if (events) errors.events = [`${events}, or null for all`];
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean') errors.enabled = ['Must be true or false'];
  const description = input.description === undefined ? undefined : descriptionProblem(input.description);
  if (description) errors.description = [description];
  const formErrors = Object.keys(input).length === 0 ? ['Name at least one of url, events, enabled, description'] : [];
  if (Object.keys(errors).length > 0 || formErrors.length > 0)
    throw new ValidationError({ fieldErrors: errors, formErrors });
  return {
    ...(input.url === undefined ? {} : { url: input.url as string }),
    ...(input.events === undefined
      ? {}
      : { events: input.events === null ? null : [...new Set(input.events as WebhookEventType[])] }),
    ...(input.enabled === undefined ? {} : { enabled: input.enabled as boolean }),
    ...(input.description === undefined ? {} : { description: input.description as string }),
  };
}

/**
 * `{ graceSeconds? }` (0 to a week; default a day): how long the previous secret still signs.
 * @throws ValidationError (400)
 */
export function parseRotateEndpointSecret(body: unknown): { graceSeconds: number } {
  if (body === undefined || body === null) return { graceSeconds: DEFAULT_SECRET_GRACE_SECONDS };
  const input = objectBody(body);
  const errors: Record<string, string[]> = {};
  unknownFields(input, ['graceSeconds'], errors);
  const grace = input.graceSeconds;
  if (
    grace !== undefined &&
    (typeof grace !== 'number' || !Number.isSafeInteger(grace) || grace < 0 || grace > MAX_SECRET_GRACE_SECONDS)
  ) {
    errors.graceSeconds = [`Must be a whole number of seconds from 0 to ${MAX_SECRET_GRACE_SECONDS}`];
  }
  if (Object.keys(errors).length > 0) throw new ValidationError({ fieldErrors: errors, formErrors: [] });
  return { graceSeconds: (grace as number | undefined) ?? DEFAULT_SECRET_GRACE_SECONDS };
}
