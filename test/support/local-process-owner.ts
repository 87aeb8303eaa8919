/**
 * A stand-in for a test run that spawns local processes and is then killed (test/integration/
 * owner-exit.test.ts): `stack` starts a local stack with spawnLocalStack, `dynamodb` a DynamoDB Local
 * with startDynamoDbLocal. Prints one JSON line once it is up, then lives until it is killed.
 */
import { findFreePort, startDynamoDbLocal } from '../../local/dynamodb-local';
import { spawnLocalStack } from '../../local/spawn-local-stack';

/** The line the owner prints once what it started is ready. */
export interface OwnerReport {
  /** The spawned stack's process (`stack` only). */
  stackPid?: number;
  /** The stack's API origin (`stack` only). */
  baseUrl?: string;
  dynamodbEndpoint: string;
}

async function main(mode: string | undefined): Promise<OwnerReport> {
  if (mode === 'stack') {
    // DYNAMODB_ENDPOINT cleared: the stack must start (and own) a DynamoDB Local of its own.
    const stack = await spawnLocalStack({ env: { DYNAMODB_ENDPOINT: '' } });
    return { stackPid: stack.child.pid, baseUrl: stack.baseUrl, dynamodbEndpoint: stack.dynamodbEndpoint };
  }
  if (mode === 'dynamodb') {
    const dynamodb = await startDynamoDbLocal({ port: await findFreePort() });
    return { dynamodbEndpoint: dynamodb.endpoint };
  }
  throw new Error(`usage: local-process-owner.ts stack|dynamodb, got ${String(mode)}`);
}

main(process.argv[2]).then(
  (report) => {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    // Lives until killed, whatever else keeps the event loop busy or not.
    setInterval(() => undefined, 1 << 30);
  },
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
