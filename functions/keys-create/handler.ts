/**
 * POST /api/keys `{ name, allowedCidrs?, expiresAt? }`: issues a key for the signed-in user. The key is
 * in this response and never again. Session only; audited.
 */

import { issueKey } from '../auth/key-issuing';
import { usageEnrollmentFromEnv } from '../auth/rate-limits';
import { parseCreateKey } from '../core/key-requests';
import { apiHandler } from '../http/api-handler';
import { describeIssuedKey } from '../http/key-views';
import { storeFromEnv } from '../store/from-env';

/** Deployed: the stack's usage plans, where each new key gets its rate limit. */
const enrollment = usageEnrollmentFromEnv();

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const now = new Date();
  const request = parseCreateKey(req.body, now);
  const store = storeFromEnv();
  // The key's API Gateway key is enrolled before the key is written, so its first request is within its
  // limits and a refusal by API Gateway leaves no key behind (503 with Retry-After).
  const issued = await issueKey(store, enrollment, {
    userId: req.caller.userId,
    ...request,
    now,
    audit: { action: 'key.create', actor: { type: 'session', userId: req.caller.userId }, sourceIp: req.sourceIp },
  });
  return {
    statusCode: 201,
    body: describeIssuedKey(issued),
    headers: { Location: `/api/keys/${issued.keyId}` },
  };
});
