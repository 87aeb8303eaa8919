/**
 * POST /api/keys/{keyId}/revoke: ends one of the signed-in user's keys at once and gives its API Gateway
 * key back. Session only; audited.
 */
import { revokeKey } from '../auth/key-issuing';
import { usageEnrollmentFromEnv } from '../auth/rate-limits';
import { isKeyIdFormat } from '../core/api-key';
import { KeyNotFoundError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { storeFromEnv } from '../store/from-env';

/** Deployed: the stack's usage plans, from which a revoked key's API Gateway key is deleted. */
const enrollment = usageEnrollmentFromEnv();

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const keyId = req.pathParameters.keyId ?? '';
  if (!isKeyIdFormat(keyId)) throw new KeyNotFoundError();
  const revoked = await revokeKey(storeFromEnv(), enrollment, {
    keyId,
    ownerId: req.caller.userId,
    audit: { action: 'key.revoke', actor: { type: 'session', userId: req.caller.userId }, sourceIp: req.sourceIp },
  });
  return {
    statusCode: 200,
    body: {
      keyId: revoked.keyId,
      revokedAt: new Date(revoked.revokedAt * 1000).toISOString(),
      alreadyRevoked: revoked.alreadyRevoked,
    },
  };
});
