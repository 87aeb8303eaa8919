/** The two submit operations of the OpenAPI document (contract/openapi-operations.ts). */
import { MAX_WAIT_SECONDS } from '../functions/core/wait';
import { commonErrors, RETRY_AFTER } from './openapi-common';
import { type Json, json, ref } from './openapi-json';

/** The headers of a submit's 200 and 202. */
const SUBMIT_HEADERS = {
  Location: { description: 'The task to poll.', schema: { type: 'string' } },
  'Idempotent-Replayed': {
    description: '`true` when this answers an earlier submission.',
    schema: { type: 'string' },
  },
  'Preference-Applied': {
    description: '`wait=N` when the request asked to wait (`Prefer: wait`): the seconds honoured.',
    schema: { type: 'string' },
  },
};

/** `POST /api/ai/{image|video}/generate`. */
export function submitOperation(kind: 'image' | 'video'): Json {
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
      {
        name: 'Prefer',
        in: 'header',
        required: false,
        description: `RFC 7240. \`wait=N\` (seconds; more than ${MAX_WAIT_SECONDS} counts as ${MAX_WAIT_SECONDS}): answer 200 with the Task once it ends within N seconds, else 202 as without it. Other preferences are ignored; a \`wait\` that is not a whole number is a 400.`,
        schema: { type: 'string', example: 'wait=10' },
      },
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref(kind === 'image' ? 'ImageRequest' : 'VideoRequest') } },
    },
    responses: {
      '200': {
        ...json(
          ref('Task'),
          'With `Prefer: wait=N`: the task ended within the wait (completed with its result URLs, or failed and refunded).',
        ),
        headers: SUBMIT_HEADERS,
      },
      '202': {
        ...json(
          ref('Submission'),
          'Accepted: poll the task at `Location` (with `?wait=N` to be answered when it ends).',
        ),
        headers: SUBMIT_HEADERS,
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
