/**
 * The one description of the DynamoDB table. The CDK stack, the local stack and the tests all build the
 * table from this module, so they cannot disagree about keys, the index or TTL.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

export const TABLE = {
  partitionKey: 'PK',
  sortKey: 'SK',
  /** Sparse index of pending tasks only: the lifecycle removes GSI1PK/GSI1SK when a task ends. */
  pendingIndex: { name: 'GSI1', partitionKey: 'GSI1PK', sortKey: 'GSI1SK' },
  /**
   * Every task of a user by creation time (`GSI2PK` = `USER#<id>`, `GSI2SK` = `<createdAt>#<taskId>`), for
   * listing newest first in one Query per page. It projects the summary a listing shows, not the request.
   */
  taskIndex: {
    name: 'GSI2',
    partitionKey: 'GSI2PK',
    sortKey: 'GSI2SK',
    projected: [
      'taskId',
      'type',
      'status',
      'model',
      'creditsUsed',
      'creditsRefunded',
      'createdAt',
      'updatedAt',
      'errorCode',
    ],
  },
  /** Epoch seconds; DynamoDB deletes expired disposable items (idempotency records). */
  ttlAttribute: 'ttl',
  /** Pending tasks are spread over this many index partitions (`PENDING#0..15`). */
  pendingShards: 16,
  /** Webhook deliveries waiting for their next attempt share `GSI1` in this many partitions (`WEBHOOKDUE#0..3`). */
  webhookDueShards: 4,
  /**
   * Balance items per account (`ACCOUNT`, `ACCOUNT#1..31`): an accept writes one of them, so this many
   * accepts of one account can commit at once (docs/design/money.md). Revocations write a marker
   * into every shard, so changing it needs every account's new shards to carry the markers first.
   */
  balanceShards: 32,
} as const;

/** The table name used when `TABLE_NAME` is not set (local stack and CLI defaults). */
export const DEFAULT_TABLE_NAME = 'generation-service';

/**
 * CreateTable input for DynamoDB Local and LocalStack-free tests; the CDK stack mirrors it. `stream:
 * false` leaves the stream off, for a table no stream reader serves (ensure-table.ts).
 */
export function createTableInput(tableName: string, options: { stream?: boolean } = {}): CreateTableCommandInput {
  const gsi = TABLE.pendingIndex;
  const taskIndex = TABLE.taskIndex;
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: TABLE.partitionKey, AttributeType: 'S' },
      { AttributeName: TABLE.sortKey, AttributeType: 'S' },
      { AttributeName: gsi.partitionKey, AttributeType: 'S' },
      { AttributeName: gsi.sortKey, AttributeType: 'S' },
      { AttributeName: taskIndex.partitionKey, AttributeType: 'S' },
      { AttributeName: taskIndex.sortKey, AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: TABLE.partitionKey, KeyType: 'HASH' },
      { AttributeName: TABLE.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: gsi.name,
        KeySchema: [
          { AttributeName: gsi.partitionKey, KeyType: 'HASH' },
          { AttributeName: gsi.sortKey, KeyType: 'RANGE' },
        ],
        // The sweeper needs only the keys and the fields it decides on; it reads the task item
        // itself before acting, so a slim projection keeps index writes cheap.
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
      taskIndexDefinition(),
    ],
    // The media worker reads the table's stream (the deployed table has the same).
    ...(options.stream === false ? {} : { StreamSpecification: TASK_STREAM }),
  };
}

/** The table's stream: both images, so the worker can tell the write that made results ready. */
export const TASK_STREAM = { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' as const };

/** The task-listing index as CreateTable / UpdateTable take it (ensure-table adds it to older tables). */
export function taskIndexDefinition() {
  const index = TABLE.taskIndex;
  return {
    IndexName: index.name,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
    ],
    Projection: { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...index.projected] },
  };
}
