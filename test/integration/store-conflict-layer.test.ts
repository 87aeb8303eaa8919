/**
 * The conflict-faithful layer (local/conflict-proxy.ts) answers as DynamoDB does when transactions
 * meet on an item: the SDK parses its answers into the same exceptions, with the same reasons.
 */
import { TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createTestStore, type TestStore, untilForwarded } from '../support/dynamodb';

describe('the conflict-faithful DynamoDB layer', () => {
  let store: TestStore;

  beforeAll(async () => {
    // A long hold, so the second request surely arrives while the first transaction holds its items
    // (the test acts once the layer holds them; a loaded machine can take long to send the next).
    store = await createTestStore({ conflicts: { holdMs: 3000 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  const put = (sk: string, value: number) => ({
    Put: { TableName: store.tableName, Item: { PK: 'CONFLICT#1', SK: sk, value } },
  });

  it('cancels a transaction naming a held item with TransactionConflict, None for the others', async () => {
    // Prepare
    const forwarded = store.conflicts?.stats().forwardedTransactions ?? 0;
    const holding = store.doc.send(new TransactWriteCommand({ TransactItems: [put('A', 1), put('B', 1)] }));
    await untilForwarded(store, forwarded + 1);

    // Act
    const second = await store.doc
      .send(new TransactWriteCommand({ TransactItems: [put('C', 2), put('B', 2)] }))
      .catch((error: unknown) => error);
    await holding;

    // Assert
    expect(second).toBeInstanceOf(TransactionCanceledException);
    expect((second as TransactionCanceledException).CancellationReasons).toEqual([
      { Code: 'None' },
      { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
    ]);
    expect((second as Error).message).toBe(
      'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
    );
    const c = await store.doc.send(new GetCommand({ TableName: store.tableName, Key: { PK: 'CONFLICT#1', SK: 'C' } }));
    expect(c.Item).toBeUndefined();
    expect(store.conflicts?.stats().cancelledTransactions).toBeGreaterThanOrEqual(1);
  });

  it('refuses a plain write to a held item with TransactionConflictException, and lets it through after', async () => {
    // Prepare
    const forwarded = store.conflicts?.stats().forwardedTransactions ?? 0;
    const holding = store.doc.send(new TransactWriteCommand({ TransactItems: [put('D', 1)] }));
    await untilForwarded(store, forwarded + 1);

    // Act
    const during = await store.doc
      .send(
        new UpdateCommand({
          TableName: store.tableName,
          Key: { PK: 'CONFLICT#1', SK: 'D' },
          UpdateExpression: 'SET #v = :v',
          ExpressionAttributeNames: { '#v': 'value' },
          ExpressionAttributeValues: { ':v': 9 },
        }),
      )
      .catch((error: unknown) => error);
    await holding;
    await store.doc.send(new PutCommand({ TableName: store.tableName, Item: { PK: 'CONFLICT#1', SK: 'D', value: 3 } }));

    // Assert
    expect(during).toBeInstanceOf(TransactionConflictException);
    expect((during as Error).message).toBe('Transaction is ongoing for the item');
    const d = await store.doc.send(new GetCommand({ TableName: store.tableName, Key: { PK: 'CONFLICT#1', SK: 'D' } }));
    expect(d.Item?.value).toBe(3);
  });
});
