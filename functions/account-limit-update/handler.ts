/**
 * PUT /api/account/spend-limit `{ spendLimit: { credits, period: "month" } | null }`: sets or removes
 * the account-wide monthly spend limit (docs/api/spend-limits-and-usage.md#spend-limits). Exact from the next accept
 * on, whatever
 * a submit function knew (store/account-limit.ts). Session only, with CSRF like every session write;
 * audited.
 */
import { parseAccountLimit } from '../core/key-requests';
import { apiHandler } from '../http/api-handler';
import { setAccountSpendLimit } from '../money/account-limit';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const { credits } = parseAccountLimit(req.body);
  const spendLimit = await setAccountSpendLimit(storeFromEnv(), {
    userId: req.caller.userId,
    credits,
    now: new Date(),
    audit: { action: 'account.limit', actor: { type: 'session', userId: req.caller.userId }, sourceIp: req.sourceIp },
  });
  return { statusCode: 200, body: { spendLimit } };
});
