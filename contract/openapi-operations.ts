/**
 * The documented operations of the OpenAPI document (contract/openapi-document.ts), by `METHOD path`:
 * their parameters, request bodies and every answer they can give.
 */
import { UPLOAD_CONTENT_TYPES } from '../functions/core/uploads';
import { MAX_WAIT_SECONDS } from '../functions/core/wait';
import { accountDataOperations } from './openapi-account-data';
import { commonErrors, RETRY_AFTER } from './openapi-common';
import { eventFeedOperations } from './openapi-event-feed';
import { type Json, json, ref } from './openapi-json';
import { submitOperation } from './openapi-submit';

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
export function operations(): Record<string, Json> {
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
        '402': json(
          {
            type: 'object',
            required: ['error', 'balance'],
            properties: { error: { type: 'string' }, balance: { type: 'integer' } },
          },
          'Uploads need a positive balance (`Uploads need a positive balance: add credits first`); nothing was recorded.',
        ),
        '415': json(ref('Error'), 'Content-Type is not JSON.'),
        ...commonErrors(),
        '429': {
          ...json(
            ref('Error'),
            "The account holds `limit` open uploads, the most it may (`maxOpenUploads`, default 100; no Retry-After: a place opens when one of them expires), or over this key's rate limit (`Too many requests`, Retry-After 1) or its daily quota (`Daily quota exceeded`, Retry-After 3600).",
          ),
          headers: RETRY_AFTER,
        },
      },
    },
    'DELETE /api/ai/uploads/{id}': {
      summary: 'Delete an upload (its file, the checked copy of its current version, its record)',
      description:
        'A task naming it afterwards is refused (400). A task already sent has handed the provider a signed URL, which then fails. With a session cookie, the CSRF rules of every session write apply.',
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '204': { description: 'Deleted.' },
        '404': json(
          ref('Error'),
          "No such upload of the caller's (another owner's, unknown, expired, or deleted already).",
        ),
        ...commonErrors(),
      },
    },
    'GET /api/ai/tasks/{id}': {
      summary: 'Read a task (only its creator sees it)',
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
        {
          name: 'wait',
          in: 'query',
          required: false,
          description: `Seconds (1 to ${MAX_WAIT_SECONDS}) to hold the answer until the task ends: answered within about a second of its end, or after that many seconds with the task as it is then. One request for the rate limit.`,
          schema: { type: 'integer', minimum: 1, maximum: MAX_WAIT_SECONDS },
        },
      ],
      responses: {
        '200': json(ref('Task'), 'The task.'),
        '400': json(ref('ValidationError'), '`wait` is not a whole number from 1 to 20.'),
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
    'DELETE /api/ai/tasks/{id}': {
      summary: 'Delete an ended task and its results (only its creator can)',
      description:
        'Removes the task, its result files, the checked copies of the uploads it was sent and its inline images from storage. Afterwards the task is 404 to its owner too, its result URLs no longer download and listings skip it. The ledger keeps its debit and refund (amount, time, task id, and now the model), without prompt or media. A pending task cannot be deleted: cancel it first (or wait for it to end). With a session cookie, the CSRF rules of every session write apply.',
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '204': { description: 'Deleted.' },
        '404': json(ref('Error'), "No such task of the caller's (another owner's, unknown, or deleted already)."),
        '409': json(ref('Error'), 'The task has not ended: cancel it first (`POST /api/ai/tasks/{id}/cancel`).'),
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
    ...eventFeedOperations(),
    ...accountDataOperations(),
  };
}
