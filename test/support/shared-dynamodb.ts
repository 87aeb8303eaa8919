/**
 * The one DynamoDB Local of a test run. Every jest project that needs DynamoDB acquires it in its
 * global setup (the first one starts the JVM, in memory, on a free port) and releases it in its
 * teardown (the last one stops it). Jest runs every global setup and teardown in its main process, so
 * the handle and the count travel on `globalThis`, and the workers it spawns afterwards inherit the
 * endpoint in DYNAMODB_TEST_ENDPOINT. Test files, and the stacks the setups and files start, each use a
 * table of their own on it (test/support/dynamodb.ts, test/support/test-stack.ts).
 */
import { type DynamoDbLocalHandle, findFreePort, startDynamoDbLocal } from '../../local/dynamodb-local';

/** The variable that carries the shared endpoint to the workers and to the stacks they spawn. */
export const DYNAMODB_TEST_ENDPOINT = 'DYNAMODB_TEST_ENDPOINT';

declare global {
  var __sharedDynamoDb: { handle: DynamoDbLocalHandle; users: number } | undefined;
}

/** Starts the run's DynamoDB Local unless a setup before this one did; resolves to its endpoint. */
export async function acquireSharedDynamoDb(): Promise<string> {
  const shared = globalThis.__sharedDynamoDb;
  if (shared) {
    shared.users += 1;
    return shared.handle.endpoint;
  }
  let lastError: unknown;
  // The free port can be taken between finding it and Java binding it; try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await startDynamoDbLocal({ port: await findFreePort() });
      globalThis.__sharedDynamoDb = { handle, users: 1 };
      process.env[DYNAMODB_TEST_ENDPOINT] = handle.endpoint;
      return handle.endpoint;
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/** Stops the run's DynamoDB Local when the last project that acquired it lets it go. */
export async function releaseSharedDynamoDb(): Promise<void> {
  const shared = globalThis.__sharedDynamoDb;
  if (!shared) return;
  shared.users -= 1;
  if (shared.users > 0) return;
  globalThis.__sharedDynamoDb = undefined;
  delete process.env[DYNAMODB_TEST_ENDPOINT];
  await shared.handle.stop();
}
