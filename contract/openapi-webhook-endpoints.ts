/**
 * The operations of the webhook endpoint routes (issue 39; docs/api/webhooks.md#endpoints), merged into
 * the document's operations by contract/openapi-document.ts. Schemas are inline: they are these routes'
 * alone.
 */
import { ENDPOINT_EVENT_TYPES } from '../functions/core/webhook-endpoints';
import { type Json, json, ref } from './openapi-json';

const nullableText = { type: ['string', 'null'] };
const time = { type: 'string', format: 'date-time' };

const ENDPOINT: Json = {
  type: 'object',
  required: [
    'id',
    'url',
    'events',
    'enabled',
    'description',
    'secretCreatedAt',
    'previousSecretExpiresAt',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: { type: 'string', pattern: '^ep_[0-9a-f]{24}$' },
    url: { type: 'string' },
    events: {
      type: ['array', 'null'],
      items: { enum: [...ENDPOINT_EVENT_TYPES] },
      description: 'The event types it receives; null: all (those to come included).',
    },
    enabled: { type: 'boolean' },
    description: nullableText,
    secretCreatedAt: time,
    previousSecretExpiresAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'Until when the previous secret still signs beside the new one (after a rotation).',
    },
    createdAt: time,
    updatedAt: time,
  },
};

const WITH_SECRET: Json = {
  allOf: [
    ENDPOINT,
    {
      type: 'object',
      required: ['secret'],
      properties: { secret: { type: 'string', description: 'The signing secret (`whsec_...`): shown only here.' } },
    },
  ],
};

const ATTEMPT: Json = {
  type: 'object',
  required: ['attempt', 'at', 'statusCode', 'durationMs', 'error'],
  properties: {
    attempt: { type: 'integer', minimum: 1 },
    at: time,
    statusCode: { type: ['integer', 'null'], description: "The endpoint's HTTP status; null when none came." },
    durationMs: { type: 'integer', description: 'Latency of the attempt.' },
    error: nullableText,
  },
};

const DELIVERY: Json = {
  type: 'object',
  required: [
    'id',
    'endpointId',
    'eventId',
    'eventType',
    'eventAt',
    'state',
    'attempts',
    'nextAttemptAt',
    'deliveredAt',
    'gaveUpAt',
    'reason',
    'createdAt',
  ],
  properties: {
    id: { type: 'string' },
    endpointId: { type: 'string' },
    eventId: { type: 'string', description: 'The `webhook-id` header of every attempt.' },
    eventType: { type: 'string' },
    eventAt: time,
    state: { enum: ['queued', 'sending', 'waiting', 'delivered', 'failed'] },
    attempts: { type: 'array', items: ATTEMPT },
    nextAttemptAt: { type: ['string', 'null'], format: 'date-time' },
    deliveredAt: { type: ['string', 'null'], format: 'date-time' },
    gaveUpAt: { type: ['string', 'null'], format: 'date-time' },
    reason: nullableText,
    createdAt: time,
  },
};

const ID = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const SESSION_ONLY = [{ session: [] }];
const NOT_FOUND = json(ref('Error'), "No such endpoint (or another account's).");
const ERRORS: Json = { default: json(ref('Error'), 'An error: `{ error, ... }` (401, 403, 429, 500 as every route).') };

/** The operations, by `METHOD path`. */
export function webhookEndpointOperations(): Record<string, Json> {
  return {
    'POST /api/webhooks': {
      summary: 'Create a webhook endpoint (session only)',
      description:
        'Its signing secret is in this answer and never again (kept sealed). `events` absent: all event types. The URL rules of `webhookUrl` apply. At most `WEBHOOK_MAX_ENDPOINTS` (10) per account: 409 beyond.',
      security: SESSION_ONLY,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['url'],
              additionalProperties: false,
              properties: {
                url: { type: 'string' },
                events: { type: 'array', minItems: 1, items: { enum: [...ENDPOINT_EVENT_TYPES] } },
                description: { type: 'string', maxLength: 200 },
              },
            },
          },
        },
      },
      responses: {
        '201': json(WITH_SECRET, 'Created.'),
        '400': json(ref('ValidationError'), 'A bad body or a refused URL.'),
        '409': json(ref('Error'), 'The account has as many endpoints as it may (`limit`).'),
        ...ERRORS,
      },
    },
    'GET /api/webhooks': {
      summary: "The account's webhook endpoints",
      responses: {
        '200': json(
          { type: 'object', required: ['endpoints'], properties: { endpoints: { type: 'array', items: ENDPOINT } } },
          'Oldest first.',
        ),
        ...ERRORS,
      },
    },
    'GET /api/webhooks/{id}': {
      summary: 'One webhook endpoint',
      parameters: [ID],
      responses: { '200': json(ENDPOINT, 'The endpoint.'), '404': NOT_FOUND, ...ERRORS },
    },
    'PATCH /api/webhooks/{id}': {
      summary: 'Change a webhook endpoint (session only)',
      security: SESSION_ONLY,
      parameters: [ID],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              additionalProperties: false,
              minProperties: 1,
              properties: {
                url: { type: 'string' },
                events: { type: ['array', 'null'], minItems: 1, items: { enum: [...ENDPOINT_EVENT_TYPES] } },
                enabled: { type: 'boolean' },
                description: { type: 'string', maxLength: 200 },
              },
            },
          },
        },
      },
      responses: {
        '200': json(ENDPOINT, 'The endpoint as changed.'),
        '400': json(ref('ValidationError'), 'A bad body or a refused URL.'),
        '404': NOT_FOUND,
        ...ERRORS,
      },
    },
    'DELETE /api/webhooks/{id}': {
      summary: 'Delete a webhook endpoint (session only)',
      security: SESSION_ONLY,
      parameters: [ID],
      responses: {
        '200': json(
          { type: 'object', properties: { id: { type: 'string' }, deleted: { const: true } } },
          'Deleted; its open deliveries end unsent.',
        ),
        '404': NOT_FOUND,
        ...ERRORS,
      },
    },
    'POST /api/webhooks/{id}/rotate-secret': {
      summary: "Rotate an endpoint's signing secret (session only)",
      description:
        'The new secret is in this answer only. The previous one still signs for `graceSeconds` (default 86400, at most 604800): meanwhile every attempt carries both signatures in `webhook-signature`.',
      security: SESSION_ONLY,
      parameters: [ID],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              additionalProperties: false,
              properties: { graceSeconds: { type: 'integer', minimum: 0, maximum: 604_800 } },
            },
          },
        },
      },
      responses: { '200': json(WITH_SECRET, 'Rotated.'), '404': NOT_FOUND, ...ERRORS },
    },
    'POST /api/webhooks/{id}/test': {
      summary: 'Send a `webhook.test` event to the endpoint',
      parameters: [ID],
      responses: {
        '202': json(
          {
            type: 'object',
            required: ['deliveryId', 'eventId'],
            properties: { deliveryId: { type: 'string' }, eventId: { type: 'string' } },
          },
          'Opened: the attempt follows (see the delivery log).',
        ),
        '404': NOT_FOUND,
        ...ERRORS,
      },
    },
    'GET /api/webhooks/{id}/deliveries': {
      summary: "The endpoint's delivery log",
      description: 'Newest first, kept 30 days; each delivery with its attempts.',
      parameters: [
        ID,
        {
          name: 'state',
          in: 'query',
          required: false,
          schema: { enum: ['queued', 'sending', 'waiting', 'delivered', 'failed'] },
        },
        { name: 'eventType', in: 'query', required: false, schema: { type: 'string' } },
        {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
        },
        { name: 'cursor', in: 'query', required: false, schema: { type: 'string' } },
      ],
      responses: {
        '200': json(
          {
            type: 'object',
            required: ['deliveries', 'next'],
            properties: { deliveries: { type: 'array', items: DELIVERY }, next: nullableText },
          },
          'A page; `next` is the cursor of the following one.',
        ),
        '400': json(ref('ValidationError'), 'A bad filter or cursor.'),
        '404': NOT_FOUND,
        ...ERRORS,
      },
    },
    'POST /api/webhooks/{id}/deliveries/{deliveryId}/redeliver': {
      summary: 'Send a delivery again (same `webhook-id`)',
      parameters: [ID, { name: 'deliveryId', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '202': json(DELIVERY, 'A new attempt is claimed.'),
        '404': json(ref('Error'), 'No such endpoint or delivery.'),
        '409': json(ref('Error'), 'An attempt is under way.'),
        '429': json(ref('Error'), "The account's open deliveries are at their bound; retry later."),
        ...ERRORS,
      },
    },
  };
}
