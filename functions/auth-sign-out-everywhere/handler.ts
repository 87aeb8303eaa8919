/**
 * POST /api/auth/sign-out-everywhere: ends every session of the signed-in user at once (other
 * browsers included), independent of API keys, which keep working. Session and CSRF token required.
 */
import { apiHandler } from '../http/api-handler';
import { clearSessionCookie } from '../http/cookies';
import { storeFromEnv } from '../store/from-env';
import { revokeAllSessions } from '../store/sessions';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const { userId } = req.caller;
  const sessions = await revokeAllSessions(storeFromEnv(), {
    userId,
    audit: { action: 'session.revoke-all', actor: { type: 'session', userId }, sourceIp: req.sourceIp },
  });
  return { statusCode: 200, body: { signedOut: true, sessions }, cookies: [clearSessionCookie()] };
});
