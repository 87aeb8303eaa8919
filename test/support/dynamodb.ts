/**
 * A fresh, uniquely named table on the DynamoDB Local that the integration project's global setup
 * started, so test files never see each other's items.
 */
import { randomUUID } from 'node:crypto';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { deleteTable, ensureTable } from '../../functions/store/ensure-table';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';

export type TestStore = StoreContext & { endpoint: string; dispose(): Promise<void> };

/** The endpoint exported by test/support/dynamodb-global-setup.ts. */
export function testEndpoint(): string {
  const endpoint = process.env.DYNAMODB_TEST_ENDPOINT;
  if (!endpoint) {
    throw new Error('DYNAMODB_TEST_ENDPOINT is not set: run this file in the jest "integration" project');
  }
  return endpoint;
}

/** Creates the table from the shared definition; `dispose()` deletes it and closes the client. */
export async function createTestStore(): Promise<TestStore> {
  const endpoint = testEndpoint();
  const doc = createDocumentClient({
    ...DYNAMODB_LOCAL_CLIENT_CONFIG,
    endpoint,
    // The concurrency tests fire up to 200 requests at once from this one client. The product's
    // connection timeout also runs while a request waits for a pooled socket (50 by default), so
    // give every racer its own socket and DynamoDB Local (one JVM) time to work through the burst.
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 30_000, httpAgent: { maxSockets: 256 } },
  });
  const ctx: StoreContext = { doc, tableName: `test-${randomUUID()}` };
  await ensureTable(ctx);
  return {
    ...ctx,
    endpoint,
    async dispose() {
      try {
        await deleteTable(ctx);
      } finally {
        doc.destroy();
      }
    },
  };
}
