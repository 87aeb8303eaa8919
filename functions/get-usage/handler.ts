/**
 * GET /api/ai/usage?from=&to=&groupBy=day|key|model: the caller's account's credits debited, refunded
 * and net, and its tasks by status, by day, API key or model (docs/api/spend-limits-and-usage.md#usage). Read from
 * counters the
 * money transactions keep, never by reading the ledger back: a month costs the same for any number of tasks.
 */
import { apiHandler } from '../http/api-handler';
import { usageReportOf } from '../lifecycle/usage';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const { report } = await usageReportOf(storeFromEnv(), {
    userId: req.caller.userId,
    query: req.query,
    now: new Date(),
  });
  return { statusCode: 200, body: report };
});
