/**
 * The webhooks of the OpenAPI document (contract/openapi-document.ts): what the service POSTs to
 * callers' endpoints, with the Standard Webhooks headers of every delivery.
 */
import { type Json, ref } from './openapi-json';

/** The Standard Webhooks headers every delivery carries. */
const WEBHOOK_HEADERS: Json[] = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: 'The delivery id (`msg_...`): the same on every retry of one event, so receivers can drop duplicates.',
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: 'Seconds since the epoch when this attempt was signed; refuse values far from now (replays).',
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description:
      "`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` under the account's signing secret (`whsec_...`, Standard Webhooks). Verify with the `standardwebhooks` package: `new Webhook(secret).verify(body, headers)`.",
  },
];

/**
 * What the service sends (OpenAPI 3.1 `webhooks`): one event per task, when it ends, and the account
 * events (a key's spend limit, a low balance).
 */
export function webhooks(): Json {
  return {
    taskEnded: {
      post: {
        summary: 'A task ended (task.completed or task.failed)',
        description:
          "POSTed to the task's `webhookUrl`, else the account's default endpoint, signed per Standard Webhooks. Any 2xx answer within 10 s counts as delivered; anything else (another status, a redirect, no answer) is retried 1 min, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h later (8 attempts over about 27.6 h), then given up. At most 1 KB of the answer is read.",
        parameters: WEBHOOK_HEADERS,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['type', 'timestamp', 'data'],
                properties: {
                  type: { type: 'string', enum: ['task.completed', 'task.failed'] },
                  timestamp: { type: 'string', format: 'date-time', description: 'When the task ended.' },
                  data: {
                    ...ref('Task'),
                    description: 'The Task resource as GET /api/ai/tasks/{id} shows it at the time of the attempt.',
                  },
                },
              },
            },
          },
        },
        responses: { '2XX': { description: 'Delivered; no retry.' } },
      },
    },
    keySpendLimit: accountEvent(
      'A key reached 80% (key.spend_limit.warning) or 100% (key.spend_limit.reached) of its spend limit',
      "Sent once per key budget, period and threshold, to the account's default endpoint (none: not sent), when the dispatcher takes the task that crossed it (docs/api/webhooks.md). `reached` means the next task that costs more than what is left is refused (402). Signed and retried like the task events.",
      ['key.spend_limit.warning', 'key.spend_limit.reached'],
      'KeySpendLimitEvent',
    ),
    creditsLow: accountEvent(
      'The balance fell below the account threshold (credits.low)',
      "Sent once per crossing of the account's `lowBalanceThreshold` (PUT /api/account/alerts), to its default endpoint (none: not sent); again only after the balance was seen at or above the threshold. Signed and retried like the task events.",
      ['credits.low'],
      'CreditsLowEvent',
    ),
  };
}

/** An account event's webhook: the envelope of every delivery with its own `data`. */
function accountEvent(summary: string, description: string, types: string[], data: string): Json {
  return {
    post: {
      summary,
      description,
      parameters: WEBHOOK_HEADERS,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['type', 'timestamp', 'data'],
              properties: {
                type: { type: 'string', enum: types },
                timestamp: { type: 'string', format: 'date-time', description: 'When the crossing was seen.' },
                data: ref(data),
              },
            },
          },
        },
      },
      responses: { '2XX': { description: 'Delivered; no retry.' } },
    },
  };
}
