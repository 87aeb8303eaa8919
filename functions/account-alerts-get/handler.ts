/**
 * GET /api/account/alerts: the signed-in account's alert settings, `{ lowBalanceThreshold, lowBalanceSent }`
 * (docs/api/webhooks.md, account events). Session only.
 */
import { apiHandler } from '../http/api-handler';
import { showAccountAlerts } from '../lifecycle/account-alerts';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => ({
  statusCode: 200,
  body: await showAccountAlerts(storeFromEnv(), req.caller.userId),
}));
