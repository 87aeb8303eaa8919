/**
 * The dispatcher's items (docs/design/dispatching.md): the queue entries of queued tasks
 * (written by the accept transaction, `keys.queueEntry`), the capacity item (the times of the last sends,
 * the backoff, the round-robin cursor), and the conditional moves of a task's `stage`.
 *
 * Every write here is conditional: any number of dispatchers may run at once, a slot is taken by exactly
 * one of them (the capacity item's version `n`), and a task is claimed for sending by exactly one caller,
 * or cancelled instead (the `stage` condition).
 */
import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT } from '../core/queue-bound';
import { type TaskRecord, TaskStatus } from '../core/task';
import { type Env, MAX_QUEUED_TASKS_PER_ACCOUNT, readEnv } from '../environment/environment';
import * as conditions from './condition-fragments';
import { and, attr, type Expr, update, updateParams } from './conditions';
import { isConditionalCheckFailed, type RetryingStoreContext, withRetry } from './errors';
import { DISPATCH_QUEUE, type ItemKey, queueAccount } from './keys';
import { TABLE } from './table';
import * as keys from './task-keys';
import { conditionalUpdate } from './tasks';

const CAPACITY_KEY: ItemKey = { PK: 'DISPATCH#CAPACITY', SK: 'CREATE' };

/** The capacity item as read. */
export interface CapacityState {
  /** Version: the number of slots ever taken. 0 when the item does not exist yet. */
  n: number;
  /** Epoch ms of the most recent sends (at most the rate's request count), oldest first. */
  sends: number[];
  /** The token bucket that spreads sends over the window: tokens left at `tokensAt` (epoch ms). */
  tokens?: number;
  tokensAt?: number;
  /** No send before this (epoch ms): the upstream refused for capacity. */
  backoffUntil?: number;
  /** The length of that backoff (ms), doubled while refusals repeat. */
  backoffMs?: number;
  /**
   * Backoffs of single models (our model ids): the upstream refused a create naming that model (a 503)
   * while other models' creates go on. Only that model's tasks wait (docs/design/dispatching.md).
   */
  modelBackoff: Record<string, ModelBackoff>;
  /** The account (as the queue's sort keys hold it) served last: the round-robin cursor. */
  lastServed?: string;
  /**
   * When the upstream answered the send of each slot still in the ring (epoch ms), by slot number (the
   * version `n` the slot made). Stored as `answered<slot mod ring>` = `{ slot, at }`, so the ring's
   * positions are overwritten in turn and the item never grows.
   */
  answered: Record<number, number>;
  /**
   * The service's tasks at the upstream, where a cap on tasks in flight is configured
   * (docs/design/dispatching.md): by task id, or by `slot<n>` for a slot taken whose task is not yet
   * claimed. Undefined when the item has no such map (no cap was ever configured).
   */
  running?: Record<string, RunningEntry>;
  /** Epoch ms of the last look at `running` for entries a lost removal left (see `claimHeal`). */
  healAt?: number;
}

/** One entry of the capacity item's `modelBackoff` map. */
export interface ModelBackoff {
  /** No send of the model before this (epoch ms). */
  until: number;
  /** The length of that backoff (ms), doubled while the model's refusals repeat. */
  ms: number;
}

function modelBackoffOf(raw: unknown): Record<string, ModelBackoff> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return {};
  const backoffs: Record<string, ModelBackoff> = {};
  for (const [model, value] of Object.entries(raw as Record<string, unknown>)) {
    const entry = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
    if (typeof entry.until === 'number') {
      backoffs[model] = { until: entry.until, ms: typeof entry.ms === 'number' ? entry.ms : 0 };
    }
  }
  return backoffs;
}

/** One entry of the capacity item's `running` map. */
export interface RunningEntry {
  /** Epoch ms at which its slot was taken. */
  sentAt: number;
  /** The task's owner (absent on a slot's reservation, which names no task yet). */
  userId?: string;
}

/** The `running` key of the reservation a slot makes before its task is claimed. */
export function slotKey(n: number): string {
  return `slot${n}`;
}

/** Whether a `running` key is a slot's reservation rather than a task id. */
export function isSlotKey(key: string): boolean {
  return /^slot\d+$/.test(key);
}

function runningOf(raw: unknown): Record<string, RunningEntry> | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const running: Record<string, RunningEntry> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const entry = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
    running[key] = {
      sentAt: typeof entry.sentAt === 'number' ? entry.sentAt : 0,
      ...(typeof entry.userId === 'string' ? { userId: entry.userId } : {}),
    };
  }
  return running;
}

/** The attribute that holds the answer time of `slot` in a ring of `ring` positions. */
const answeredAttribute = (slot: number, ring: number) => `answered${slot % Math.max(1, ring)}`;

/** A queued task as its queue entry addresses it. */
export interface QueuedRef {
  userId: string;
  taskId: string;
  createdAt: string;
  /** The account part of the entry's sort key (`queueAccount(userId)`). */
  account: string;
  /** The task's model (entries written before 2026-11-27 lack it). */
  model?: string;
}

export async function readCapacity(ctx: RetryingStoreContext): Promise<CapacityState> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: CAPACITY_KEY, ConsistentRead: true })),
    ctx.retry,
  );
  const item = out.Item ?? {};
  const state: CapacityState = {
    n: typeof item.n === 'number' ? item.n : 0,
    sends: Array.isArray(item.sends) ? item.sends.filter((at): at is number => typeof at === 'number') : [],
    answered: {},
    modelBackoff: modelBackoffOf(item.modelBackoff),
  };
  if (typeof item.tokens === 'number') state.tokens = item.tokens;
  if (typeof item.tokensAt === 'number') state.tokensAt = item.tokensAt;
  if (typeof item.backoffUntil === 'number') state.backoffUntil = item.backoffUntil;
  if (typeof item.backoffMs === 'number') state.backoffMs = item.backoffMs;
  if (typeof item.lastServed === 'string') state.lastServed = item.lastServed;
  for (const [name, value] of Object.entries(item)) {
    if (!name.startsWith('answered') || typeof value !== 'object' || value === null) continue;
    const { slot, at } = value as Record<string, unknown>;
    if (typeof slot === 'number' && typeof at === 'number') state.answered[slot] = at;
  }
  if (typeof item.healAt === 'number') state.healAt = item.healAt;
  const running = runningOf(item.running);
  if (running) state.running = running;
  return state;
}

/**
 * Takes the next slot: records `now` as a send (keeping the last `keep` sends), moves the cursor to
 * `account` and adds 1 to the version, on condition that nobody else took a slot since `state` was read
 * and that no backoff began meanwhile. With `maxInFlight`, the same write also reserves a place in
 * `running` (key `slotKey(<the slot's number>)`), on condition that fewer than `maxInFlight` are there.
 * The slot's number (the new version) when this dispatcher won; undefined when another one did, or the
 * cap is reached (read again and retry).
 */
export async function takeSlot(
  ctx: RetryingStoreContext,
  input: {
    state: CapacityState;
    now: number;
    keep: number;
    account: string;
    tokensLeft?: number;
    maxInFlight?: number;
  },
): Promise<number | undefined> {
  const sends = [...input.state.sends, input.now].slice(-Math.max(1, input.keep));
  const tokens = input.tokensLeft === undefined ? {} : { tokens: input.tokensLeft, tokensAt: input.now };
  const version: Expr =
    input.state.n === 0
      ? { expression: `attribute_not_exists(${attr('n')})`, names: { [attr('n')]: 'n' }, values: {} }
      : { expression: `${attr('n')} = :version`, names: { [attr('n')]: 'n' }, values: { ':version': input.state.n } };
  const notBackingOff: Expr = {
    expression: `attribute_not_exists(${attr('backoffUntil')}) OR ${attr('backoffUntil')} <= :slotNow`,
    names: { [attr('backoffUntil')]: 'backoffUntil' },
    values: { ':slotNow': input.now },
  };
  const slot = update({ set: { sends, ...tokens, lastServed: input.account, n: input.state.n + 1 } });
  const reservation = input.maxInFlight === undefined ? undefined : reserve(input.state, input.now, input.maxInFlight);
  const change: Expr = reservation
    ? {
        expression: `${slot.expression}, ${reservation.set}`,
        names: { ...slot.names, ...reservation.condition.names },
        values: { ...slot.values, ...reservation.condition.values, ...reservation.values },
      }
    : slot;
  const condition = reservation ? and(version, notBackingOff, reservation.condition) : and(version, notBackingOff);
  return (await updateCapacity(ctx, updateParams(change, condition))) ? input.state.n + 1 : undefined;
}

const RUNNING = { [attr('running')]: 'running' };

/**
 * The `running` part of taking a slot: the slot's reservation (`slot<n+1>`), added to the map (or the
 * map created with it), on condition that fewer than `cap` are there.
 */
function reserve(
  state: CapacityState,
  now: number,
  cap: number,
): { set: string; values: Record<string, unknown>; condition: Expr } {
  const key = slotKey(state.n + 1);
  if (state.running === undefined) {
    return {
      set: `${attr('running')} = :runningNew`,
      values: { ':runningNew': { [key]: { sentAt: now } } },
      condition: { expression: `attribute_not_exists(${attr('running')})`, names: RUNNING, values: {} },
    };
  }
  return {
    set: `${attr('running')}.${attr('runningSlot')} = :runningSlotEntry`,
    values: { ':runningSlotEntry': { sentAt: now } },
    condition: {
      expression: `size(${attr('running')}) < :runningCap`,
      names: { ...RUNNING, [attr('runningSlot')]: key },
      values: { ':runningCap': cap },
    },
  };
}

/**
 * Puts the task claimed with a slot in place of the slot's reservation in `running` (one write: the
 * count stays). Nothing happens when the map is gone.
 */
export async function holdInFlight(
  ctx: RetryingStoreContext,
  input: { slot: number; userId: string; taskId: string; sentAt: number },
): Promise<void> {
  await updateRunning(ctx, {
    UpdateExpression: `REMOVE ${attr('running')}.${attr('runningFrom')} SET ${attr('running')}.${attr('runningTo')} = :runningEntry`,
    ConditionExpression: `attribute_exists(${attr('running')})`,
    ExpressionAttributeNames: {
      ...RUNNING,
      [attr('runningFrom')]: slotKey(input.slot),
      [attr('runningTo')]: input.taskId,
    },
    ExpressionAttributeValues: { ':runningEntry': { sentAt: input.sentAt, userId: input.userId } },
  });
}

/**
 * Removes an entry of `running` (a task that left the upstream, or a slot's reservation left unused):
 * unconditional but for the map existing, so removing twice removes once. With `sentAt`, only the
 * entry as it was read (a dispatcher's heal must not remove an entry written again since).
 */
export async function leaveInFlight(ctx: RetryingStoreContext, input: { key: string; sentAt?: number }): Promise<void> {
  const names = { ...RUNNING, [attr('runningKey')]: input.key };
  await updateRunning(
    ctx,
    input.sentAt === undefined
      ? {
          UpdateExpression: `REMOVE ${attr('running')}.${attr('runningKey')}`,
          ConditionExpression: `attribute_exists(${attr('running')})`,
          ExpressionAttributeNames: names,
        }
      : {
          UpdateExpression: `REMOVE ${attr('running')}.${attr('runningKey')}`,
          ConditionExpression: `${attr('running')}.${attr('runningKey')}.${attr('sentAt')} = :runningSentAt`,
          ExpressionAttributeNames: { ...names, [attr('sentAt')]: 'sentAt' },
          ExpressionAttributeValues: { ':runningSentAt': input.sentAt },
        },
  );
}

/** The request fields of one conditional write of the capacity item. */
type CapacityUpdate = ReturnType<typeof updateParams>;

/**
 * The one conditional write of the capacity item every change here goes through: true when written,
 * false when its condition did not hold (the caller decides what losing means).
 */
async function updateCapacity(ctx: RetryingStoreContext, params: CapacityUpdate): Promise<boolean> {
  try {
    await withRetry(
      () => ctx.doc.send(new UpdateCommand({ TableName: ctx.tableName, Key: CAPACITY_KEY, ...params })),
      ctx.retry,
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

async function updateRunning(ctx: RetryingStoreContext, params: CapacityUpdate): Promise<void> {
  await updateCapacity(ctx, params);
}

/**
 * Claims the look at `running` for entries whose removal was lost: true when nobody looked since
 * `before` (epoch ms), so at the cap one dispatcher at a time reads the listed tasks, not every step.
 */
export async function claimHeal(ctx: RetryingStoreContext, input: { now: number; before: number }): Promise<boolean> {
  return updateCapacity(ctx, {
    ...updateParams(update({ set: { healAt: input.now } }), {
      expression: `attribute_not_exists(${attr('healAt')}) OR ${attr('healAt')} <= :healBefore`,
      names: { [attr('healAt')]: 'healAt' },
      values: { ':healBefore': input.before },
    }),
  });
}

/**
 * Records when the upstream answered the send of `slot` (whatever it answered): the upstream counted the
 * request at some moment before that, so the ring frees this slot one window after this time, never
 * earlier. Not versioned (it does not take a slot); a late write never replaces a newer slot's time.
 */
export async function recordAnswered(
  ctx: RetryingStoreContext,
  input: { slot: number; at: number; ring: number },
): Promise<void> {
  const name = answeredAttribute(input.slot, input.ring);
  await updateCapacity(ctx, {
    UpdateExpression: 'SET #answered = :answered',
    ConditionExpression: 'attribute_not_exists(#answered) OR #answered.#slot < :slot',
    ExpressionAttributeNames: { '#answered': name, '#slot': 'slot' },
    ExpressionAttributeValues: { ':answered': { slot: input.slot, at: input.at }, ':slot': input.slot },
  });
}

/**
 * Starts (or lengthens) the backoff every dispatcher honours: no send before `until`. A backoff that
 * already reaches further is kept.
 */
export async function backOff(ctx: RetryingStoreContext, input: { until: number; backoffMs: number }): Promise<void> {
  await updateCapacity(ctx, {
    ...updateParams(update({ set: { backoffUntil: input.until, backoffMs: input.backoffMs } }), {
      expression: `attribute_not_exists(${attr('backoffUntil')}) OR ${attr('backoffUntil')} < :until`,
      names: { [attr('backoffUntil')]: 'backoffUntil' },
      values: { ':until': input.until },
    }),
  });
}

/**
 * Starts (or lengthens) the backoff of one model: no send of its tasks before `until`; a backoff of it
 * that already reaches further is kept. The same write removes the entries of `stale` (other models'
 * backoffs that ended a while ago, as read), so the map holds only the models refused lately and the
 * item stays small.
 */
export async function backOffModel(
  ctx: RetryingStoreContext,
  input: { model: string; until: number; backoffMs: number; stale?: readonly string[] },
): Promise<void> {
  const entry = { until: input.until, ms: input.backoffMs };
  const stale = (input.stale ?? []).filter((model) => model !== input.model);
  const staleNames = Object.fromEntries(stale.map((model, index) => [`#stale${index}`, model]));
  const remove = stale.length === 0 ? '' : ` REMOVE ${stale.map((_, index) => `#mb.#stale${index}`).join(', ')}`;
  // The map exists: set the model's entry in it, unless a longer backoff of the model is there.
  const inMap = await updateCapacity(ctx, {
    UpdateExpression: `SET #mb.#model = :entry${remove}`,
    ConditionExpression: 'attribute_exists(#mb) AND (attribute_not_exists(#mb.#model) OR #mb.#model.#until < :until)',
    ExpressionAttributeNames: { '#mb': 'modelBackoff', '#model': input.model, '#until': 'until', ...staleNames },
    ExpressionAttributeValues: { ':entry': entry, ':until': input.until },
  });
  if (inMap) return;
  // No map yet (a nested path cannot be set without its map): create it with the entry. When another
  // dispatcher created it meanwhile, this fails too, and the first write is tried once more.
  const created = await updateCapacity(ctx, {
    UpdateExpression: 'SET #mb = :map',
    ConditionExpression: 'attribute_not_exists(#mb)',
    ExpressionAttributeNames: { '#mb': 'modelBackoff' },
    ExpressionAttributeValues: { ':map': { [input.model]: entry } },
  });
  if (created) return;
  await updateCapacity(ctx, {
    UpdateExpression: 'SET #mb.#model = :entry',
    ConditionExpression: 'attribute_exists(#mb) AND (attribute_not_exists(#mb.#model) OR #mb.#model.#until < :until)',
    ExpressionAttributeNames: { '#mb': 'modelBackoff', '#model': input.model, '#until': 'until' },
    ExpressionAttributeValues: { ':entry': entry, ':until': input.until },
  });
}

/** Entries one filtered Query evaluates (see `nextQueued`): about 10 KB, 3 read units. */
const FILTERED_PAGE = 50;
/** Filtered Queries per pass over the queue (before and after the wrap), so a step's reads stay bounded. */
const FILTERED_PAGES = 6;

/**
 * Up to `limit` queue entries in round-robin order: those of the accounts after `afterAccount` (each
 * account's oldest first), then, wrapping around, from the first account on.
 *
 * With `excludeModels` (the models in backoff), entries of those models are passed over, so a refused
 * model's tasks do not hold up other tasks of the same account nor of the accounts after it: the Query
 * filters them out (entries without a model, written before the model was kept, pass; their claim
 * checks the model). A filtered page that found nothing and ended inside one account's entries moves on
 * to the next account: past that page the account's queue is all the refused model's, as far as one step
 * looks. At most {@link FILTERED_PAGES} pages of {@link FILTERED_PAGE} entries are read per pass.
 */
export async function nextQueued(
  ctx: RetryingStoreContext,
  input: { afterAccount?: string; limit: number; excludeModels?: readonly string[] },
): Promise<QueuedRef[]> {
  const excluded = input.excludeModels ?? [];
  const filter =
    excluded.length === 0
      ? undefined
      : {
          FilterExpression: `attribute_not_exists(${attr('model')}) OR NOT (${attr('model')} IN (${excluded.map((_, index) => `:model${index}`).join(', ')}))`,
          names: { [attr('model')]: 'model' },
          values: Object.fromEntries(excluded.map((model, index) => [`:model${index}`, model])),
        };
  const query = async (after: string | undefined, limit: number) => {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            KeyConditionExpression:
              after === undefined ? `${attr('PK')} = :queue` : `${attr('PK')} = :queue AND ${attr('SK')} > :after`,
            ExpressionAttributeNames: {
              [attr('PK')]: TABLE.partitionKey,
              ...(after === undefined ? {} : { [attr('SK')]: TABLE.sortKey }),
              ...filter?.names,
            },
            ExpressionAttributeValues: {
              ':queue': DISPATCH_QUEUE,
              ...(after === undefined ? {} : { ':after': after }),
              ...filter?.values,
            },
            ...(filter ? { FilterExpression: filter.FilterExpression } : {}),
            ConsistentRead: true,
            Limit: limit,
          }),
        ),
      ctx.retry,
    );
    const refs = (out.Items ?? []).flatMap((item) => {
      const [account, createdAt] = String(item[TABLE.sortKey]).split('#');
      if (typeof item.userId !== 'string' || typeof item.taskId !== 'string' || !account || !createdAt) return [];
      const ref: QueuedRef = { userId: item.userId, taskId: item.taskId, createdAt, account };
      if (typeof item.model === 'string') ref.model = item.model;
      return [ref];
    });
    const last = out.LastEvaluatedKey?.[TABLE.sortKey];
    return { refs, lastKey: typeof last === 'string' ? last : undefined };
  };
  /** One pass from `start` (a sort key to read after; undefined: the queue's start) to the queue's end. */
  const pass = async (start: string | undefined, want: number): Promise<QueuedRef[]> => {
    if (!filter) return (await query(start, want)).refs;
    const found: QueuedRef[] = [];
    let after = start;
    for (let page = 0; page < FILTERED_PAGES && found.length < want; page++) {
      const { refs, lastKey } = await query(after, FILTERED_PAGE);
      found.push(...refs);
      if (lastKey === undefined) break;
      // Nothing here but the refused models' entries, and the page ended inside an account: the next
      // account comes next, not the rest of this one's backlog of the same models.
      after = refs.length === 0 ? `${lastKey.split('#')[0] ?? ''}#\uffff` : lastKey;
    }
    return found.slice(0, want);
  };
  const found = await pass(input.afterAccount === undefined ? undefined : `${input.afterAccount}#\uffff`, input.limit);
  if (found.length >= input.limit || input.afterAccount === undefined) return found;
  const seen = new Set(found.map((ref) => ref.taskId));
  const wrapped = (await pass(undefined, input.limit)).filter((ref) => !seen.has(ref.taskId));
  return [...found, ...wrapped].slice(0, input.limit);
}

/** The bound from `MAX_QUEUED_TASKS_PER_ACCOUNT` (the stack sets it from `maxQueuedTasksPerAccount`), else the default. */
export function maxQueuedTasksFromEnv(env?: Env): number {
  return readEnv(MAX_QUEUED_TASKS_PER_ACCOUNT, env) ?? DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT;
}

/**
 * How many of the account's tasks are queued, counted no further than `limit`: a counting Query on the
 * account's own range of `DISPATCH#QUEUE` (`<account>#` to `<account>#\uffff`) that stops after `limit`
 * entries, so its cost is bounded by the limit (entries are ~200 bytes: 1,000 of them are one page).
 *
 * It reads and writes nothing the accept transaction holds: no per-account counter, so a burst of
 * submits from one account never conflicts over it. The price is a soft bound: submits counting at the
 * same moment all see the same count, so the account can pass the bound by at most the number of its
 * submits accepted at that moment (docs/design/dispatching.md).
 */
export async function countQueued(
  ctx: RetryingStoreContext,
  input: { userId: string; limit: number },
): Promise<number> {
  const account = queueAccount(input.userId);
  return countQueueRange(ctx, { from: `${account}#`, to: `${account}#\uffff`, limit: input.limit });
}

/** The number of the account's tasks queued before this one, while it is queued (a counting Query). */
export async function queuedAhead(
  ctx: RetryingStoreContext,
  input: { userId: string; createdAt: string; taskId: string },
): Promise<number> {
  // Up to and with this task's own entry, which is then not counted.
  const own = keys.queueEntry(input.userId, input.createdAt, input.taskId).SK;
  const count = await countQueueRange(ctx, { from: `${queueAccount(input.userId)}#`, to: own });
  return Math.max(0, count - 1);
}

/**
 * Counts the queue entries whose sort keys lie from `from` to `to` (both included), paging, with one
 * consistent counting Query per page (an entry accepted a moment ago counts); stops once `limit` are
 * counted, when given.
 */
async function countQueueRange(
  ctx: RetryingStoreContext,
  input: { from: string; to: string; limit?: number },
): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            KeyConditionExpression: `${attr('PK')} = :queue AND ${attr('SK')} BETWEEN :from AND :to`,
            ExpressionAttributeNames: { [attr('PK')]: TABLE.partitionKey, [attr('SK')]: TABLE.sortKey },
            ExpressionAttributeValues: { ':queue': DISPATCH_QUEUE, ':from': input.from, ':to': input.to },
            Select: 'COUNT',
            ConsistentRead: true,
            ...(input.limit === undefined ? {} : { Limit: input.limit - count }),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    count += out.Count ?? 0;
    start = out.LastEvaluatedKey;
  } while (start && (input.limit === undefined || count < input.limit));
  return count;
}

/**
 * The ids of the account's tasks that have a queue entry among those created from `from` to `to` (ISO
 * times, both included): one Query over that range of the account's entries, so a listing learns which
 * of its pending tasks still wait here without reading each task.
 */
export async function queuedTaskIds(
  ctx: RetryingStoreContext,
  input: { userId: string; from: string; to: string },
): Promise<Set<string>> {
  const account = queueAccount(input.userId);
  const ids = new Set<string>();
  let start: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            KeyConditionExpression: `${attr('PK')} = :queue AND ${attr('SK')} BETWEEN :from AND :to`,
            ExpressionAttributeNames: {
              [attr('PK')]: TABLE.partitionKey,
              [attr('SK')]: TABLE.sortKey,
              [attr('taskId')]: 'taskId',
            },
            ExpressionAttributeValues: {
              ':queue': DISPATCH_QUEUE,
              ':from': `${account}#${input.from}`,
              ':to': `${account}#${input.to}#\uffff`,
            },
            ProjectionExpression: attr('taskId'),
            ConsistentRead: true,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    for (const item of out.Items ?? []) if (typeof item.taskId === 'string') ids.add(item.taskId);
    start = out.LastEvaluatedKey;
  } while (start);
  return ids;
}

const STAGE = { [attr('stage')]: 'stage' };
const stageIs = (stage: string, placeholder: string): Expr => ({
  expression: `${attr('stage')} = ${placeholder}`,
  names: STAGE,
  values: { [placeholder]: stage },
});

/** One conditional update of a task returning the new item; undefined when the condition failed. */
function updateTask(
  ctx: RetryingStoreContext,
  ref: { userId: string; taskId: string },
  params: ReturnType<typeof updateParams>,
): Promise<TaskRecord | undefined> {
  return conditionalUpdate(ctx, ref.userId, ref.taskId, params);
}

/**
 * Claims a queued task for sending (`queued` -> `sending`): exactly one caller wins, and a cancel (which
 * needs `queued` too) can no longer win. Undefined when the task is not pending and queued.
 */
export function claimSend(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; now: number; inFlightSlot?: boolean; excludeModels?: readonly string[] },
): Promise<TaskRecord | undefined> {
  const excluded = input.excludeModels ?? [];
  // The models in backoff: a queue entry written before entries kept the model is checked here.
  const notExcluded: Expr | undefined =
    excluded.length === 0
      ? undefined
      : {
          expression: `NOT (${attr('model')} IN (${excluded.map((_, index) => `:claimModel${index}`).join(', ')}))`,
          names: { [attr('model')]: 'model' },
          values: Object.fromEntries(excluded.map((model, index) => [`:claimModel${index}`, model])),
        };
  const queued = and(conditions.taskIsPending(), stageIs('queued', ':queuedStage'));
  return updateTask(
    ctx,
    input,
    updateParams(
      update({
        set: { stage: 'sending', sendClaimedAt: input.now, ...(input.inFlightSlot ? { inFlightSlot: true } : {}) },
      }),
      notExcluded ? and(queued, notExcluded) : queued,
    ),
  );
}

/**
 * Puts a task whose send did not reach the provider back in the queue (`sending` -> `queued`), in its
 * place; `failed` counts the attempt as a provider failure (`sendFailures`), `refused` as a refusal of
 * its model (`sendRefusals`), and a refusal for the service's rate (429) counts as neither.
 */
export function releaseSend(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; failed: boolean; refused?: boolean },
): Promise<TaskRecord | undefined> {
  const add: Record<string, number> | undefined = input.failed
    ? { sendFailures: 1 }
    : input.refused
      ? { sendRefusals: 1 }
      : undefined;
  return updateTask(
    ctx,
    input,
    updateParams(
      update({
        set: { stage: 'queued' },
        remove: ['sendClaimedAt'],
        ...(add ? { add } : {}),
      }),
      and(conditions.taskIsPending(), stageIs('sending', ':sendingStage'), conditions.providerTaskNotRecorded()),
    ),
  );
}

/**
 * Puts a send lost to a crash back in the queue, once: the task has been `sending` since before
 * `claimedBefore` and was never put back before. Undefined when that does not hold.
 */
export function requeueLostSend(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; claimedBefore: number },
): Promise<TaskRecord | undefined> {
  return updateTask(
    ctx,
    input,
    updateParams(
      update({ set: { stage: 'queued' }, remove: ['sendClaimedAt'], add: { sendRequeues: 1 } }),
      and(conditions.taskIsPending(), stageIs('sending', ':sendingStage'), conditions.providerTaskNotRecorded(), {
        expression: `${attr('sendClaimedAt')} < :claimedBefore AND attribute_not_exists(${attr('sendRequeues')})`,
        names: { [attr('sendClaimedAt')]: 'sendClaimedAt', [attr('sendRequeues')]: 'sendRequeues' },
        values: { ':claimedBefore': input.claimedBefore },
      }),
    ),
  );
}

/**
 * Removes a task's queue entry: after the send reached the provider, or once the task ended while still
 * queued (failTask, the dispatcher's refusals, a cancel). Idempotent: nothing happens when it is gone.
 */
export async function deleteQueueEntry(
  ctx: RetryingStoreContext,
  input: { userId: string; createdAt: string; taskId: string },
): Promise<void> {
  await withRetry(
    () =>
      ctx.doc.send(
        new DeleteCommand({
          TableName: ctx.tableName,
          Key: keys.queueEntry(input.userId, input.createdAt, input.taskId),
        }),
      ),
    ctx.retry,
  );
}

/** Whether a task may still be sent: pending, without a provider id, queued or being sent. */
export function awaitsSend(task: TaskRecord): boolean {
  return (
    task.status === TaskStatus.PENDING &&
    task.providerTaskId === undefined &&
    (task.stage === 'queued' || task.stage === 'sending')
  );
}

/**
 * Claims the one wake-up for `at` (epoch ms): true when no wake-up is pending before `at`, so exactly
 * one of the dispatchers that must wait schedules it (no herd of wake-ups).
 */
export async function claimWake(ctx: RetryingStoreContext, input: { at: number; now: number }): Promise<boolean> {
  return updateCapacity(ctx, {
    ...updateParams(update({ set: { wakeAt: input.at } }), {
      expression: `attribute_not_exists(${attr('wakeAt')}) OR ${attr('wakeAt')} <= :wakeNow OR ${attr('wakeAt')} > :wakeAt`,
      names: { [attr('wakeAt')]: 'wakeAt' },
      values: { ':wakeNow': input.now, ':wakeAt': input.at },
    }),
  });
}
