/**
 * Jest global setup of the integration project: the run's DynamoDB Local JVMs (shared with the e2e and
 * browser projects, test/support/shared-dynamodb.ts); each test file creates its own uniquely named
 * table on its worker's JVM (test/support/dynamodb.ts).
 */
import { buildLocalStack } from '../../local/spawn-local-stack';
import { acquireSharedDynamoDb, type JestRunShape } from './shared-dynamodb';

export default async function setup(globalConfig: JestRunShape): Promise<void> {
  // Some files start `npm start`'s program: its bundle is built once here, not by each of them.
  buildLocalStack();
  await acquireSharedDynamoDb(globalConfig);
}
