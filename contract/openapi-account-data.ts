/**
 * The account's data operations of the OpenAPI document (contract/openapi-document.ts): the export and
 * the closure (issue 40), both session only.
 */
import { CLOSE_CONFIRMATION } from '../functions/core/account-closure';
import { commonErrors } from './openapi-common';
import { type Json, json, ref } from './openapi-json';

const list = (description: string): Json => ({ type: 'array', items: { type: 'object' }, description });

/** The export's and the closure's operations, by `METHOD path`. */
export function accountDataOperations(): Record<string, Json> {
  return {
    'GET /api/account/export': {
      summary: "The account's data as JSON, a page at a time (session only)",
      description:
        'Tasks (the Task resource, without result URLs), ledger, keys (never a key, its hash or prefix), webhook settings (never the secret), uploads and webhook endpoints (never their secrets). Each answer holds at most 4 MiB of JSON; `next` is the cursor of the next page, `null` on the last; the pages concatenate section by section.',
      security: [{ session: [] }],
      parameters: [
        {
          name: 'cursor',
          in: 'query',
          required: false,
          description: 'The `next` of the previous page; absent: the first page.',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '200': json(
          {
            type: 'object',
            required: [
              'userId',
              'exportedAt',
              'tasks',
              'ledger',
              'keys',
              'webhooks',
              'uploads',
              'webhookEndpoints',
              'next',
            ],
            properties: {
              userId: { type: 'string' },
              exportedAt: { type: 'string', format: 'date-time' },
              balance: { type: 'integer', description: 'On the first page only.' },
              tasks: list('Task resources, without result URLs.'),
              ledger: list('Ledger entries: kind, delta, at, taskId or grantId, model of a deleted task.'),
              keys: list('Keys: keyId, name, allowedCidrs, times, spendLimit.'),
              webhooks: list('The webhook settings (url, hasSecret, times): none or one.'),
              uploads: list('Live uploads.'),
              webhookEndpoints: list(
                'Webhook endpoints: id, url, events (null: all), enabled, description, createdAt, updatedAt, secretCreatedAt; never a secret.',
              ),
              next: { type: ['string', 'null'] },
            },
          },
          'A page of the export.',
        ),
        '400': json(ref('ValidationError'), 'A cursor this service did not make.'),
        ...commonErrors(),
      },
    },
    'POST /api/account/close': {
      summary: 'Close the account (session only)',
      description:
        'Revokes every key at once (their API Gateway keys deleted) and ends every session; a submit in flight debits nothing. Cancels and refunds the tasks still queued, deletes the ended tasks and the uploads; a task at the provider ends as usual (`tasksStillRunning`: a failure refunded as usual, its results never stored) and is deleted once it has ended. Sign-in is refused afterwards. The balance, the ledger and the audit log are kept. Idempotent. The CSRF rules of every session write apply.',
      security: [{ session: [] }],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['confirm'],
              properties: { confirm: { const: CLOSE_CONFIRMATION, description: 'Typed by the owner.' } },
            },
          },
        },
      },
      responses: {
        '200': json(
          {
            type: 'object',
            properties: Object.fromEntries(
              [
                ['userId', 'string'],
                ['closedAt', 'string'],
                ['firstClosure', 'boolean'],
                ['keysRevoked', 'integer'],
                ['sessionsEnded', 'integer'],
                ['tasksCancelled', 'integer'],
                ['creditsRefunded', 'integer'],
                ['tasksDeleted', 'integer'],
                ['tasksStillRunning', 'integer'],
                ['uploadsDeleted', 'integer'],
                ['balance', 'integer'],
              ].map(([name, type]) => [name, { type }]),
            ),
          },
          'What the closure did.',
        ),
        '400': json(ref('ValidationError'), '`confirm` is not the exact text.'),
        '415': json(ref('Error'), 'Content-Type is not JSON.'),
        ...commonErrors(),
      },
    },
  };
}
