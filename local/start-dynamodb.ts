/**
 * DynamoDB Local as the local stack starts it, in a module of its own so that `npm start` can begin the
 * JVM's start (the longest part of starting) before it loads the rest of the stack's code.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { type DynamoDbLocalHandle, startDynamoDbLocal } from './dynamodb-local';
import type { LocalSettings } from './settings';

/** A refusal to start with a message a person can act on (printed without a stack trace). */
export class LocalStackError extends Error {}

function assertJava(): void {
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new LocalStackError('Java 17 or newer is required to run DynamoDB Local, and `java` was not found on PATH.');
  }
}

/**
 * Starts DynamoDB Local for these settings (unless DYNAMODB_ENDPOINT names another DynamoDB). Exported
 * so that `npm start` can begin the JVM's start before it even loads the rest of the stack's code.
 */
export function startSettingsDynamoDb(
  settings: LocalSettings,
): Promise<Pick<DynamoDbLocalHandle, 'endpoint' | 'stop'>> {
  if (settings.dynamodbEndpoint) {
    return Promise.resolve({ endpoint: settings.dynamodbEndpoint, stop: async () => undefined });
  }
  const inMemory = settings.dataDir === ':memory:';
  if (!inMemory) mkdirSync(resolve(settings.dataDir, 'dynamodb'), { recursive: true });
  return startDynamoDbLocal({
    port: settings.dynamodbPort,
    dataDir: inMemory ? undefined : resolve(settings.dataDir, 'dynamodb'),
  }).catch((error: unknown) => {
    // Java is looked for only now: a missing `java` is the likeliest reason, said plainly.
    assertJava();
    throw new LocalStackError(
      `DynamoDB Local did not start on port ${settings.dynamodbPort} (DYNAMODB_PORT): ${(error as Error).message}`,
    );
  });
}
