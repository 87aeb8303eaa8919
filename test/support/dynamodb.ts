/**
 * A fresh, uniquely named table on the DynamoDB Local that the integration project's global setup
 * started, so test files never see each other's items.
 */
import { randomUUID } from 'node:crypto';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { deleteTable, ensureTable } from '../../functions/store/ensure-table';
import { type ConflictProxy, startConflictProxy } from '../../local/conflict-proxy';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import type { ThroughputLimits } from '../../local/partition-throughput';
import { testEndpoint } from './shared-dynamodb';

export { testEndpoint };

export type TestStore = StoreContext & {
  endpoint: string;
  /** The conflict-faithful layer this store talks through, when asked for. */
  conflicts?: ConflictProxy;
  dispose(): Promise<void>;
};

/**
 * Options of a test store. `conflicts` puts the conflict-faithful layer (local/conflict-proxy.ts, on a
 * free port) between the client and DynamoDB Local, with transactions holding their items `holdMs`:
 * the money-path suites run with it, so they see DynamoDB's per-item transaction conflicts.
 */
export interface TestStoreOptions {
  /** `throughput`: the layer's per-partition limits (default DynamoDB's; local/partition-throughput.ts). */
  conflicts?: { holdMs: number; throughput?: ThroughputLimits };
  /**
   * The table's stream, for a file that runs a stream reader on it (the harness's media worker, the
   * deployed driver). Off by default: DynamoDB Local serializes a stream record with every write, a
   * quarter of its CPU in the money tests, and nothing reads a bare store's stream.
   */
  stream?: boolean;
}

/** Creates the table from the shared definition; `dispose()` deletes it and closes the client. */
export async function createTestStore(options: TestStoreOptions = {}): Promise<TestStore> {
  const conflicts = options.conflicts
    ? await startConflictProxy({
        target: testEndpoint(),
        holdMs: options.conflicts.holdMs,
        ...(options.conflicts.throughput ? { throughput: options.conflicts.throughput } : {}),
      })
    : undefined;
  const endpoint = conflicts?.endpoint ?? testEndpoint();
  const doc = createDocumentClient({
    ...DYNAMODB_LOCAL_CLIENT_CONFIG,
    endpoint,
    // The concurrency tests fire up to 200 requests at once from this one client. The product's
    // connection timeout also runs while a request waits for a pooled socket (50 by default), so
    // give every racer its own socket and DynamoDB Local (one JVM) time to work through the burst.
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 30_000, httpAgent: { maxSockets: 256 } },
  });
  const ctx: StoreContext = { doc, tableName: `test-${randomUUID()}` };
  await ensureTable(ctx, { stream: options.stream ?? false });
  return {
    ...ctx,
    endpoint,
    ...(conflicts ? { conflicts } : {}),
    async dispose() {
      try {
        await deleteTable(ctx);
      } finally {
        doc.destroy();
        await conflicts?.stop();
      }
    },
  };
}

/**
 * Waits until the store's conflict layer has forwarded `count` transactions in all: the last one then
 * holds its items (for the layer's `holdMs` from that moment). A test that needs a transaction to hold
 * items before it acts waits for this, not for a fixed time. Throws when `timeoutMs` of wall clock
 * passed first (generous: on a loaded machine the request can take long to reach the layer).
 */
export async function untilForwarded(store: Pick<TestStore, 'conflicts'>, count: number, timeoutMs = 60_000) {
  const { conflicts } = store;
  if (!conflicts) throw new Error('this store has no conflict layer');
  const deadline = Date.now() + timeoutMs;
  while (conflicts.stats().forwardedTransactions < count) {
    if (Date.now() > deadline)
      throw new Error(`the conflict layer forwarded no transaction #${count} in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
