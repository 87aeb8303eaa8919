/**
 * `ensureTable` on DynamoDB Local: a fresh table in one round of creation (what every in-memory
 * `npm start` does), a second call that changes nothing, and a table of an older version brought up to
 * date (the task-listing index and the stream added).
 */
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { deleteTable, ensureTable } from '../../functions/store/ensure-table';
import { createTableInput, TABLE } from '../../functions/store/table';
import {
  DYNAMODB_LOCAL_CLIENT_CONFIG,
  type DynamoDbLocalHandle,
  findFreePort,
  startDynamoDbLocal,
} from '../../local/dynamodb-local';

// A table update waits for DynamoDB Local's background index build. On the JVM the other files share,
// that build outlasted 120 s in a fresh clone's run (the table ACTIVE, its new index still CREATING):
// this file starts an engine of its own, as `npm start` does, so only its own work is in the way.
jest.setTimeout(180_000);

describe('ensureTable on DynamoDB Local', () => {
  let engine: DynamoDbLocalHandle | undefined;
  let client: DynamoDBClient;
  let doc: ReturnType<typeof createDocumentClient>;
  const made: StoreContext[] = [];

  beforeAll(async () => {
    const port = await findFreePort();
    engine = await startDynamoDbLocal({ port });
    const config = { ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: `http://127.0.0.1:${port}` };
    client = new DynamoDBClient(config);
    doc = createDocumentClient(config);
  });

  function newContext(): StoreContext {
    const ctx = { doc, tableName: `ensure-${randomUUID()}` };
    made.push(ctx);
    return ctx;
  }

  async function describe(tableName: string) {
    return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  }

  afterAll(async () => {
    for (const ctx of made) await deleteTable(ctx);
    doc.destroy();
    client.destroy();
    await engine?.stop();
  });

  it('creates a missing table with its indexes, stream and TTL, and says it did', async () => {
    // Prepare
    const ctx = newContext();

    // Act
    const result = await ensureTable(ctx);

    // Assert
    expect(result).toEqual({ created: true });
    const table = await describe(ctx.tableName);
    expect(table?.TableStatus).toBe('ACTIVE');
    expect(table?.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual(
      [TABLE.pendingIndex.name, TABLE.taskIndex.name].sort(),
    );
    expect(table?.StreamSpecification?.StreamEnabled).toBe(true);
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: ctx.tableName }));
    expect(ttl.TimeToLiveDescription).toMatchObject({ AttributeName: TABLE.ttlAttribute, TimeToLiveStatus: 'ENABLED' });
  });

  it('leaves an existing table as it is and says it did not create it', async () => {
    // Prepare
    const ctx = newContext();
    await ensureTable(ctx);
    const before = await describe(ctx.tableName);

    // Act: DynamoDB Local builds the new index in the background; on a JVM serving other files at the
    // same time that took over the product's 30 s once, so the wait here is the suite's generous one.
    const result = await ensureTable(ctx, { timeoutMs: 120_000 });

    // Assert
    expect(result).toEqual({ created: false });
    const after = await describe(ctx.tableName);
    expect(after?.CreationDateTime).toEqual(before?.CreationDateTime);
    expect(after?.LatestStreamArn).toBe(before?.LatestStreamArn);
  });

  it('adds the task-listing index and the stream to a table of an older version', async () => {
    // Prepare: the table as an older version created it, without both.
    const ctx = newContext();
    const current = createTableInput(ctx.tableName);
    await client.send(
      new CreateTableCommand({
        ...current,
        GlobalSecondaryIndexes: current.GlobalSecondaryIndexes?.filter(
          (index) => index.IndexName !== TABLE.taskIndex.name,
        ),
        AttributeDefinitions: current.AttributeDefinitions?.filter(
          (definition) =>
            definition.AttributeName !== TABLE.taskIndex.partitionKey &&
            definition.AttributeName !== TABLE.taskIndex.sortKey,
        ),
        StreamSpecification: undefined,
      }),
    );

    // Act: DynamoDB Local builds the new index in the background; on a JVM serving other files at the
    // same time that took over the product's 30 s once, so the wait here is the suite's generous one.
    const result = await ensureTable(ctx, { timeoutMs: 120_000 });

    // Assert
    expect(result).toEqual({ created: false });
    const table = await describe(ctx.tableName);
    expect(table?.GlobalSecondaryIndexes?.map((index) => index.IndexName)).toContain(TABLE.taskIndex.name);
    expect(table?.StreamSpecification?.StreamEnabled).toBe(true);
  });
});
