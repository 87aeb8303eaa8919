/** Pieces every part of the OpenAPI document's operations shares. */
import { type Json, json, ref } from './openapi-json';

/** A `Retry-After` answer header. */
export const RETRY_AFTER = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
};

/** The error answers every route with credentials can give. */
export function commonErrors(): Json {
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
