/**
 * PUT /api/account/alerts `{ lowBalanceThreshold: number | null }`: sets (whole credits, 0 or more) or
 * removes (null) the balance below which the account's default webhook endpoint gets `credits.low`, once
 * per crossing (docs/api/webhooks.md, account events). Session only, with CSRF like every session write.
 */
import { parseAccountAlerts } from '../core/account-events';
import { apiHandler } from '../http/api-handler';
import { setAccountAlerts } from '../lifecycle/account-alerts';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const { lowBalanceThreshold } = parseAccountAlerts(req.body);
  const alerts = await setAccountAlerts(storeFromEnv(), {
    userId: req.caller.userId,
    lowBalanceThreshold,
    now: new Date(),
  });
  return { statusCode: 200, body: alerts };
});
