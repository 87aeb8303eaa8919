/**
 * Browser sessions: the opaque session id, what is stored of it (its SHA-256 only), the CSRF token
 * derived from it, and the expiry rules. Plain data and crypto, no AWS.
 *
 * A session id is 32 random bytes (256 bits) in base64url. The store keeps `sha256("session:" + id)`;
 * the CSRF token is `sha256("csrf:" + id)`: anyone who holds the cookie can compute it, nobody else can
 * (not even someone who reads the table), and it needs no storage of its own.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The session cookie. `__Host-` makes browsers insist on Secure, Path=/ and no Domain. */
export const SESSION_COOKIE = '__Host-session';
/** The short-lived cookie that carries the sign-in attempt from the start to the callback. */
export const SIGN_IN_COOKIE = '__Host-sign-in';
/** The request header that carries the CSRF token on state-changing requests. */
export const CSRF_HEADER = 'x-csrf-token';

/** Defaults: 8 hours without activity, 7 days at most, 10 minutes to finish a sign-in. */
export const SESSION_DEFAULTS = { idleSeconds: 8 * 3600, absoluteSeconds: 7 * 24 * 3600, signInSeconds: 600 };

/** Activity extends the idle expiry at most once per this many seconds (a write per request would be waste). */
export const SESSION_TOUCH_INTERVAL_SECONDS = 60;

const RANDOM_ID = /^[A-Za-z0-9_-]{43}$/;

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url');
}

/** A new random id (sessions and sign-in attempts): 256 bits from the OS source, 43 base64url characters. */
export function generateOpaqueId(): string {
  return randomBytes(32).toString('base64url');
}

/** Whether a cookie value has the shape of our ids; anything else is refused without a store read. */
export function isOpaqueIdFormat(value: string): boolean {
  return RANDOM_ID.test(value);
}

/** What the store keeps of a session id. */
export function hashSessionId(sessionId: string): string {
  return sha256(`session:${sessionId}`);
}

/** The CSRF token of a session (what `GET /api/session` returns and the header must repeat). */
export function csrfTokenFor(sessionId: string): string {
  return sha256(`csrf:${sessionId}`);
}

/** Constant-time comparison of a presented CSRF token with the session's. */
export function csrfTokenMatches(sessionId: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const expected = Buffer.from(csrfTokenFor(sessionId));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * PKCE verifier, `state` and `nonce` of a sign-in attempt, all derived from the attempt's random id
 * (kept in an HttpOnly cookie): nothing about an attempt is stored server side, and the values the
 * identity provider sees (`state`, the challenge, `nonce`) reveal nothing about the verifier.
 */
export function signInSecrets(attemptId: string): { codeVerifier: string; state: string; nonce: string } {
  return {
    codeVerifier: sha256(`pkce:${attemptId}`),
    state: sha256(`state:${attemptId}`),
    nonce: sha256(`nonce:${attemptId}`),
  };
}

/** The stored view of a session that the expiry rules need (epoch seconds). */
export interface SessionTimes {
  idleExpiresAt: number;
  absoluteExpiresAt: number;
  revokedAt?: number;
}

/** Why a session is not usable, or `undefined` when it is. Expired from the expiry second on. */
export function sessionUnusable(session: SessionTimes, nowSeconds: number): 'revoked' | 'expired' | undefined {
  if (session.revokedAt !== undefined) return 'revoked';
  if (nowSeconds >= session.idleExpiresAt || nowSeconds >= session.absoluteExpiresAt) return 'expired';
  return undefined;
}

/** The idle expiry after activity at `nowSeconds`, never past the absolute expiry. */
export function extendedIdleExpiry(session: SessionTimes, nowSeconds: number, idleSeconds: number): number {
  return Math.min(session.absoluteExpiresAt, nowSeconds + idleSeconds);
}

/** Whether activity at `nowSeconds` should extend the stored idle expiry (at most once a minute). */
export function touchDue(session: SessionTimes, nowSeconds: number, idleSeconds: number): boolean {
  return extendedIdleExpiry(session, nowSeconds, idleSeconds) - session.idleExpiresAt >= SESSION_TOUCH_INTERVAL_SECONDS;
}

/** Normalised e-mail address for invitations (trimmed, lower case); `undefined` when not plausible. */
export function normalizeEmail(value: string): string | undefined {
  const email = value.trim().toLowerCase();
  if (email.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) return undefined;
  return email;
}
