/**
 * GET /api/auth/callback: where the identity provider sends the browser back. Checks the attempt
 * (cookie, `state`, PKCE, `nonce`, the ID token), then the closed beta: only an invited, verified
 * e-mail address gets a session. Anyone else ends on a "not invited" page and nothing is created.
 */

import { completeSignIn, type SignedInIdentity } from '../auth/oidc-client';
import { enrollSessionsOnce, usageEnrollmentFromEnv } from '../auth/rate-limits';
import { cookieValues } from '../auth/session-cookie';
import { sessionSettingsFromEnv } from '../auth/session-settings';
import { callerAddress, originSecretFromEnv } from '../auth/viewer-address';
import { ServiceBusyError } from '../core/errors';
import { isOpaqueIdFormat, SIGN_IN_COOKIE, signInSecrets } from '../core/session';
import { clearSignInCookie, sessionCookie } from '../http/cookies';
import { htmlPage } from '../http/html';
import { publicHandler } from '../http/public-handler';
import { logger } from '../observability/logger';
import { getClosedAt } from '../store/account-closure';
import { storeFromEnv } from '../store/from-env';
import { bindInvite, getInvite } from '../store/invites';
import { createSession } from '../store/sessions';

/** Deployed: the stack's usage plans; the account's sessions share one bucket in its plan. */
const enrollment = usageEnrollmentFromEnv();

const originSecret = originSecretFromEnv();

const START_AGAIN = { href: '/api/auth/sign-in', text: 'Sign in again' };

function failed(message: string) {
  return htmlPage(400, 'Sign-in failed', [message], START_AGAIN, { 'Set-Cookie': [clearSignInCookie()] });
}

/** The first sign-in could not enroll the account's sessions (API Gateway refused for now): try again soon. */
function busy(retryAfterSeconds: number) {
  return htmlPage(
    503,
    'Sign-in paused',
    [
      'The service could not finish setting up your account just now. Nothing is lost; please sign in again in a moment.',
    ],
    START_AGAIN,
    { 'Set-Cookie': [clearSignInCookie()], 'Retry-After': [String(retryAfterSeconds)] },
  );
}

function notInvited() {
  return htmlPage(
    403,
    'Not invited',
    [
      'This service is in a closed beta, and this account has not been invited.',
      'Ask for an invitation for your e-mail address, then sign in again. Nothing was created for this sign-in.',
    ],
    undefined,
    { 'Set-Cookie': [clearSignInCookie()] },
  );
}

function accountClosed() {
  return htmlPage(
    403,
    'Account closed',
    [
      'This account was closed, so it can no longer sign in. Its tasks, keys and uploads were removed; its ledger is kept for accounting.',
    ],
    undefined,
    { 'Set-Cookie': [clearSignInCookie()] },
  );
}

export const handler = publicHandler(async (event) => {
  const requestId = event.requestContext?.requestId;
  const attempts = cookieValues(event.headers, event.multiValueHeaders, SIGN_IN_COOKIE);
  const [attemptId] = attempts;
  if (attempts.length !== 1 || attemptId === undefined || !isOpaqueIdFormat(attemptId)) {
    return failed('This sign-in has expired or was started in another browser. Please start again.');
  }
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (value !== undefined) query.set(name, value);
  }
  if (query.has('error')) {
    return failed(`The identity provider did not sign you in (${(query.get('error') ?? '').slice(0, 100)}).`);
  }

  let identity: SignedInIdentity;
  try {
    identity = await completeSignIn(query, signInSecrets(attemptId));
  } catch (error) {
    logger.warn('sign-in callback refused', { requestId, error });
    return failed('The answer from the identity provider could not be verified. Please start again.');
  }

  const store = storeFromEnv();
  const invite = identity.email && identity.emailVerified ? await getInvite(store, identity.email) : undefined;
  const bound = invite
    ? await bindInvite(store, { email: invite.email, identity: `${identity.issuer}|${identity.subject}` })
    : false;
  if (!invite || !bound) {
    logger.info('sign-in refused: not invited', { requestId, subject: identity.subject });
    return notInvited();
  }

  // A closed account stays closed (lifecycle/close-account.ts): no session, nothing created.
  if (await getClosedAt(store, invite.userId)) {
    logger.info('sign-in refused: account closed', { requestId, userId: invite.userId });
    return accountClosed();
  }

  // Once for the account's life (recorded on the invitation): later sign-ins make no API Gateway call.
  try {
    await enrollSessionsOnce(store, enrollment, invite);
  } catch (error) {
    if (!(error instanceof ServiceBusyError)) throw error;
    logger.warn('sign-in: the sessions usage key could not be enrolled yet', { requestId, error });
    return busy(error.retryAfterSeconds);
  }
  const settings = sessionSettingsFromEnv();
  const { sessionId } = await createSession(store, {
    userId: invite.userId,
    email: invite.email,
    ...settings,
    audit: {
      action: 'session.sign-in',
      actor: { type: 'session', userId: invite.userId },
      // Sign-in comes through the distribution: the viewer's address it vouches for, not CloudFront's.
      sourceIp: callerAddress(event.requestContext?.identity?.sourceIp, event.headers, await originSecret()),
    },
  });
  return {
    statusCode: 303,
    headers: { Location: '/', 'Cache-Control': 'no-store' },
    multiValueHeaders: { 'Set-Cookie': [sessionCookie(sessionId, settings.absoluteSeconds), clearSignInCookie()] },
    body: '',
  };
});
