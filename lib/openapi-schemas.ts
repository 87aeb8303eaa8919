/**
 * The schemas of the OpenAPI document (lib/openapi-document.ts): the request bodies converted from the
 * valibot schemas validation runs, and every response body, with the field notes JSON Schema keywords
 * cannot carry.
 */
import { toJsonSchema } from '@valibot/to-json-schema';
import type { GenericSchema } from 'valibot';
import { MAX_LOW_BALANCE_THRESHOLD } from '../functions/core/account-events';
import { IMAGE_MODELS, VIDEO_MODELS } from '../functions/core/catalog';
import { ERROR_CODES } from '../functions/core/task';
import { ImageRequestSchema, VideoRequestSchema } from '../functions/core/validation';
/** A JSON object of the document. */
export type Json = Record<string, unknown>;

/** A reference to a schema of the document's components. */
export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
/** A JSON response or request body with its description. */
export const json = (schema: Json, description: string): Json => ({
  description,
  content: { 'application/json': { schema } },
});

/** Field descriptions the JSON Schema keywords cannot carry (units, defaults, the per-model rules). */
const FIELD_NOTES: Readonly<Record<string, string>> = {
  prompt: "What to generate. At most the model's prompt cap (see GET /api/ai/models), counted in Unicode code points.",
  model: "The model id; GET /api/ai/models lists each model's modes, limits and prices.",
  negativePrompt: 'What to avoid.',
  width: 'Output width in pixels. With `height`, decides the price tier of tiered models.',
  height: 'Output height in pixels.',
  aspectRatio: "One of the model's aspect ratios (GET /api/ai/models).",
  numOutputs: 'Number of images (default 1); the price is per image.',
  seed: 'Seed for reproducible results.',
  guidanceScale: 'How closely to follow the prompt.',
  numInferenceSteps: 'Number of denoising steps.',
  inputImageUrls:
    "Reference images: http or https URLs, your uploads (`upload://<uploadId>`, POST /api/ai/uploads) or inline images (`data:image/png;base64,...`, also image/jpeg and image/webp; at most 4 MiB decoded per request, stored as an upload of yours and replaced by its reference). For images, their presence makes it an image-to-image task; for videos, image_to_video needs at least one and only the first is used by most models. At most the model's reference cap.",
  providerInput:
    'Provider-specific options, passed through (at most 32 KB as JSON, 16 levels deep). Keys that set the output count, size, resolution or duration may only repeat what was priced; `resolution` chooses the price tier (1K/2K/4K for images, 480p/720p/1080p for videos) and must be one the model offers. Numbers must be storable and keys non-empty.',
  inputMode: 'text_to_video or image_to_video; each model takes one or both (GET /api/ai/models).',
  duration: "Video length in seconds: one of the model's durations (default: its shortest).",
  fps: 'Frames per second.',
  motionStrength: 'Strength of motion.',
  cameraMotion: 'Camera motion hint.',
  webhookUrl:
    'Where to POST the signed `task.completed` or `task.failed` event when the task ends (see `webhooks` in this document); else the account default, if any. https with a public host name (not an IP address, not a local name); checked at every attempt again, with every address the name resolves to public. Needs a signing secret on the account. Not part of the price.',
};

/** A request schema in JSON Schema 2020-12 (OpenAPI 3.1's dialect), with the notes added. */
function requestSchema(schema: GenericSchema, description: string): Json {
  const converted = toJsonSchema(schema, {
    target: 'draft-2020-12',
    errorMode: 'ignore',
    // JSON Schema string lengths count code points, exactly what minCodePoints/maxCodePoints count.
    overrideAction: ({ valibotAction, jsonSchema }) => {
      const action = valibotAction as { type: string; requirement?: unknown };
      if (action.type === 'min_code_points') return { ...jsonSchema, minLength: action.requirement as number };
      if (action.type === 'max_code_points') return { ...jsonSchema, maxLength: action.requirement as number };
      return undefined;
    },
  }) as Json;
  delete converted.$schema;
  const properties = (converted.properties ?? {}) as Record<string, Json>;
  for (const [name, property] of Object.entries(properties)) {
    const note = FIELD_NOTES[name];
    if (note) property.description = note;
  }
  const providerInput = properties.providerInput;
  if (providerInput) Object.assign(providerInput, { type: 'object', additionalProperties: true });
  return { ...converted, description };
}

/** Where a pending task stands (the Task resource and the listing). */
const STAGE = {
  enum: ['queued', 'running'],
  description:
    'Pending tasks: `queued` while the task waits here for the provider (it can still be cancelled: POST /api/ai/tasks/{id}/cancel), `running` once the provider has it. Absent once the task has ended.',
} as const;

const ERROR: Json = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'A short, stable message.' } },
};

/** The document's `components.schemas`. */
export function schemas(): Json {
  const taskBase = {
    taskId: { type: 'string' },
    type: { enum: ['image', 'video'] },
    model: { type: 'string' },
    prompt: { type: 'string' },
    creditsUsed: { type: 'integer', minimum: 0 },
    creditsRefunded: { type: 'boolean' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  };
  const taskRequired = Object.keys(taskBase);
  /** Optional on every task: the reference images as the caller gave them. */
  const taskReferences = {
    inputImageUrls: {
      type: 'array',
      items: { type: 'string' },
      description:
        "Image-to-image and image-to-video tasks: the reference images as the caller gave them (its https URLs and its `upload://` references; an inline `data:` image appears as the `upload://` reference it was stored as). Never a signed URL: the provider's short-lived links are made at each send and not shown.",
    },
  };
  return {
    ImageRequest: requestSchema(
      ImageRequestSchema,
      `Body of POST /api/ai/image/generate. Models: ${IMAGE_MODELS.map((m) => m.id).join(', ')}.`,
    ),
    VideoRequest: requestSchema(
      VideoRequestSchema,
      `Body of POST /api/ai/video/generate. Models: ${VIDEO_MODELS.map((m) => m.id).join(', ')}.`,
    ),
    Submission: {
      type: 'object',
      required: ['taskId', 'status', 'creditsUsed'],
      properties: {
        taskId: { type: 'string' },
        status: {
          enum: [0, 1, 2],
          description:
            "0: accepted and queued (the provider receives it later, at its pace). An idempotent replay (`Idempotent-Replayed: true`) carries the task's current status, which may be 1 or 2.",
        },
        creditsUsed: { type: 'integer', minimum: 0, description: 'Credits debited for this task.' },
      },
    },
    Task: {
      description:
        'A task. status 0: pending, with `stage` (poll again; honour Retry-After and poll at most every 2 s); 1: completed, with `imageUrls` (image) or `videoUrl` (video); 2: failed, with `errorCode` and `errorMessage`, credits refunded.',
      oneOf: [
        {
          title: 'Pending',
          type: 'object',
          required: [...taskRequired, 'status', 'stage'],
          properties: {
            ...taskBase,
            ...taskReferences,
            status: { const: 0 },
            stage: STAGE,
            queuedAhead: {
              type: 'integer',
              minimum: 0,
              description:
                "While `stage` is `queued`, on GET /api/ai/tasks/{id} only: how many of the same account's tasks are queued before this one (they go to the provider first). Absent in listings and webhooks.",
            },
          },
        },
        {
          title: 'Completed',
          type: 'object',
          required: [...taskRequired, 'status'],
          properties: {
            ...taskBase,
            ...taskReferences,
            status: { const: 1 },
            imageUrls: { type: 'array', items: { type: 'string', format: 'uri' }, description: 'Image tasks.' },
            videoUrl: { type: 'string', format: 'uri', description: 'Video tasks.' },
            resultsExpireAt: {
              type: 'string',
              format: 'date-time',
              description:
                'When the stored results are deleted (deployed storage only). From then on `imageUrls` is empty and `videoUrl` absent.',
            },
          },
        },
        {
          title: 'Failed',
          type: 'object',
          required: [...taskRequired, 'status', 'errorCode', 'errorMessage'],
          properties: {
            ...taskBase,
            ...taskReferences,
            status: { const: 2 },
            errorCode: { enum: [...ERROR_CODES] },
            errorMessage: {
              type: 'string',
              description:
                "A stable message per errorCode, followed for provider failures by the provider's own message (at most 200 characters). CANCELLED: its owner cancelled it while it was queued.",
            },
            providerErrorCode: {
              type: 'string',
              maxLength: 64,
              description: "The provider's own failure code, when it gave one (PROVIDER_ERROR, PROVIDER_REJECTED).",
            },
          },
        },
      ],
    },
    TaskSummary: {
      type: 'object',
      required: ['taskId', 'type', 'status', 'model', 'creditsUsed', 'creditsRefunded', 'createdAt', 'updatedAt'],
      properties: {
        taskId: { type: 'string' },
        type: { enum: ['image', 'video'] },
        status: { enum: [0, 1, 2] },
        model: { type: 'string' },
        creditsUsed: { type: 'integer' },
        creditsRefunded: { type: 'boolean' },
        createdAt: { type: 'string', format: 'date-time' },
        updatedAt: { type: 'string', format: 'date-time' },
        stage: { ...STAGE, description: `${STAGE.description} Pending tasks only.` },
        errorCode: { enum: [...ERROR_CODES] },
      },
    },
    TaskList: {
      type: 'object',
      required: ['tasks', 'next'],
      properties: {
        tasks: { type: 'array', items: ref('TaskSummary') },
        next: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last.' },
      },
    },
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
