/**
 * Cross-site request forgery protection for requests authenticated by the session cookie. A browser
 * attaches the cookie to requests other sites trigger (a form post), so every state-changing request
 * with a session must show two things another site cannot produce:
 * - `Origin` equal to the service's own origin (`PUBLIC_ORIGIN`); browsers send it on every POST, and
 *   a missing one is refused rather than trusted;
 * - `X-CSRF-Token` equal to the session's token (from `GET /api/session`): a custom header, which a
 *   cross-site form cannot set and a cross-site `fetch` cannot send without a CORS preflight that this
 *   API never answers.
 * Requests with an API key are not affected: no browser attaches a bearer key by itself.
 */

import { CsrfError } from '../core/errors';
import { csrfTokenMatches } from '../core/session';

/** Throws CsrfError unless the request carries the same origin and the session's CSRF token. */
export function checkCsrf(input: {
  sessionId: string;
  origin: string | undefined;
  token: string | undefined;
  expectedOrigin: string | undefined;
}): void {
  if (input.origin === undefined) throw new CsrfError('missing-origin');
  // Without a configured origin nothing can match: fail closed.
  if (input.expectedOrigin === undefined || input.origin !== input.expectedOrigin) throw new CsrfError('cross-origin');
  if (input.token === undefined || input.token === '') throw new CsrfError('missing-token');
  if (!csrfTokenMatches(input.sessionId, input.token)) throw new CsrfError('bad-token');
}
