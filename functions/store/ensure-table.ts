/**
 * Creates the table from the one definition in `table.ts` when it does not exist (DynamoDB Local for
 * the local stack and the tests; in AWS the CDK stack owns the table).
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DescribeTableCommandOutput,
  ResourceInUseException,
  ResourceNotFoundException,
  type TableDescription,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { StoreContext } from './client';
import { createTableInput, TABLE, TASK_STREAM, taskIndexDefinition } from './table';

const POLL_MS = 100;

/** Options of {@link ensureTable}. */
export interface EnsureTableOptions {
  /** How long to wait for the table and its indexes to be ACTIVE; default 30 s. */
  timeoutMs?: number;
  /**
   * The table's stream (default on, as deployed: the media worker and the deployed driver read it).
   * `false` is for a table no stream reader serves (the tests' bare stores): DynamoDB Local writes a
   * stream record, both images serialized, with every write, and that was a quarter of its CPU in a
   * money test (store-key-end: 33 to 26 CPU-s for the file).
   */
  stream?: boolean;
}

/**
 * Idempotent: creates the table (with TTL on `ttl`, as the stack does) if missing and waits until it
 * and its index are ACTIVE. Safe when several processes race to create it. `created` says whether this
 * call made it (a fresh table holds nothing yet).
 */
export async function ensureTable(ctx: StoreContext, opts: EnsureTableOptions = {}): Promise<{ created: boolean }> {
  const withStream = opts.stream ?? true;
  // Created first, described only when it exists: a fresh table (every `npm start` in memory) then
  // costs no DescribeTable at all, and DynamoDB Local creates tables ACTIVE at once.
  let existing: DescribeTableCommandOutput | undefined;
  let created = false;
  let activeAtOnce = false;
  try {
    const out = await ctx.doc.send(new CreateTableCommand(createTableInput(ctx.tableName, { stream: withStream })));
    created = true;
    activeAtOnce = isActive(out.TableDescription);
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    existing = await describe(ctx);
  }
  // A table made by an older version lacks the task-listing index: add it (tasks accepted before then
  // carry no listing keys and are not listed; each is still readable by id).
  const indexes = existing?.Table?.GlobalSecondaryIndexes ?? [];
  if (existing && !indexes.some((index) => index.IndexName === TABLE.taskIndex.name)) {
    await ctx.doc.send(
      new UpdateTableCommand({
        TableName: ctx.tableName,
        AttributeDefinitions: [
          { AttributeName: TABLE.taskIndex.partitionKey, AttributeType: 'S' },
          { AttributeName: TABLE.taskIndex.sortKey, AttributeType: 'S' },
        ],
        GlobalSecondaryIndexUpdates: [{ Create: taskIndexDefinition() }],
      }),
    );
  }
  if (!activeAtOnce) await waitUntilActive(ctx, opts.timeoutMs ?? 30_000);
  // A table made before the media worker has no stream: turn it on (records start from now on).
  if (withStream && existing && !existing.Table?.StreamSpecification?.StreamEnabled) {
    await ctx.doc.send(new UpdateTableCommand({ TableName: ctx.tableName, StreamSpecification: TASK_STREAM }));
    await waitUntilActive(ctx, opts.timeoutMs ?? 30_000);
  }
  if (created) {
    await ctx.doc.send(
      new UpdateTimeToLiveCommand({
        TableName: ctx.tableName,
        TimeToLiveSpecification: { AttributeName: TABLE.ttlAttribute, Enabled: true },
      }),
    );
  }
  return { created };
}

/** Deletes the table if it exists (test clean-up). */
export async function deleteTable(ctx: StoreContext): Promise<void> {
  try {
    await ctx.doc.send(new DeleteTableCommand({ TableName: ctx.tableName }));
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
}

async function describe(ctx: StoreContext): Promise<DescribeTableCommandOutput | undefined> {
  try {
    return await ctx.doc.send(new DescribeTableCommand({ TableName: ctx.tableName }));
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

/** The table and every index of it ACTIVE. */
function isActive(table: TableDescription | undefined): boolean {
  const indexesActive = (table?.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === 'ACTIVE');
  return table?.TableStatus === 'ACTIVE' && indexesActive;
}

async function waitUntilActive(ctx: StoreContext, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const table = (await describe(ctx))?.Table;
    if (isActive(table)) return;
    if (Date.now() > deadline) {
      throw new Error(
        `Table ${ctx.tableName} is not ACTIVE after ${timeoutMs} ms (${table?.TableStatus ?? 'missing'})`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
