/**
 * GET /api/keys: the signed-in user's keys (never the keys themselves). Session only.
 */
import { apiHandler } from '../http/api-handler';
import { describeKey, listApiKeys } from '../store/api-keys';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const now = new Date();
  const keys = await listApiKeys(storeFromEnv(), req.caller.userId);
  return { statusCode: 200, body: { keys: keys.map((key) => describeKey(key, now)) } };
});
