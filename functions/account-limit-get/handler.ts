/**
 * GET /api/account/spend-limit: the signed-in account's monthly spend limit, `{ spendLimit: { credits,
 * period: "month", spent, resetsAt } | null }` (docs/api/spend-limits-and-usage.md#spend-limits). Session only.
 */
import { apiHandler } from '../http/api-handler';
import { getAccountSpendLimit } from '../store/account-limit';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => ({
  statusCode: 200,
  body: { spendLimit: await getAccountSpendLimit(storeFromEnv(), req.caller.userId, new Date()) },
}));
