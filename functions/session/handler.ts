/**
 * GET /api/session: who is signed in, the balance, when the session ends, and the CSRF token every
 * state-changing request must repeat in `X-CSRF-Token`. Session only (401 without one, so a page can
 * tell "signed out" from any other state).
 */

import { UnauthorizedError } from '../core/errors';
import { csrfTokenFor } from '../core/session';
import { apiHandler } from '../http/api-handler';
import { getBalance } from '../store/accounts';
import { storeFromEnv } from '../store/from-env';
import { getSessionByHash } from '../store/sessions';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const store = storeFromEnv();
  const { sessionId } = req;
  const session = req.caller.sessionHash ? await getSessionByHash(store, req.caller.sessionHash) : undefined;
  if (!sessionId || !session) throw new UnauthorizedError();
  const iso = (epoch: number) => new Date(epoch * 1000).toISOString();
  return {
    statusCode: 200,
    body: {
      userId: session.userId,
      email: session.email,
      balance: await getBalance(store, session.userId),
      csrfToken: csrfTokenFor(sessionId),
      signedInAt: session.createdAt,
      idleExpiresAt: iso(session.idleExpiresAt),
      expiresAt: iso(session.absoluteExpiresAt),
    },
  };
});
