/**
 * The local stack as a child process, exactly as `npm start` runs it (local/spawn-local-stack.ts), for
 * the test files that need the whole service black box (the gateway, the pollers, the CLI against it).
 * It keeps a table of its own on its worker's DynamoDB Local (test/support/shared-dynamodb.ts), so a
 * file's stack starts no JVM. A file that tests the stack's own DynamoDB Local (its start, its data
 * directory, a restart) calls spawnLocalStack itself.
 */
import { randomUUID } from 'node:crypto';
import { type SpawnedLocalStack, type SpawnOptions, spawnLocalStack } from '../../local/spawn-local-stack';
import { testEndpoint } from './shared-dynamodb';

export interface TestStack extends SpawnedLocalStack {
  /** The stack's table: `TABLE_NAME` when the options set one, else a fresh name. */
  tableName: string;
}

/** Starts the stack on free ports, in memory, on the shared DynamoDB Local; `stop()` ends it. */
export async function spawnTestStack(options: SpawnOptions = {}): Promise<TestStack> {
  const endpoint = testEndpoint();
  const tableName = options.env?.TABLE_NAME || `stack-${randomUUID()}`;
  const stack = await spawnLocalStack({
    ...options,
    env: { DATA_DIR: ':memory:', ...options.env, DYNAMODB_ENDPOINT: endpoint, TABLE_NAME: tableName },
  });
  return { ...stack, tableName };
}
