/**
 * POST /api/account/close `{ "confirm": "close my account" }`: closes the signed-in account
 * (lifecycle/close-account.ts): credentials ended, queued tasks cancelled and refunded, tasks and
 * uploads deleted, sign-in refused from then on; the ledger and balance stay. Session only, with CSRF
 * like every session write; the session's cookie is removed. Closing again does what is left.
 */
import { endAccountCredentials } from '../auth/end-account-credentials';
import { usageEnrollmentFromEnv } from '../auth/rate-limits';
import { CLOSE_CONFIRMATION } from '../core/account-closure';
import { ValidationError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { clearSessionCookie } from '../http/cookies';
import { closeAccount } from '../lifecycle/close-account';
import { removalFromEnv } from '../runtime/removal-from-env';

/** Deployed: the stack's usage plans, from which the account's API Gateway keys are deleted. */
const enrollment = usageEnrollmentFromEnv();

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const confirm = (req.body as { confirm?: unknown } | null)?.confirm;
  if (confirm !== CLOSE_CONFIRMATION) {
    throw new ValidationError({
      fieldErrors: { confirm: [`must be exactly "${CLOSE_CONFIRMATION}"`] },
      formErrors: [],
    });
  }
  const userId = req.caller.userId;
  const actor = { type: 'session' as const, userId };
  const removal = removalFromEnv();
  const report = await closeAccount(
    {
      ...removal,
      endCredentials: ({ now }) =>
        endAccountCredentials(removal.store, enrollment, {
          userId,
          now,
          actor,
          ...(req.sourceIp ? { sourceIp: req.sourceIp } : {}),
        }),
    },
    { userId, actor, ...(req.sourceIp ? { sourceIp: req.sourceIp } : {}) },
    req.log,
  );
  return { statusCode: 200, body: report, cookies: [clearSessionCookie()] };
});
