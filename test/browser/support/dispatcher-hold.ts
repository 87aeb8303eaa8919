/** Keeping the browser stack's dispatchers from sending, so a task submitted meanwhile stays queued. */
import { createDocumentClient } from '../../../functions/store/client';
import { backOff } from '../../../functions/store/dispatch';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../../local/dynamodb-local';
import type { BrowserTestContext } from './context';

/**
 * Holds every dispatcher back while `fn` runs: the backoff all of them honour (the capacity item's
 * `backoffUntil`, docs/design/dispatching.md), kept 15 s ahead every second, so a task
 * submitted meanwhile stays queued however slow the machine is; afterwards sends resume within 15 s.
 */
export async function withDispatcherHeld<T>(
  context: Pick<BrowserTestContext, 'dynamodbEndpoint' | 'tableName'>,
  fn: () => Promise<T>,
): Promise<T> {
  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: context.dynamodbEndpoint });
  const store = { doc, tableName: context.tableName };
  const hold = () => backOff(store, { until: Date.now() + 15_000, backoffMs: 15_000 });
  await hold();
  const renew = setInterval(() => void hold().catch(() => undefined), 1000);
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    doc.destroy();
  }
}
