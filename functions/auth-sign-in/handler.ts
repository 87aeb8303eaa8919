/**
 * GET /api/auth/sign-in: starts the OpenID Connect sign-in. A random attempt id goes into a short-lived
 * HttpOnly cookie; the PKCE verifier, `state` and `nonce` are derived from it (core/session.ts), so
 * nothing is stored; the browser is sent to the identity provider.
 */

import { authorizationUrl } from '../auth/oidc-client';
import { generateOpaqueId, SESSION_DEFAULTS, signInSecrets } from '../core/session';
import { signInCookie } from '../http/cookies';
import { publicHandler } from '../http/public-handler';

export const handler = publicHandler(async () => {
  const attemptId = generateOpaqueId();
  const url = await authorizationUrl(signInSecrets(attemptId));
  return {
    statusCode: 302,
    headers: { Location: url.href, 'Cache-Control': 'no-store' },
    multiValueHeaders: { 'Set-Cookie': [signInCookie(attemptId, SESSION_DEFAULTS.signInSeconds)] },
    body: '',
  };
});
