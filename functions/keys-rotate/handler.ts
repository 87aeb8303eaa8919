/**
 * POST /api/keys/{keyId}/rotate `{ graceSeconds? }`: replaces one of the signed-in user's keys; the old
 * one keeps working for the grace period (0 ends it at once). Session only; audited.
 */

import { rotateKey } from '../auth/key-issuing';
import { usageEnrollmentFromEnv } from '../auth/rate-limits';
import { isKeyIdFormat } from '../core/api-key';
import { KeyNotFoundError } from '../core/errors';
import { parseRotateKey } from '../core/key-requests';
import { apiHandler } from '../http/api-handler';
import { describeIssuedKey } from '../http/key-views';
import { storeFromEnv } from '../store/from-env';

const iso = (epoch: number | undefined) => (epoch === undefined ? null : new Date(epoch * 1000).toISOString());

/** Deployed: the stack's usage plans, where the new key gets its rate limit. */
const enrollment = usageEnrollmentFromEnv();

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const keyId = req.pathParameters.keyId ?? '';
  const { graceSeconds } = parseRotateKey(req.body);
  if (!isKeyIdFormat(keyId)) throw new KeyNotFoundError();
  const store = storeFromEnv();
  const { issued, previous } = await rotateKey(store, enrollment, {
    keyId,
    ownerId: req.caller.userId,
    graceSeconds,
    audit: { action: 'key.rotate', actor: { type: 'session', userId: req.caller.userId }, sourceIp: req.sourceIp },
  });
  return {
    statusCode: 201,
    body: {
      ...describeIssuedKey(issued),
      previous: { keyId: previous.keyId, expiresAt: iso(previous.expiresAt), revokedAt: iso(previous.revokedAt) },
    },
  };
});
