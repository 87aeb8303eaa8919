/**
 * Tasks in DynamoDB: accept (the atomic debit), read, claim a provider query, record the provider id,
 * complete, fail-and-refund (exactly once), and the pending-task index for the sweeper.
 *
 * Every state change is a conditional write on the stored status, so concurrent pollers and sweepers
 * can race freely: one wins, the others learn that they lost (an `undefined` or `refunded: false`).
 */
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { IdempotencyConflictError, UsageError } from '../core/errors';
import { type KeySpendLimit, type TaskRecord, TaskStatus, type TaskType } from '../core/task';
import { usageDay } from '../core/usage';
import { randomShard, type TransactItem } from './balance';
import * as conditions from './condition-fragments';
import { and, refreshConditions, update, updateParams, withKeyCondition } from './conditions';
import { completionLost, lostCondition, type RetryingStoreContext, withRetry } from './errors';
import { pendingShardKey, userIdFromPk } from './keys';
import { TABLE } from './table';
import * as keys from './task-keys';
import { transact } from './transaction';
import { usageCounterChange } from './usage';

/** How long an Idempotency-Key is remembered (DynamoDB's TTL removes the record afterwards). */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/** A task about to be accepted; `creditsUsed` is the price, debited by `acceptTask`. */
export interface NewTask {
  userId: string;
  taskId: string;
  type: TaskType;
  model: string;
  prompt: string;
  request: Record<string, unknown>;
  creditsUsed: number;
  keyId?: string;
  /** The key's spend limit as the authorizer read it: the accept counts the cost against it (store/spend.ts). */
  spendLimit?: KeySpendLimit;
  /** The version of the key's limit that was read (0 or absent: the key never had one). */
  spendLimitVersion?: number;
  /** Stored on the task for its webhook; not part of the price. */
  webhookUrl?: string;
  now: Date;
}

/** The Idempotency-Key of a submission and the hash of its body. */
export interface IdempotencyInput {
  key: string;
  requestHash: string;
  /** Default `IDEMPOTENCY_TTL_SECONDS` (24 h). */
  ttlSeconds?: number;
}

const TASK_KEY_ATTRIBUTES = [
  TABLE.partitionKey,
  TABLE.sortKey,
  TABLE.pendingIndex.partitionKey,
  TABLE.pendingIndex.sortKey,
  TABLE.taskIndex.partitionKey,
  TABLE.taskIndex.sortKey,
] as const;

/** The stored item without its table keys. Items are only ever written by this module. */
function toTaskRecord(item: Record<string, unknown>): TaskRecord {
  const record: Record<string, unknown> = { ...item };
  for (const name of TASK_KEY_ATTRIBUTES) delete record[name];
  return record as unknown as TaskRecord;
}

/**
 * The task an Idempotency-Key already stands for, read without writing anything (one GetItem, then the
 * task): undefined when the key is unused or its record has expired (as `idempotencyKeyFree` judges it).
 * For a submission refused before its accept (a full queue): a replay must still answer its original task.
 * @throws IdempotencyConflictError when the key was used with another body (as the accept would)
 */
export async function findIdempotentReplay(
  ctx: RetryingStoreContext,
  input: { userId: string; idempotency: IdempotencyInput; now: Date },
): Promise<TaskRecord | undefined> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: keys.idempotency(input.userId, input.idempotency.key),
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  const record = out.Item;
  if (!record || typeof record.taskId !== 'string') return undefined;
  const expiresAt = record[TABLE.ttlAttribute];
  if (typeof expiresAt === 'number' && expiresAt < Math.floor(input.now.getTime() / 1000)) return undefined;
  if (record.requestHash !== input.idempotency.requestHash) throw new IdempotencyConflictError();
  return getTask(ctx, input.userId, record.taskId);
}

/** Longer than any task id the service issues (UUIDs), well under DynamoDB's 1 KB sort key limit. */
const MAX_TASK_ID_BYTES = 256;

/**
 * Reads a task of `userId` (one consistent GetItem). Another user's task id is simply not found:
 * the key is built from the caller's id.
 */
export async function getTask(
  ctx: RetryingStoreContext,
  userId: string,
  taskId: string,
): Promise<TaskRecord | undefined> {
  // Task ids come from the URL. One longer than any id we issue cannot name a task, and DynamoDB would
  // refuse it as a key (1 KB) with an error rather than a miss.
  if (Buffer.byteLength(taskId) > MAX_TASK_ID_BYTES) return undefined;
  const out = await withRetry(
    () =>
      ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: keys.task(userId, taskId), ConsistentRead: true })),
    ctx.retry,
  );
  return out.Item ? toTaskRecord(out.Item) : undefined;
}

/** One conditional UpdateItem returning the new item, or undefined when the condition did not hold. */
export async function conditionalUpdate(
  ctx: RetryingStoreContext,
  userId: string,
  taskId: string,
  params: ReturnType<typeof updateParams>,
): Promise<TaskRecord | undefined> {
  try {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: keys.task(userId, taskId),
            ...params,
            ReturnValues: 'ALL_NEW',
          }),
        ),
      ctx.retry,
    );
    return out.Attributes ? toTaskRecord(out.Attributes) : undefined;
  } catch (error) {
    lostCondition(error);
    return undefined;
  }
}

/**
 * Claims the right to query the provider (or retry the send) for a pending task: at most one caller
 * wins per `intervalMs`, however many race. Sets `lastCheckedAt = now` (epoch ms) and adds 1 to
 * `attempts`; `updatedAt` is left alone because nothing visible changed. Returns the updated task to
 * the winner and undefined to losers (and for missing or terminal tasks); never throws for a lost claim.
 */
export async function claimRefresh(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; now: Date; intervalMs: number },
): Promise<TaskRecord | undefined> {
  const nowMs = input.now.getTime();
  return conditionalUpdate(
    ctx,
    input.userId,
    input.taskId,
    updateParams(
      update({ set: { lastCheckedAt: nowMs }, add: { attempts: 1 } }),
      and(conditions.taskIsPending(), refreshConditions.checkIntervalElapsed(nowMs - input.intervalMs)),
    ),
  );
}

/**
 * Claims the provider read a callback asks for: the task is pending, the provider has it, and no
 * callback read was claimed within `intervalMs`. Undefined when the claim is lost (nothing to do).
 */
export async function claimCallbackRead(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; now: Date; intervalMs: number },
): Promise<TaskRecord | undefined> {
  const nowMs = input.now.getTime();
  return conditionalUpdate(
    ctx,
    input.userId,
    input.taskId,
    updateParams(
      update({ set: { lastCallbackReadAt: nowMs } }),
      and(
        conditions.taskIsPending(),
        refreshConditions.providerTaskRecorded(),
        refreshConditions.callbackReadIntervalElapsed(nowMs - input.intervalMs),
      ),
    ),
  );
}

/**
 * Notes a provider callback that came before the provider's task id was recorded (the dispatcher's send
 * is still in flight, or its outcome is unknown), for the dispatcher to act on once it records the id
 * (`recordProviderTask` returns the note); with the upstream's id the callback named
 * (`callbackProviderTaskId`), which a task whose create's outcome is unknown adopts. Undefined when the id is recorded by now, or the task ended: read the task again.
 */
export async function noteEarlyCallback(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; now: Date; providerTaskId?: string },
): Promise<TaskRecord | undefined> {
  return conditionalUpdate(
    ctx,
    input.userId,
    input.taskId,
    updateParams(
      update({
        set: {
          earlyCallbackAt: input.now.getTime(),
          ...(input.providerTaskId === undefined ? {} : { callbackProviderTaskId: input.providerTaskId }),
        },
      }),
      and(conditions.taskIsPending(), conditions.providerTaskNotRecorded()),
    ),
  );
}

/**
 * Records that the provider finished a pending task and where its results are: the media worker copies
 * them (it is triggered by this very write, through the table's stream). Once per task; undefined when
 * the task is not pending or already has its results recorded.
 */
export async function recordResultsReady(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; urls: string[]; now: Date },
): Promise<TaskRecord | undefined> {
  return conditionalUpdate(
    ctx,
    input.userId,
    input.taskId,
    updateParams(
      update({ set: { resultsToCopy: input.urls, resultsReadyAt: input.now.getTime() } }),
      and(conditions.taskIsPending(), refreshConditions.resultsNotYetReady()),
    ),
  );
}

/** Records the provider's id of a pending task, once; undefined when the task is not pending or has one. */
export async function recordProviderTask(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; providerTaskId: string; now: Date },
): Promise<TaskRecord | undefined> {
  return conditionalUpdate(
    ctx,
    input.userId,
    input.taskId,
    updateParams(
      update({
        set: { providerTaskId: input.providerTaskId, stage: 'running', updatedAt: input.now.toISOString() },
        remove: ['sendClaimedAt'],
      }),
      and(conditions.taskIsPending(), conditions.providerTaskNotRecorded()),
    ),
  );
}

/**
 * Completes a pending task (`status 0 -> 1`) with its result media keys and takes it out of the
 * pending index, and counts it in the usage of its accept's day (store/usage.ts), in one transaction.
 * `task` is the pending record the caller holds (omitted: read first); the returned task is that copy
 * completed. Undefined when the task is missing or already terminal.
 */
export async function completeTask(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; resultKeys: string[]; now: Date; task?: TaskRecord },
): Promise<TaskRecord | undefined> {
  const base = input.task ?? (await getTask(ctx, input.userId, input.taskId));
  if (!base || base.status !== TaskStatus.PENDING) return undefined;
  if (base.userId !== input.userId || base.taskId !== input.taskId) {
    throw new Error('completeTask: the given task is not the one addressed by userId/taskId');
  }
  const updatedAt = input.now.toISOString();
  try {
    await transact(
      ctx,
      // Built per try: each try counts on a shard picked afresh.
      (): TransactItem[] => [
        {
          Update: {
            TableName: ctx.tableName,
            Key: keys.task(input.userId, input.taskId),
            ...updateParams(
              update({
                set: { status: TaskStatus.COMPLETED, resultKeys: input.resultKeys, updatedAt },
                remove: [TABLE.pendingIndex.partitionKey, TABLE.pendingIndex.sortKey],
              }),
              conditions.taskIsPending(),
            ),
          },
        },
        usageCounterChange(ctx, {
          userId: input.userId,
          day: usageDay(base.createdAt),
          shard: randomShard(undefined, ctx.retry?.random),
          subject: { keyId: base.keyId, model: base.model },
          change: { completed: 1 },
        }),
      ], // Racing pollers and callbacks want the same task item, as for refunds.
      { maxAttempts: 20, ...ctx.retry },
    );
  } catch (error) {
    completionLost(error, { task: 0 });
    return undefined;
  }
  return { ...base, status: TaskStatus.COMPLETED, resultKeys: input.resultKeys, updatedAt };
}

/** A pending task as the index holds it: enough to address the task and order by age. */
export interface PendingTaskRef {
  userId: string;
  taskId: string;
  createdAt: string;
}

const TASK_SK_PREFIX = 'TASK#';

/**
 * One page of pending tasks of one index shard, oldest first. `cursor` is opaque (base64url of the
 * last evaluated key); pass it back for the next page; absent when the shard is exhausted. The index
 * is eventually consistent: a just-accepted task may show up a moment later, a just-finished one may
 * still be listed (the caller re-reads the task before acting).
 */
export async function listPendingTasks(
  ctx: RetryingStoreContext,
  input: { shard: number; limit?: number; cursor?: string },
): Promise<{ tasks: PendingTaskRef[]; cursor?: string }> {
  if (!Number.isInteger(input.shard) || input.shard < 0 || input.shard >= TABLE.pendingShards) {
    throw new UsageError(`shard must be an integer in 0..${TABLE.pendingShards - 1}`);
  }
  const index = TABLE.pendingIndex;
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          IndexName: index.name,
          ...withKeyCondition({}, conditions.partitionIs(pendingShardKey(input.shard), index.partitionKey)),
          ScanIndexForward: true,
          Limit: input.limit ?? 100,
          ...(input.cursor ? { ExclusiveStartKey: decodeCursor(input.cursor) } : {}),
        }),
      ),
    ctx.retry,
  );
  const tasks = (out.Items ?? []).map((item): PendingTaskRef => {
    const pk = String(item[TABLE.partitionKey]);
    const sk = String(item[TABLE.sortKey]);
    const gsiSk = String(item[index.sortKey]);
    return {
      userId: userIdFromPk(pk),
      taskId: sk.startsWith(TASK_SK_PREFIX) ? sk.slice(TASK_SK_PREFIX.length) : sk,
      // GSI1SK is `<createdAt ISO>#<taskId>`; an ISO time holds no '#'.
      createdAt: gsiSk.slice(0, Math.max(0, gsiSk.indexOf('#'))),
    };
  });
  return out.LastEvaluatedKey ? { tasks, cursor: encodeCursor(out.LastEvaluatedKey) } : { tasks };
}

/** Every pending task of every shard, fetched page by page (for the sweeper). */
export async function* allPendingTasks(ctx: RetryingStoreContext, pageSize = 100): AsyncGenerator<PendingTaskRef> {
  for (let shard = 0; shard < TABLE.pendingShards; shard++) {
    let cursor: string | undefined;
    do {
      const page = await listPendingTasks(ctx, { shard, limit: pageSize, ...(cursor ? { cursor } : {}) });
      yield* page.tasks;
      cursor = page.cursor;
    } while (cursor);
  }
}

function encodeCursor(key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

function decodeCursor(cursor: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new UsageError('Invalid cursor');
  }
  const valid =
    typeof parsed === 'object' &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.values(parsed).every((value) => typeof value === 'string');
  if (!valid) throw new UsageError('Invalid cursor');
  return parsed as Record<string, string>;
}
