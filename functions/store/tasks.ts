/**
 * Tasks in DynamoDB: accept (the atomic debit), read, claim a provider query, record the provider id,
 * complete, fail-and-refund (exactly once), and the pending-task index for the sweeper.
 *
 * Every state change is a conditional write on the stored status, so concurrent pollers and sweepers
 * can race freely: one wins, the others learn that they lost (an `undefined` or `refunded: false`).
 */
import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { IdempotencyConflictError, InsufficientCreditsError, TaskStateError, UsageError } from '../core/errors';
import { type ErrorCode, type KeySpendLimit, type TaskRecord, TaskStatus, type TaskType } from '../core/task';
import { usageDay } from '../core/usage';
import { type AcceptBudget, budgetPlan, countedOn, readRooms, roomsIfThin } from './accept-budgets';
import {
  credentialGuard,
  keyEndCheck,
  pauseAfterConflict,
  randomShard,
  readShards,
  SHARD_ATTEMPTS,
  type ShardBalances,
  shardChange,
  type TransactItem,
  totalOf,
} from './balance';
import * as conditions from './condition-fragments';
import { and, attr, conditionParams, type Expr, refreshConditions, update, updateParams } from './conditions';
import {
  acceptFailure,
  busy,
  completionLost,
  lostCondition,
  type RetryingStoreContext,
  refundFailure,
  type SpendScope,
  withRetry,
} from './errors';
import { pendingShardKey, userIdFromPk } from './keys';
import { ledgerEntryItem } from './ledger-entry';
import type { ShardPlan } from './shard-plan';
import {
  accountBudget,
  knownAccountLimit,
  learnAccountLimit,
  spendCounterChange,
  spendCounterOf,
  spendCounterRefund,
} from './spend';
import { TABLE } from './table';
import * as keys from './task-keys';
import { layoutBeforeFirstTry, planTry, readLayout } from './thin-balance';
import { usageCounterChange, usageRefundChanges } from './usage';

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
 * Accepts a task in ONE `TransactWriteItems`: debit a balance shard picked at random
 * (`balance >= cost`, and the caller's key not ended), put the task (pending, in the pending index), put
 * the ledger debit and, with an Idempotency-Key, put the idempotency record. When that shard cannot
 * cover the cost, the shards are read (one Query) and the debit is spread over several of them in the
 * same single transaction (balance.ts).
 *
 * - Key seen before with the same request hash: nothing is written; the original task is read and
 *   returned with `replayed: true` (2 requests in all).
 * - Key seen before with another hash: `IdempotencyConflictError` (checked before the balance).
 * - Not enough credits in all shards together, or no account: `InsufficientCreditsError(cost, balance)`.
 * - The caller's key revoked or past its grace end (`task.keyId`): `UnauthorizedError`, nothing written.
 * - The caller's key has a spend limit (`task.spendLimit`): its period's counter is one more item
 *   (store/spend.ts); past the limit, `SpendLimitError` (402), nothing written. A limit changed since the
 *   authorizer read it fails the key-end guard: `ServiceBusyError`, nothing written.
 * - The account has a monthly spend limit: its month's counter is one more item the same way
 *   (`SpendLimitError` with scope `account`). The debits state the limit's version the process knows;
 *   a debit that finds another one teaches it and is tried again at once (store/spend.ts).
 * - A conflict on a shard is retried at once on another shard; after `SHARD_ATTEMPTS` tries,
 *   `ServiceBusyError` (nothing written), or `InsufficientCreditsError` when the account can no longer
 *   pay by then.
 */
export async function acceptTask(
  ctx: RetryingStoreContext,
  input: { task: NewTask; idempotency?: IdempotencyInput },
): Promise<{ task: TaskRecord; replayed: boolean }> {
  const { task, idempotency } = input;
  const cost = task.creditsUsed;
  if (!Number.isSafeInteger(cost) || cost < 0) throw new Error(`creditsUsed must be a whole number >= 0, got ${cost}`);
  const createdAt = task.now.toISOString();
  const nowSeconds = Math.floor(task.now.getTime() / 1000);
  // A key with a spend limit: the period's counter joins the transaction (store/spend.ts).
  const limit = task.keyId === undefined ? undefined : task.spendLimit;
  const spend = limit ? spendCounterOf(task.userId, limit, task.now) : undefined;
  const record: TaskRecord = {
    userId: task.userId,
    taskId: task.taskId,
    type: task.type,
    status: TaskStatus.PENDING,
    model: task.model,
    prompt: task.prompt,
    request: task.request,
    creditsUsed: cost,
    creditsRefunded: false,
    createdAt,
    updatedAt: createdAt,
    attempts: 0,
    // Sent later, by the dispatcher, at the upstream's pace (lifecycle/dispatch.ts).
    stage: 'queued',
    // Polls claim a provider read one interval from now at the earliest: a task just accepted has nothing
    // to ask the provider yet (the dispatcher sends it; polls never send).
    lastCheckedAt: task.now.getTime(),
    ...(task.keyId === undefined ? {} : { keyId: task.keyId }),
    ...(spend ? { spendCounter: spend.key.SK } : {}),
    // Undefined values are left out of the item (the document client's removeUndefinedValues).
    webhookUrl: task.webhookUrl,
  };

  const items: TransactItem[] = [
    {
      Put: {
        TableName: ctx.tableName,
        Item: {
          ...keys.task(task.userId, task.taskId),
          ...keys.pendingIndex(task.taskId, createdAt),
          ...keys.taskListing(task.userId, task.taskId, createdAt),
          ...record,
        },
        ...conditionParams(conditions.itemIsNew()),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    {
      Put: {
        TableName: ctx.tableName,
        Item: ledgerEntryItem({ userId: task.userId, kind: 'debit', delta: -cost, at: createdAt, taskId: task.taskId }),
        ...conditionParams(conditions.itemIsNew()),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
  ];
  if (idempotency) {
    items.push({
      Put: {
        TableName: ctx.tableName,
        Item: {
          ...keys.idempotency(task.userId, idempotency.key),
          taskId: task.taskId,
          requestHash: idempotency.requestHash,
          createdAt,
          [TABLE.ttlAttribute]: nowSeconds + (idempotency.ttlSeconds ?? IDEMPOTENCY_TTL_SECONDS),
        },
        ...conditionParams(conditions.idempotencyKeyFree(nowSeconds)),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  }
  // The task's place in the dispatch queue: a new item, so accepts never contend on it. Last, so the
  // indexes of the items above (read by acceptFailure) stay as they are.
  items.push({
    Put: {
      TableName: ctx.tableName,
      // The model, so the dispatcher can pass over the tasks of a model the upstream refuses for now
      // without reading them (docs/design/dispatching.md, "Backoff").
      Item: {
        ...keys.queueEntry(task.userId, createdAt, task.taskId),
        userId: task.userId,
        taskId: task.taskId,
        model: task.model,
      },
    },
  });
  // Every accept checks its credential's end on its guard for the first debited shard (keyEndCheck): an
  // API key's, or the account's sessions' (credentialGuard), which closing the account ends.
  const keyGuard = credentialGuard(task.keyId, nowSeconds, task.spendLimitVersion ?? 0);

  // The account's monthly limit, as this process knows it (store/spend.ts): its version goes into
  // every debit's condition, its counter into the transaction when there is a limit.
  let account = knownAccountLimit(task.userId);
  const taskItem = items[0]?.Put?.Item;

  const random = ctx.retry?.random ?? Math.random;
  const avoid = new Set<number>();
  let target = randomShard(avoid, random);
  // Unknown until the picked shard turns out short, or read first on a thin balance (store/thin-balance.ts).
  let balances: ShardBalances | undefined = await layoutBeforeFirstTry(ctx, task.userId, cost);
  // The same for each budget's counter shards (store/spend.ts): unknown, the cost is taken from the
  // shard number the balance is debited on; read when a shard is short or the shares are too thin.
  const budgets = new Map<SpendScope, AcceptBudget>();
  if (limit) budgets.set('key', { limit, ...(await roomsIfThin(ctx, task.userId, limit, cost, task.now)) });
  for (let attempt = 1; ; attempt++) {
    const accountLimit = account.credits === undefined ? undefined : accountBudget(account.credits);
    if (accountLimit && budgets.get('account')?.limit.credits !== accountLimit.credits) {
      budgets.set('account', {
        limit: accountLimit,
        ...(await roomsIfThin(ctx, task.userId, accountLimit, cost, task.now)),
      });
    } else if (!accountLimit) budgets.delete('account');
    const { plan, unpaid } = planTry(balances, cost, { target, avoid, random, firstTry: attempt === 1 });
    const first = plan?.[0]?.shard ?? target;
    // A spent budget answers 402 before the balance does.
    const spendPlans = new Map<SpendScope, ShardPlan>();
    const exhausted = new Map<SpendScope, Error>();
    for (const [scope, budget] of budgets) {
      const planned = budgetPlan(budget, { scope, cost, prefer: first, random, at: task.now });
      spendPlans.set(scope, planned.plan);
      if (planned.exhausted) exhausted.set(scope, planned.exhausted);
    }
    if (!plan) throw new InsufficientCreditsError(cost, totalOf(balances ?? []));
    const shardItems = plan.map(({ shard, delta }) =>
      shardChange(ctx, { userId: task.userId, shard, delta, at: createdAt, accountLimitVersion: account.version }),
    );
    if (keyGuard) shardItems.push(keyEndCheck(ctx, task.userId, keyGuard, first));
    const keyEndIndex = shardItems.length - 1;
    const spendIndexes = new Map<SpendScope, number[]>();
    for (const [scope, spendPlan] of spendPlans) {
      const budget = budgets.get(scope);
      if (!budget) continue;
      const indexes: number[] = [];
      for (const { shard, delta } of spendPlan) {
        indexes.push(shardItems.length);
        shardItems.push(
          spendCounterChange(ctx, { userId: task.userId, limit: budget.limit, shard, delta, at: task.now }),
        );
      }
      spendIndexes.set(scope, indexes);
    }
    // Where the cost was counted, for a refund to give it back there.
    const counted = countedOn(task.userId, budgets, spendPlans, task.now);
    if (taskItem) Object.assign(taskItem, counted);
    const accepted: TaskRecord = { ...record };
    for (const [name, value] of Object.entries(counted)) {
      if (value !== undefined) Object.assign(accepted, { [name]: value });
    }
    const offset = shardItems.length;
    try {
      // A new command per try: the SDK gives each one a fresh ClientRequestToken, so a retried
      // (cancelled) transaction is evaluated again rather than answered from the token cache.
      // Usage: the day's counters, on the shard this try debits (store/usage.ts). Last, so the indexes
      // acceptFailure reads stay as they are.
      const usage = usageCounterChange(ctx, {
        userId: task.userId,
        day: usageDay(createdAt),
        shard: first,
        subject: { keyId: task.keyId, model: task.model },
        change: { debited: cost, accepted: 1 },
      });
      await ctx.doc.send(new TransactWriteCommand({ TransactItems: [...shardItems, ...items, usage] }));
      return { task: accepted, replayed: false };
    } catch (error) {
      const outcome = acceptFailure(error, {
        shards: plan.map(({ shard }) => shard),
        task: offset,
        ledger: offset + 1,
        ...(idempotency ? { idempotency: offset + 2, requestHash: idempotency.requestHash } : {}),
        ...(keyGuard ? { keyEnd: keyEndIndex, nowSeconds } : {}),
        ...(spendIndexes.has('key') ? { spend: spendIndexes.get('key') } : {}),
        accountLimitVersion: account.version,
        ...(spendIndexes.has('account') ? { accountSpend: spendIndexes.get('account') } : {}),
      });
      if (outcome.kind === 'replay') {
        const original = await getTask(ctx, task.userId, outcome.replayOf);
        // Its task was deleted by its owner (DELETE /api/ai/tasks/{id}): the key stays used, for its 24 h.
        if (!original) throw new TaskStateError('The task of this Idempotency-Key was deleted: use a new key');
        return { task: original, replayed: true };
      }
      // A budget read as spent, and its shard short on this try: 402, naming the budget.
      const spent = outcome.kind === 'short' ? outcome.spend?.find((scope) => exhausted.has(scope)) : undefined;
      if (spent) throw exhausted.get(spent);
      if (unpaid && outcome.kind === 'short') throw unpaid;
      if (attempt >= (ctx.retry?.maxAttempts ?? SHARD_ATTEMPTS)) {
        const [budgetSpent] = exhausted.values();
        if (budgetSpent) throw budgetSpent;
        // Out of tries. Busy (503, "try again") is only the truth while the account could still pay:
        // when the race has spent its credits meanwhile, the honest answer is 402.
        const latest = await readShards(ctx, task.userId);
        if (totalOf(latest) < cost) throw new InsufficientCreditsError(cost, totalOf(latest));
        // A budget spent by the racing accepts meanwhile is told by the retry the 503 asks for (the
        // counter then refuses at once): reading it here cost the submit functions 0.4 KB of budget.
        throw busy(error);
      }
      if (outcome.kind === 'account-limit') {
        // Learnt: the next try (at once: this is not contention, and counted, as a change being stamped may show two
        // versions for a moment) states the limit now stamped.
        account = { version: outcome.version, credits: outcome.credits };
        learnAccountLimit(task.userId, account);
        continue;
      }
      if (outcome.kind === 'conflict') {
        for (const shard of outcome.conflictedShards) avoid.add(shard);
        // A gathering that met a conflict backs off before it reads again (store/thin-balance.ts).
        await pauseAfterConflict(ctx, attempt, outcome.conflictedShards.length > 0 && plan.length === 1);
        target = randomShard(avoid, random);
      }
      // What was read is stale once a try failed: read again what was read, and what turned out short.
      const short = outcome.kind === 'short' ? outcome : undefined;
      if (balances || (short && short.shards.length > 0)) balances = await readLayout(ctx, task.userId, cost);
      for (const [scope, budget] of budgets) {
        if (budget.rooms || short?.spend?.includes(scope)) {
          budget.rooms = await readRooms(ctx, task.userId, budget.limit, task.now);
        }
      }
    }
  }
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
    await withRetry(
      () =>
        ctx.doc.send(
          new TransactWriteCommand({
            TransactItems: [
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
            ],
          }),
        ),
      // Racing pollers and callbacks want the same task item, as for refunds.
      { maxAttempts: 20, ...ctx.retry },
    );
  } catch (error) {
    completionLost(error, { task: 0 });
    return undefined;
  }
  return { ...base, status: TaskStatus.COMPLETED, resultKeys: input.resultKeys, updatedAt };
}

/** Input of `failAndRefund`. */
export interface FailAndRefundInput {
  userId: string;
  taskId: string;
  errorCode: ErrorCode;
  /** The client-facing message; the caller bounds it (see `clientErrorMessage`), so the item stays small. */
  errorMessage: string;
  /** The provider's own failure code, bounded by the caller, when the provider gave one. */
  providerErrorCode?: string;
  now: Date;
  /**
   * The pending record the caller already holds (e.g. from `claimRefresh` or `getTask`). Given, the
   * refund costs ONE request: its `creditsUsed` and `createdAt` are used, and the transaction checks
   * that the stored task still has exactly those values. Omitted, the task is read first (2 requests).
   * The returned task is this copy with the failure applied, so internals that changed since it was
   * read (`lastCheckedAt`, `attempts`) may lag; the public fields are exact.
   */
  task?: TaskRecord;
  /**
   * Only while the task is still queued here (`stage = queued`, no provider id): a cancel. A dispatcher's
   * `claimSend` needs `stage = queued` too, so exactly one of them wins. When the task has left the queue
   * meanwhile, nothing is written and the current task comes back with `refunded: false`.
   */
  whileQueued?: boolean;
}

/** The conditions of a cancel: the task is still queued here and nobody has sent it. */
const stillQueued = (): Expr => ({
  expression: `${attr('stage')} = :cancelQueuedStage AND attribute_not_exists(${attr('providerTaskId')})`,
  names: { [attr('stage')]: 'stage', [attr('providerTaskId')]: 'providerTaskId' },
  values: { ':cancelQueuedStage': 'queued' },
});

/**
 * Fails a pending task and gives its credits back, exactly once however many callers race: ONE
 * `TransactWriteItems` that moves the task `status 0 -> 2` and `creditsRefunded false -> true` (both
 * conditions), sets the error fields, leaves the pending index, adds `creditsUsed` to one balance shard
 * (picked at random, again on each retry) and puts the ledger refund. The refund entry's key is the task's (creation time, id, 'refund'), so even
 * the ledger cannot hold two refunds of one task.
 *
 * Returns `{ task, refunded: true }` to the caller that refunded, `{ task: <current>, refunded: false }`
 * when the task was already terminal (read after the failed attempt), undefined when it does not exist.
 */
export async function failAndRefund(
  ctx: RetryingStoreContext,
  input: FailAndRefundInput,
): Promise<{ task: TaskRecord; refunded: boolean } | undefined> {
  let base = input.task;
  if (base) {
    if (base.userId !== input.userId || base.taskId !== input.taskId) {
      throw new Error('failAndRefund: the given task is not the one addressed by userId/taskId');
    }
  } else {
    base = await getTask(ctx, input.userId, input.taskId);
    if (!base) return undefined;
    if (base.status !== TaskStatus.PENDING || base.creditsRefunded) return { task: base, refunded: false };
  }

  const updatedAt = input.now.toISOString();
  const credits = base.creditsUsed;
  const items = (shard: number): TransactItem[] => [
    {
      Update: {
        TableName: ctx.tableName,
        Key: keys.task(input.userId, input.taskId),
        ...updateParams(
          update({
            set: {
              status: TaskStatus.FAILED,
              creditsRefunded: true,
              errorCode: input.errorCode,
              errorMessage: input.errorMessage,
              ...(input.providerErrorCode === undefined ? {} : { providerErrorCode: input.providerErrorCode }),
              updatedAt,
            },
            remove: [TABLE.pendingIndex.partitionKey, TABLE.pendingIndex.sortKey],
          }),
          and(
            conditions.taskIsPending(),
            conditions.notYetRefunded(),
            conditions.chargedAs(credits, base.createdAt),
            ...(input.whileQueued ? [stillQueued()] : []),
          ),
        ),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    shardChange(ctx, { userId: input.userId, shard, delta: credits, at: updatedAt }),
    {
      Put: {
        TableName: ctx.tableName,
        Item: ledgerEntryItem(
          { userId: input.userId, kind: 'refund', delta: credits, at: updatedAt, taskId: input.taskId },
          base.createdAt,
        ),
        ...conditionParams(conditions.itemIsNew()),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    // Accepted with a limited key: the credits go back to the budget of the period they were counted in.
    ...(base.spendCounter
      ? [
          spendCounterRefund(ctx, {
            userId: input.userId,
            sk: base.spendCounter,
            shard: base.spendShard,
            credits,
            at: input.now,
          }),
        ]
      : []),
    ...(base.accountSpendCounter
      ? [
          spendCounterRefund(ctx, {
            userId: input.userId,
            sk: base.accountSpendCounter,
            shard: base.accountSpendShard,
            credits,
            at: input.now,
          }),
        ]
      : []),
    // Usage: the refund on its day, the failed task on its accept's day (store/usage.ts).
    ...usageRefundChanges(ctx, {
      userId: input.userId,
      shard,
      subject: { keyId: base.keyId, model: base.model },
      credits,
      acceptedAt: base.createdAt,
      at: updatedAt,
    }),
  ];

  try {
    // Each try credits a shard picked afresh, so a shard held by an accept is rarely met twice.
    await withRetry(
      () => ctx.doc.send(new TransactWriteCommand({ TransactItems: items(randomShard(undefined, ctx.retry?.random)) })),
      // Racing pollers and sweepers all want the same task item, and each conflict costs a loser one
      // try: a larger budget than an accept's, so a crowd of them still ends in one refund, not a 503.
      { maxAttempts: 20, ...ctx.retry },
    );
  } catch (error) {
    if (refundFailure(error, { task: 0, ledger: 2 }) === 'task-missing') return undefined;
    const current = await getTask(ctx, input.userId, input.taskId);
    if (!current) return undefined;
    const leftQueue = current.stage !== 'queued' || current.providerTaskId !== undefined;
    if (current.status === TaskStatus.PENDING && !current.creditsRefunded && !(input.whileQueued && leftQueue)) {
      // Still refundable, so the condition that failed was chargedAs: the caller's copy is not this task.
      throw new Error('failAndRefund: the given task does not match the stored one', { cause: error });
    }
    return { task: current, refunded: false };
  }
  return {
    task: {
      ...base,
      status: TaskStatus.FAILED,
      creditsRefunded: true,
      errorCode: input.errorCode,
      errorMessage: input.errorMessage,
      ...(input.providerErrorCode === undefined ? {} : { providerErrorCode: input.providerErrorCode }),
      updatedAt,
    },
    refunded: true,
  };
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
          KeyConditionExpression: `${attr(index.partitionKey)} = :shard`,
          ExpressionAttributeNames: { [attr(index.partitionKey)]: index.partitionKey },
          ExpressionAttributeValues: { ':shard': pendingShardKey(input.shard) },
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
