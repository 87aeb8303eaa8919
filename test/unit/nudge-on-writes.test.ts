import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { nudgeOnWrites } from '../../local/nudge-on-writes';

/** A document client whose every request is answered `{}` at once (no engine: only the command names matter). */
function answeringClient(): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    requestHandler: {
      handle: async () => ({
        // An HTTP response as the SDK's handlers shape it (it checks the shape, not the class).
        response: { statusCode: 200, headers: {}, body: Readable.from([Buffer.from('{}')]) },
      }),
    },
  });
  return DynamoDBDocumentClient.from(client);
}

describe('the local stack’s loops woken by its own writes', () => {
  it('wakes after each write command, never after a read', async () => {
    // Prepare
    const doc = answeringClient();
    let wakes = 0;
    nudgeOnWrites(doc, () => {
      wakes++;
    });
    const table = { TableName: 't' };

    // Act
    await doc.send(new GetCommand({ ...table, Key: { PK: 'a', SK: 'b' } }));
    await doc.send(
      new QueryCommand({ ...table, KeyConditionExpression: 'PK = :p', ExpressionAttributeValues: { ':p': 'a' } }),
    );
    const afterReads = wakes;
    await doc.send(new PutCommand({ ...table, Item: { PK: 'a', SK: 'b' } }));
    await doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { ...table, Item: { PK: 'a', SK: 'c' } } }] }));

    // Assert
    expect(afterReads).toBe(0);
    expect(wakes).toBe(2);
    doc.destroy();
  });
});
