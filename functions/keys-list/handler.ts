/**
 * GET /api/keys: the signed-in user's keys (never the keys themselves), each limited key with what it
 * spent this period. Session only.
 */
import { apiHandler } from '../http/api-handler';
import { describeKeys } from '../http/key-views';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const now = new Date();
  // Each limited key shows its limit and what it spent this period (one read per budget).
  const keys = await describeKeys(storeFromEnv(), req.caller.userId, now);
  return { statusCode: 200, body: { keys } };
});
