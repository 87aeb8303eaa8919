/**
 * Jest global setup of the integration project: one DynamoDB Local, in memory, on a free port, for all
 * test files. Each file creates its own uniquely named table (test/support/dynamodb.ts).
 */
import { findFreePort, startDynamoDbLocal } from '../../local/dynamodb-local';
import { buildLocalStack } from '../../local/spawn-local-stack';

/** The variable test workers read the endpoint from (they are spawned after this runs). */
export const DYNAMODB_TEST_ENDPOINT = 'DYNAMODB_TEST_ENDPOINT';

declare global {
  // Jest runs setup and teardown in the same process; the handle travels on globalThis.
  var __dynamoDbLocal: { stop(): Promise<void> } | undefined;
}

export default async function setup(): Promise<void> {
  // Some files start `npm start`'s program: its bundle is built once here, not by each of them.
  buildLocalStack();
  let lastError: unknown;
  // The free port can be taken between finding it and Java binding it; try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await startDynamoDbLocal({ port: await findFreePort() });
      globalThis.__dynamoDbLocal = handle;
      process.env[DYNAMODB_TEST_ENDPOINT] = handle.endpoint;
      return;
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
