/** The task schemas of the OpenAPI document: the submission's answer, the Task resource and its listing. */
import { ERROR_CODES, QUEUED_AHEAD_CAP } from '../functions/core/task';
import { type Json, ref } from './openapi-json';

/** Where a pending task stands (the Task resource and the listing). */
const STAGE = {
  enum: ['queued', 'running'],
  description:
    'Pending tasks: `queued` while the task waits here for the provider (it can still be cancelled: POST /api/ai/tasks/{id}/cancel), `running` once the provider has it. Absent once the task has ended.',
} as const;

/** `Submission`, `Task`, `TaskSummary` and `TaskList`. */
export function taskSchemas(): Json {
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
              maximum: QUEUED_AHEAD_CAP,
              description: `While \`stage\` is \`queued\`, on GET /api/ai/tasks/{id} only: how many of the same account's tasks are queued before this one (they go to the provider first), counted up to ${QUEUED_AHEAD_CAP}: ${QUEUED_AHEAD_CAP} means ${QUEUED_AHEAD_CAP} or more. Absent in listings and webhooks.`,
            },
            estimatedStartAt: {
              type: 'string',
              format: 'date-time',
              description:
                "While `stage` is `queued`, on GET /api/ai/tasks/{id} only: when the task should reach the provider, from the upstream's pace, the accounts taking turns with yours and `queuedAhead` (docs/api/reference.md#when-a-queued-task-starts says how far off it may be). Absent in listings and webhooks.",
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
                'When the stored results are deleted (deployed storage, or the `resultRetention` the request asked for). From then on `imageUrls` is empty and `videoUrl` absent.',
            },
            resultsExpiredAt: {
              type: 'string',
              format: 'date-time',
              description:
                'When the results were removed by the `resultRetention` the request asked for: `imageUrls` is empty and `videoUrl` absent.',
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
  };
}
