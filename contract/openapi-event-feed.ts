/**
 * The event feed's part of the OpenAPI document (contract/openapi-document.ts): `GET /api/events` and
 * its `EventFeed` and `FeedEvent` schemas.
 */
import { DEFAULT_FEED_LIMIT, FEED_EVENT_TYPES, MAX_FEED_LIMIT } from '../functions/core/event-feed-query';
import { type Json, json, ref } from './openapi-json';

/** The feed's operation, by `METHOD path`. */
export function eventFeedOperations(): Record<string, Json> {
  return {
    'GET /api/events': {
      summary: "The account's events, oldest first, from a cursor",
      description:
        'Every event of the account (the ones its webhooks carry), in the order they happened, kept 30 days, whether or not it has a webhook endpoint. Each is listed exactly once, in one order, also when tasks end at the same moment; `id` is the `webhook-id` of its delivery. Read again from `next` to catch up. An API key or the session.',
      parameters: [
        {
          name: 'after',
          in: 'query',
          required: false,
          description: 'The `next` of the previous page; absent: from the oldest kept.',
          schema: { type: 'string' },
        },
        {
          name: 'types',
          in: 'query',
          required: false,
          description: `Comma-separated event types to keep (${FEED_EVENT_TYPES.join(', ')}); absent: all.`,
          schema: { type: 'string' },
        },
        {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 1, maximum: MAX_FEED_LIMIT, default: DEFAULT_FEED_LIMIT },
        },
      ],
      responses: {
        '200': json(ref('EventFeed'), 'A page of events.'),
        '400': json(ref('ValidationError'), 'A bad `after`, `types` or `limit`.'),
        '401': json(ref('Error'), 'Missing, unknown, revoked or expired credentials.'),
        '500': json(ref('InternalError'), 'Unexpected; report the requestId.'),
      },
    },
  };
}

/** The feed's schemas. */
export function eventFeedSchemas(): Record<string, Json> {
  return {
    FeedEvent: {
      type: 'object',
      required: ['id', 'type', 'timestamp', 'data'],
      properties: {
        id: { type: 'string', description: "The same as the event's webhook `webhook-id` (`msg_...`)." },
        type: { enum: [...FEED_EVENT_TYPES] },
        timestamp: { type: 'string', format: 'date-time', description: 'When it happened (the payload `timestamp`).' },
        data: {
          type: 'object',
          description:
            "A task event: the task's summary as `GET /api/ai/tasks` lists it (read the task for its results). An account event: its `data`, as the webhook sends it.",
        },
      },
    },
    EventFeed: {
      type: 'object',
      required: ['events', 'next', 'hasMore'],
      properties: {
        events: { type: 'array', items: ref('FeedEvent') },
        next: {
          type: ['string', 'null'],
          description:
            'Pass as `after` to read on (also when this page was empty: events to come appear after it); null only for an empty feed read from its start.',
        },
        hasMore: { type: 'boolean', description: 'More events were there when this page was read.' },
      },
    },
  };
}
