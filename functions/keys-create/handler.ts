/**
 * POST /api/keys `{ name, allowedCidrs?, expiresAt? }`: issues a key for the signed-in user. The key is
 * in this response and never again. Session only; audited.
 */
import { parseCreateKey } from '../core/key-requests';
import { apiHandler } from '../http/api-handler';
import { describeIssuedKey, putApiKey } from '../store/api-keys';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const now = new Date();
  const request = parseCreateKey(req.body, now);
  const issued = await putApiKey(storeFromEnv(), {
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
