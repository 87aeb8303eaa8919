/**
 * POST /api/auth/sign-out: ends this session at once and removes the cookie. Session and CSRF token
 * required (a cross-site page must not be able to sign anyone out either). Audited.
 */
import { UnauthorizedError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { clearSessionCookie } from '../http/cookies';
import { storeFromEnv } from '../store/from-env';
import { revokeSession } from '../store/sessions';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const { userId, sessionHash } = req.caller;
  if (!sessionHash) throw new UnauthorizedError();
  await revokeSession(storeFromEnv(), {
    userId,
    sessionHash,
    audit: { action: 'session.sign-out', actor: { type: 'session', userId }, sourceIp: req.sourceIp },
  });
  return { statusCode: 200, body: { signedOut: true }, cookies: [clearSessionCookie()] };
});
