/**
 * POST /api/keys/{keyId}/revoke: ends one of the signed-in user's keys at once. Session only; audited.
 */
import { isKeyIdFormat } from '../core/api-key';
import { KeyNotFoundError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { revokeApiKey } from '../store/api-keys';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const keyId = req.pathParameters.keyId ?? '';
  if (!isKeyIdFormat(keyId)) throw new KeyNotFoundError();
  const revoked = await revokeApiKey(storeFromEnv(), {
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
