/** Jest global teardown of the integration project (jest runs it even when tests failed). */
import { releaseSharedDynamoDb } from './shared-dynamodb';

export default async function teardown(): Promise<void> {
  await releaseSharedDynamoDb();
}
