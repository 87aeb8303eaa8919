/**
 * The account schemas of the OpenAPI document: credits, usage, limits, alerts and their events, the
 * catalog, and the error bodies.
 */
import { MAX_LOW_BALANCE_THRESHOLD } from '../functions/core/account-events';
import { type Json, ref } from './openapi-json';

const ERROR: Json = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'A short, stable message.' } },
};

/** From `Credits` to `InternalError`, in the document's order. */
export function accountSchemas(): Json {
  return {
    Credits: {
      type: 'object',
      required: ['balance', 'entries', 'next'],
      properties: {
        balance: { type: 'integer', minimum: 0, description: 'Equals the sum of every ledger entry.' },
        entries: {
          type: 'array',
          items: {
            type: 'object',
            required: ['kind', 'delta', 'at'],
            properties: {
              kind: { enum: ['grant', 'debit', 'refund'] },
              delta: { type: 'integer' },
              at: { type: 'string', format: 'date-time' },
              taskId: { type: 'string', description: 'Debits and refunds: the task.' },
              grantId: { type: 'string', description: 'Grants: the grant.' },
            },
          },
        },
        next: { type: ['string', 'null'] },
      },
    },
    AccountSpendLimit: {
      type: 'object',
      required: ['spendLimit'],
      properties: {
        spendLimit: {
          oneOf: [
            {
              type: 'object',
              required: ['credits', 'period', 'spent', 'resetsAt'],
              properties: {
                credits: { type: 'integer', minimum: 0 },
                period: { const: 'month' },
                spent: { type: 'integer', description: 'Credits counted this UTC month (refunds given back).' },
                resetsAt: { type: 'string', format: 'date-time', description: 'When the next month starts (UTC).' },
              },
            },
            { type: 'null' },
          ],
        },
      },
    },
    UsageFigures: {
      type: 'object',
      required: ['debited', 'refunded', 'net', 'tasks'],
      properties: {
        debited: { type: 'integer', minimum: 0, description: 'Credits debited (tasks accepted).' },
        refunded: { type: 'integer', minimum: 0, description: 'Credits refunded (tasks failed or cancelled).' },
        net: { type: 'integer', description: '`debited - refunded`.' },
        tasks: {
          type: 'object',
          required: ['accepted', 'completed', 'failed', 'pending'],
          description:
            'Tasks accepted on these days, by their status now; `pending` is neither completed nor failed yet.',
          properties: {
            accepted: { type: 'integer', minimum: 0 },
            completed: { type: 'integer', minimum: 0 },
            failed: { type: 'integer', minimum: 0 },
            pending: { type: 'integer', minimum: 0 },
          },
        },
      },
    },
    Usage: {
      type: 'object',
      required: ['from', 'to', 'groupBy', 'totals', 'rows'],
      properties: {
        from: { type: 'string', format: 'date' },
        to: { type: 'string', format: 'date' },
        groupBy: { enum: ['day', 'key', 'model'] },
        totals: ref('UsageFigures'),
        rows: {
          type: 'array',
          description:
            '`day`: every day of the range, oldest first, days without activity as zeros. `key` and `model`: each with activity, most debited first.',
          items: {
            allOf: [
              ref('UsageFigures'),
              {
                type: 'object',
                required: ['group'],
                properties: {
                  group: {
                    type: 'string',
                    description:
                      'The day (`YYYY-MM-DD`), the API key id (`session` for tasks submitted from the dashboard), or the model id.',
                  },
                  name: { type: 'string', description: "`groupBy=key`: the key's name, while the key exists." },
                },
              },
            ],
          },
        },
      },
    },
    Models: {
      type: 'object',
      required: ['models'],
      properties: { models: { type: 'array', items: { type: 'object', required: ['id', 'type', 'prices'] } } },
    },
    Error: ERROR,
    ValidationError: {
      type: 'object',
      required: ['error', 'details'],
      properties: {
        error: { const: 'Invalid request' },
        details: {
          type: 'object',
          required: ['fieldErrors', 'formErrors'],
          properties: {
            fieldErrors: {
              type: 'object',
              additionalProperties: { type: 'array', items: { type: 'string' } },
              description: 'Messages by dotted field path, e.g. `inputImageUrls.3` or `providerInput.num_images`.',
            },
            formErrors: { type: 'array', items: { type: 'string' } },
          },
        },
      },
    },
    InsufficientCredits: {
      type: 'object',
      required: ['error', 'required', 'balance'],
      properties: {
        error: { const: 'Insufficient credits' },
        required: { type: 'integer' },
        balance: { type: 'integer' },
      },
    },
    SpendLimitReached: {
      type: 'object',
      required: ['error', 'scope', 'limit', 'period', 'spent', 'resetsAt'],
      properties: {
        error: { const: 'Spend limit reached' },
        scope: {
          enum: ['key', 'account'],
          description: "Whose budget: the API key's, or the account's monthly one (`period: month`).",
        },
        limit: { type: 'integer', description: 'The limit in credits per period.' },
        period: { type: 'string', enum: ['day', 'month', 'total'], description: 'UTC day, UTC month, or ever.' },
        spent: { type: 'integer', description: 'Credits spent in this period under the limit (refunds given back).' },
        resetsAt: {
          type: ['string', 'null'],
          format: 'date-time',
          description: 'When the next period starts (UTC); null for a `total` limit.',
        },
      },
    },
    AccountAlerts: {
      type: 'object',
      required: ['lowBalanceThreshold', 'lowBalanceSent'],
      properties: {
        lowBalanceThreshold: {
          type: ['integer', 'null'],
          minimum: 0,
          maximum: MAX_LOW_BALANCE_THRESHOLD,
          description:
            "The account's default webhook endpoint gets `credits.low` when the balance falls below this many credits, once per crossing; null: never.",
        },
        lowBalanceSent: {
          type: 'boolean',
          description:
            '`credits.low` was sent for the current crossing; it is sent again only after the balance was seen at or above the threshold (a top-up).',
        },
      },
    },
    KeySpendLimitEvent: {
      type: 'object',
      required: ['keyId', 'limit', 'period', 'spent', 'resetsAt'],
      properties: {
        keyId: {
          type: 'string',
          description: 'The key whose task crossed the threshold (a rotation chain shares one budget).',
        },
        limit: { type: 'integer', description: "The key's limit in credits per period." },
        period: { type: 'string', enum: ['day', 'month', 'total'], description: 'UTC day, UTC month, or ever.' },
        spent: { type: 'integer', description: 'Credits counted in this period when the crossing was seen.' },
        resetsAt: {
          type: ['string', 'null'],
          format: 'date-time',
          description: 'When the next period starts (UTC); null for a `total` limit.',
        },
      },
    },
    CreditsLowEvent: {
      type: 'object',
      required: ['balance', 'threshold'],
      properties: {
        balance: { type: 'integer', description: 'The balance when the crossing was seen.' },
        threshold: { type: 'integer', description: "The account's `lowBalanceThreshold`." },
      },
    },
    QueueFull: {
      type: 'object',
      required: ['error', 'limit'],
      properties: {
        error: { const: 'Queue full' },
        limit: { type: 'integer', description: 'The tasks an account may have queued at once.' },
      },
    },
    InternalError: {
      type: 'object',
      required: ['error'],
      properties: { error: { const: 'Internal error' }, requestId: { type: 'string' } },
    },
  };
}
