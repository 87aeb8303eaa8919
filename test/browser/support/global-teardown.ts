/** Jest global teardown of the browser project: stops the local stack (also after failures). */
import type { SpawnedLocalStack } from '../../../local/spawn-local-stack';
import { releaseSharedDynamoDb } from '../../support/shared-dynamodb';

declare global {
  var __browserLocalStack: SpawnedLocalStack | undefined;
}

export default async function teardown(): Promise<void> {
  const stack = globalThis.__browserLocalStack;
  globalThis.__browserLocalStack = undefined;
  try {
    await stack?.stop();
  } finally {
    await releaseSharedDynamoDb();
  }
}
