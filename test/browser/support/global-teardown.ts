/** Jest global teardown of the browser project: stops the local stack (also after failures). */
import type { SpawnedLocalStack } from '../../../local/spawn-local-stack';
import { releaseSharedDynamoDb } from '../../support/shared-dynamodb';
import type { HeldPort } from './held-port';

declare global {
  var __browserLocalStack: SpawnedLocalStack | undefined;
  var __browserWebhookPort: HeldPort | undefined;
}

export default async function teardown(): Promise<void> {
  const stack = globalThis.__browserLocalStack;
  globalThis.__browserLocalStack = undefined;
  try {
    await globalThis.__browserWebhookPort?.close();
    globalThis.__browserWebhookPort = undefined;
    await stack?.stop();
  } finally {
    await releaseSharedDynamoDb();
  }
}
