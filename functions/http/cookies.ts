/**
 * `Set-Cookie` values for the session and sign-in cookies. Always `Secure; HttpOnly; SameSite=Lax;
 * Path=/` and never `Domain`, which the `__Host-` prefix demands. Browsers accept `Secure` cookies from
 * http://localhost and http://127.0.0.1 (potentially trustworthy origins), so the local stack sends the
 * very same cookies as the deployment.
 */
import { SESSION_COOKIE, SIGN_IN_COOKIE } from '../core/session';

function cookie(name: string, value: string, maxAgeSeconds: number): string {
  return `${name}=${value}; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; Path=/; Secure; HttpOnly; SameSite=Lax`;
}

/** The session cookie, living as long as the session can (its absolute expiry). */
export function sessionCookie(sessionId: string, maxAgeSeconds: number): string {
  return cookie(SESSION_COOKIE, sessionId, maxAgeSeconds);
}

/** Removes the session cookie from the browser. */
export function clearSessionCookie(): string {
  return cookie(SESSION_COOKIE, '', 0);
}

/** The sign-in attempt cookie (start -> callback). */
export function signInCookie(attemptId: string, maxAgeSeconds: number): string {
  return cookie(SIGN_IN_COOKIE, attemptId, maxAgeSeconds);
}

export function clearSignInCookie(): string {
  return cookie(SIGN_IN_COOKIE, '', 0);
}
