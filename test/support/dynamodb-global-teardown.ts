/** Jest global teardown: stops DynamoDB Local; jest runs it even when tests failed. */

declare global {
  // Set by dynamodb-global-setup.ts in this same process.
  var __dynamoDbLocal: { stop(): Promise<void> } | undefined;
}

export default async function teardown(): Promise<void> {
  const handle = globalThis.__dynamoDbLocal;
  globalThis.__dynamoDbLocal = undefined;
  await handle?.stop();
}
