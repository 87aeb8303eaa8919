/**
 * The recorder's translation of observed calls into what IAM authorizes (local/aws-call-recorder.ts):
 * one request per transaction item, the partition key a query's key condition fixes, a copy's source.
 */
import { iamCallsOf } from '../../local/aws-call-recorder';

describe('iamCallsOf', () => {
  test('a transaction is one authorization per item, each with its own action and partition key', () => {
    // Prepare
    const input = {
      TransactItems: [
        { Put: { TableName: 't', Item: { PK: { S: 'USER#u' }, SK: { S: 'TASK#1' } } } },
        { Update: { TableName: 't', Key: { PK: { S: 'USER#u' }, SK: { S: 'ACCOUNT' } } } },
        { Delete: { TableName: 't', Key: { PK: { S: 'DISPATCH#QUEUE' }, SK: { S: '1' } } } },
        { ConditionCheck: { TableName: 't', Key: { PK: { S: 'APIKEY#h' }, SK: { S: 'APIKEY' } } } },
      ],
    };

    // Act
    const calls = iamCallsOf({ service: 'dynamodb', operation: 'TransactWriteItemsCommand', input });

    // Assert
    expect(calls.map((call) => [call.action, call.leadingKeys])).toEqual([
      ['dynamodb:PutItem', ['USER#u']],
      ['dynamodb:UpdateItem', ['USER#u']],
      ['dynamodb:DeleteItem', ['DISPATCH#QUEUE']],
      ['dynamodb:ConditionCheckItem', ['APIKEY#h']],
    ]);
  });

  test("a query's partition key is read from its key condition, through aliases, on the index's key", () => {
    // Act
    const [call] = iamCallsOf({
      service: 'dynamodb',
      operation: 'QueryCommand',
      input: {
        TableName: 't',
        IndexName: 'GSI2',
        KeyConditionExpression: '#sk > :after AND #pk = :pk',
        ExpressionAttributeNames: { '#pk': 'GSI2PK', '#sk': 'GSI2SK' },
        ExpressionAttributeValues: { ':pk': { S: 'USER#u' }, ':after': { S: '2026' } },
      },
    });

    // Assert
    expect(call).toEqual({
      action: 'dynamodb:Query',
      resource: { kind: 'table', table: 't', index: 'GSI2' },
      leadingKeys: ['USER#u'],
    });
  });

  test('a presigned PUT naming a copy source asks for PutObject on the target and GetObject on the source', () => {
    // Act
    const calls = iamCallsOf({
      service: 's3',
      operation: 'PresignUrl',
      input: {
        method: 'PUT',
        url: 'http://127.0.0.1:3000/local-uploads/uploads/to.png',
        headers: { 'x-amz-copy-source': '/local-uploads/uploads/from.png' },
      },
    });

    // Assert
    expect(calls).toEqual([
      { action: 's3:PutObject', resource: { kind: 'object', bucket: 'local-uploads', key: 'uploads/to.png' } },
      { action: 's3:GetObject', resource: { kind: 'object', bucket: 'local-uploads', key: 'uploads/from.png' } },
    ]);
  });
});
