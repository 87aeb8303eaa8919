/**
 * The usage report of an account (docs/api/spend-limits-and-usage.md#usage): one implementation behind two front
 * doors, the API
 * (`GET /api/ai/usage`, functions/get-usage) and the operator CLI (`usage`).
 */
import { ValidationError } from '../core/errors';
import { parseUsageQuery, type UsageReport, usageReport } from '../core/usage';
import { listApiKeys } from '../store/api-keys';
import type { RetryingStoreContext } from '../store/errors';
import { readUsageCounters } from '../store/usage';

/**
 * Reads the counters of the range (one Query, paged at 1 MB) and, for `groupBy=key`, the key names
 * (one more Query); `requests` counts them.
 * @throws ValidationError naming each bad parameter (`from`, `to`, `groupBy`)
 */
export async function usageReportOf(
  store: RetryingStoreContext,
  input: { userId: string; query: Record<string, string | undefined>; now: Date },
): Promise<{ report: UsageReport; requests: number }> {
  const { query, fieldErrors } = parseUsageQuery(input.query, input.now);
  if (Object.keys(fieldErrors).length > 0) throw new ValidationError({ fieldErrors, formErrors: [] });
  const [counters, keyNames] = await Promise.all([
    readUsageCounters(store, { userId: input.userId, from: query.from, to: query.to }),
    query.groupBy === 'key'
      ? listApiKeys(store, input.userId).then((keys) => new Map(keys.map((key) => [key.keyId, key.name])))
      : undefined,
  ]);
  return {
    report: usageReport(query, counters.items, keyNames),
    requests: counters.requests + (keyNames ? 1 : 0),
  };
}
