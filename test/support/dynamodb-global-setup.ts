/**
 * Jest global setup of the integration project: the run's one DynamoDB Local (shared with the e2e and
 * browser projects' stacks; each test file creates its own uniquely named table, test/support/dynamodb.ts).
 */
import { buildLocalStack } from '../../local/spawn-local-stack';
import { acquireSharedDynamoDb } from './shared-dynamodb';

export { DYNAMODB_TEST_ENDPOINT } from './shared-dynamodb';

export default async function setup(): Promise<void> {
  // Some files start `npm start`'s program: its bundle is built once here, not by each of them.
  buildLocalStack();
  await acquireSharedDynamoDb();
}
