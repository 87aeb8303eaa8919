/**
 * The OpenAPI 3.1 document of the service, generated from the code that enforces the contract: the
 * request schemas are the valibot schemas validation runs (converted by `@valibot/to-json-schema`), the
 * paths are the route table, the per-model rules come from the catalog; the schemas are in
 * lib/openapi-schemas.ts. `npm run openapi` writes it to
 * `docs/openapi.json`; a unit test keeps that file equal to this function's output, and the service
 * serves the committed file at `GET /api/openapi.json`.
 */

import { UPLOAD_CONTENT_TYPES } from '../functions/core/uploads';
import packageJson from '../package.json';
import { type Json, json, ref, schemas } from './openapi-schemas';
import { ROUTES } from './routes';

const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } };

/** The error answers every route with credentials can give. */
function commonErrors(): Json {
  return {
    '401': json(ref('Error'), 'Missing, unknown, revoked or expired credentials.'),
    '403': json(
      ref('Error'),
      "Valid credentials not allowed here: an address outside the key's allowlist, a key on a session-only route, or a failed CSRF check.",
    ),
    '429': {
      ...json(
        ref('Error'),
        "Over this key's rate limit (`Too many requests`, Retry-After 1) or its daily quota (`Daily quota exceeded`, Retry-After 3600). Each key has its own limit; other keys are unaffected.",
      ),
      headers: { 'Retry-After': { ...RETRY_AFTER['Retry-After'], required: true } },
    },
    '500': json(ref('InternalError'), 'Unexpected; report the requestId.'),
  };
}

function submitOperation(kind: 'image' | 'video'): Json {
  return {
    summary: `Submit a${kind === 'image' ? 'n image' : ' video'} task`,
    parameters: [
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'Makes retries safe for 24 h: the same key and body return the original task, never a second debit.',
        schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
      },
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref(kind === 'image' ? 'ImageRequest' : 'VideoRequest') } },
    },
    responses: {
      '202': {
        ...json(ref('Submission'), 'Accepted: poll the task at `Location`.'),
        headers: {
          Location: { description: 'The task to poll.', schema: { type: 'string' } },
          'Idempotent-Replayed': {
            description: '`true` when this answers an earlier submission.',
            schema: { type: 'string' },
          },
        },
      },
      '400': json(ref('ValidationError'), 'The body failed validation or is not JSON.'),
      '402': json(
        { anyOf: [ref('InsufficientCredits'), ref('SpendLimitReached')] },
        "Not enough credits (`Insufficient credits`), or a spend limit for the period would be passed (`Spend limit reached`): the API key's (`scope: key`) or the account's monthly one (`scope: account`). Nothing was debited.",
      ),
      '409': json(ref('Error'), 'Idempotency-Key reused with a different body.'),
      '413': json(ref('Error'), 'Body over 10 MB.'),
      '415': json(ref('Error'), 'Content-Type is not JSON.'),
      '503': {
        ...json(
          ref('Error'),
          'Too much contention on the account right now; nothing was debited. Retry with the same Idempotency-Key.',
        ),
        headers: RETRY_AFTER,
      },
      ...commonErrors(),
      '429': {
        ...json(
          { anyOf: [ref('QueueFull'), ref('Error')] },
          "The account already has `limit` tasks queued for the provider (`Queue full`; nothing was debited, retry after Retry-After), or over this key's rate limit (`Too many requests`, Retry-After 1) or its daily quota (`Daily quota exceeded`, Retry-After 3600).",
        ),
        headers: { 'Retry-After': { ...RETRY_AFTER['Retry-After'], required: true } },
      },
    },
  };
}

const PAGE_PARAMETERS = [
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
  {
    name: 'cursor',
    in: 'query',
    required: false,
    description: 'The `next` of the previous page.',
    schema: { type: 'string' },
  },
];

/** Operations by `METHOD path`; routes without one here are documented generically (account routes). */
function operations(): Record<string, Json> {
  return {
    'POST /api/ai/image/generate': submitOperation('image'),
    'POST /api/ai/video/generate': submitOperation('video'),
    'POST /api/ai/uploads': {
      summary: 'Start an upload of a reference image',
      description:
        'Answers a presigned POST: send `uploadFields` then the `file` as multipart/form-data to `uploadUrl` within 15 minutes (the storage checks the type and size range), then use `url` in `inputImageUrls`. The file is checked on its bytes when a task names it. Uploads expire at `expiresAt`.',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['contentType', 'size'],
              additionalProperties: false,
              properties: {
                contentType: { enum: [...UPLOAD_CONTENT_TYPES] },
                size: {
                  type: 'integer',
                  minimum: 1,
                  description: 'Bytes; at most the deployment limit (20 MB by default).',
                },
              },
            },
          },
        },
      },
      responses: {
        '201': json(
          {
            type: 'object',
            required: ['uploadId', 'uploadUrl', 'uploadFields', 'expiresAt', 'url'],
            properties: {
              uploadId: { type: 'string' },
              uploadUrl: { type: 'string', description: 'Where to POST the form.' },
              uploadFields: {
                type: 'object',
                additionalProperties: { type: 'string' },
                description: 'Form fields to send, as they are, before the file.',
              },
              expiresAt: { type: 'string', format: 'date-time' },
              url: { type: 'string', pattern: '^upload://', description: 'The reference for `inputImageUrls`.' },
            },
          },
          'Upload started.',
        ),
        '400': json(ref('ValidationError'), 'A bad content type or size, or a body that is not JSON.'),
        '415': json(ref('Error'), 'Content-Type is not JSON.'),
        ...commonErrors(),
      },
    },
    'GET /api/ai/tasks/{id}': {
      summary: 'Read a task (only its creator sees it)',
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': json(ref('Task'), 'The task.'),
        '404': json(ref('Error'), "No such task of the caller's."),
        ...commonErrors(),
      },
    },
    'POST /api/ai/tasks/{id}/cancel': {
      summary: 'Cancel a queued task (only its creator can)',
      description:
        'A task still waiting here for the provider (`stage: queued`) fails with `errorCode: CANCELLED` and its credits are refunded, exactly once: a cancel and the send to the provider never both happen. No webhook is sent for it (this answer carries its state). With a session cookie, the CSRF rules of every session write apply (`Origin` and `X-CSRF-Token`).',
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': json(ref('Task'), 'Cancelled and refunded: the task, `status: 2`, `errorCode: CANCELLED`.'),
        '404': json(ref('Error'), "No such task of the caller's."),
        '409': json(
          ref('Error'),
          '`Task already started`: it is on its way to the provider or running there (nothing refunded); `Task already finished`: it has ended (a second cancel gets this).',
        ),
        ...commonErrors(),
      },
    },
    'GET /api/ai/tasks': {
      summary: "The caller's tasks, newest first",
      parameters: [
        ...PAGE_PARAMETERS,
        { name: 'status', in: 'query', required: false, schema: { enum: ['0', '1', '2'] } },
        { name: 'type', in: 'query', required: false, schema: { enum: ['image', 'video'] } },
      ],
      responses: {
        '200': json(ref('TaskList'), 'A page of tasks.'),
        '400': json(ref('ValidationError'), 'A bad parameter.'),
        ...commonErrors(),
      },
    },
    'GET /api/ai/credits': {
      summary: "The caller's balance and ledger, newest first",
      parameters: PAGE_PARAMETERS,
      responses: {
        '200': json(ref('Credits'), 'The balance and a page of the ledger.'),
        '400': json(ref('ValidationError'), 'A bad parameter.'),
        ...commonErrors(),
      },
    },
    'GET /api/account/spend-limit': {
      summary: "The account's monthly spend limit, with what it spent this month",
      description:
        'Session only (an API key gets 403). `spendLimit` is null when the account has none. `spent` counts accepts from the moment a limit was set, less refunds.',
      responses: { '200': json(ref('AccountSpendLimit'), 'The limit.'), ...commonErrors() },
    },
    'PUT /api/account/spend-limit': {
      summary: 'Set or remove the account-wide monthly spend limit',
      description:
        'Session only, with the CSRF rules of every session write. Exact from the next accept on: a submit whose cost would take the month\'s spending past it answers `402` with `scope: account`, nothing debited. `{ "spendLimit": null }` removes it.',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['spendLimit'],
              additionalProperties: false,
              properties: {
                spendLimit: {
                  oneOf: [
                    {
                      type: 'object',
                      required: ['credits', 'period'],
                      additionalProperties: false,
                      properties: {
                        credits: { type: 'integer', minimum: 0, maximum: 1_000_000_000 },
                        period: { const: 'month' },
                      },
                    },
                    { type: 'null' },
                  ],
                },
              },
            },
          },
        },
      },
      responses: {
        '200': json(ref('AccountSpendLimit'), 'The limit as set.'),
        '400': json(ref('ValidationError'), 'A bad body (`fieldErrors.spendLimit`).'),
        ...commonErrors(),
      },
    },
    'GET /api/ai/usage': {
      summary: "The account's usage: credits and tasks by day, API key or model",
      description:
        "Credits debited, refunded and net, and tasks by status, for the caller's account (whichever key or session asks). Credits count on the UTC day they moved (as the ledger: a debit on its accept's day, a refund on its own day), so a range's totals equal the ledger's for the same days; tasks count on the day they were accepted, by their status now. Read from counters kept in the same transactions as the credits, so any range costs the same whatever the number of tasks.",
      parameters: [
        {
          name: 'from',
          in: 'query',
          required: false,
          schema: { type: 'string', format: 'date' },
          description: 'First UTC day, included (default: 29 days before `to`).',
        },
        {
          name: 'to',
          in: 'query',
          required: false,
          schema: { type: 'string', format: 'date' },
          description: 'Last UTC day, included (default: today). At most 366 days from `from`.',
        },
        { name: 'groupBy', in: 'query', required: false, schema: { enum: ['day', 'key', 'model'], default: 'day' } },
      ],
      responses: {
        '200': json(ref('Usage'), 'The totals and one row per day, key or model.'),
        '400': json(ref('ValidationError'), 'A bad parameter.'),
        ...commonErrors(),
      },
    },
    'GET /api/ai/models': {
      summary: 'The models with their modes, limits and prices',
      responses: { '200': json(ref('Models'), 'The catalog.'), ...commonErrors() },
    },
    'GET /api/openapi.json': {
      summary: 'This document',
      security: [],
      responses: { '200': json({ type: 'object' }, 'The OpenAPI document.') },
    },
    'GET /api/account/alerts': {
      summary: "The account's alert settings (session only)",
      description:
        "The low-balance threshold below which the account's default webhook endpoint gets `credits.low` (see `webhooks`), and whether it was sent for the current crossing.",
      security: [{ session: [] }],
      responses: { '200': json(ref('AccountAlerts'), 'The settings.'), ...commonErrors() },
    },
    'PUT /api/account/alerts': {
      summary: 'Set or remove the low-balance threshold (session only)',
      description:
        "`credits.low` is POSTed to the account's default webhook endpoint when the balance falls below `lowBalanceThreshold`, once per crossing: again only after the balance was seen at or above it (a top-up). Setting or removing it re-arms the event. The CSRF rules of every session write apply (`Origin` and `X-CSRF-Token`).",
      security: [{ session: [] }],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['lowBalanceThreshold'],
              additionalProperties: false,
              properties: {
                lowBalanceThreshold: {
                  type: ['integer', 'null'],
                  minimum: 0,
                  description: 'Whole credits (0 or more); null removes it.',
                },
              },
            },
          },
        },
      },
      responses: {
        '200': json(ref('AccountAlerts'), 'The settings as stored.'),
        '400': json(ref('ValidationError'), 'Not a whole number of credits from 0, nor null.'),
        '415': json(ref('Error'), 'Content-Type is not JSON.'),
        ...commonErrors(),
      },
    },
    'POST /api/provider/callbacks/{taskId}': {
      summary: "The upstream provider's task-ended callback (not for API clients)",
      description:
        'Called by the provider at the `callBackUrl` the service gave it. The signature in the URL is the credential; the body is ignored, and the task is read from the provider.',
      security: [],
      parameters: [
        { name: 'taskId', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'u', in: 'query', required: true, schema: { type: 'string' }, description: "The task's owner." },
        { name: 'sig', in: 'query', required: true, schema: { type: 'string' }, description: 'The URL signature.' },
      ],
      responses: {
        '200': json({ type: 'object', properties: { received: { type: 'boolean' } } }, 'Heard.'),
        '404': json(ref('Error'), 'Unknown task or a wrong signature.'),
      },
    },
  };
}

/** A route without a detailed operation: account and key management (documented in docs/design/accounts.md). */
function genericOperation(method: string, path: string, sessionOnly: boolean): Json {
  return {
    summary: `${method} ${path}`,
    ...(sessionOnly ? { security: [{ session: [] }] } : {}),
    responses: {
      '200': json({ type: 'object' }, 'Success.'),
      default: json(ref('Error'), 'An error: `{ error, ... }`.'),
    },
  };
}

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
function webhooks(): Json {
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
      'Sent once per key budget, period and threshold, to the account\'s default endpoint (none: not sent), when the dispatcher takes the task that crossed it (README "Webhooks"). `reached` means the next task that costs more than what is left is refused (402). Signed and retried like the task events.',
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

/** The whole document. */
export function openApiDocument(version: string): Json {
  const ops = operations();
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of ROUTES) {
    const key = `${route.method} ${route.path}`;
    const operation =
      ops[key] ??
      genericOperation(
        route.method,
        route.path,
        route.path.startsWith('/api/keys') || route.path.startsWith('/api/audit'),
      );
    const pathItem = paths[route.path] ?? {};
    pathItem[route.method.toLowerCase()] = {
      operationId: route.name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()),
      ...operation,
      ...(route.auth === 'none' ? { security: [] } : {}),
    };
    paths[route.path] = pathItem;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Generation service',
      version,
      description:
        'Asynchronous image and video generation tasks paid in credits: submit a task, get its id at once, poll it until it completes or fails. Credits are debited on acceptance and refunded when the provider fails the task. Errors are `{ error, ... }`.',
    },
    servers: [{ url: '/', description: "The API's base URL (the stage URL or your custom domain)." }],
    security: [{ bearerKey: [] }, { session: [] }],
    paths,
    webhooks: webhooks(),
    components: {
      securitySchemes: {
        bearerKey: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer gsk_live_...`.' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: '__Host-session',
          description: "The dashboard's session cookie.",
        },
      },
      schemas: schemas(),
    },
  };
}

/** The document as committed: pretty JSON with a final newline, versioned as the package. */
export function openApiDocumentText(): string {
  return `${JSON.stringify(openApiDocument(packageJson.version), null, 2)}\n`;
}
