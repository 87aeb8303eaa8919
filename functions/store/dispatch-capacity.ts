/**
 * The dispatcher's capacity item (docs/design/dispatching.md): the times of the last sends, the backoffs
 * (the whole upstream's and single models'), the round-robin cursor, the tasks in flight and the wake-up
 * claim. Every write is conditional: any number of dispatchers may run at once, and a slot is taken by
 * exactly one of them (the item's version `n`).
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as conditions from './condition-fragments';
import { and, attr, type Expr, update, updateParams, withCondition } from './conditions';
import { isConditionalCheckFailed, type RetryingStoreContext, withRetry } from './errors';
import type { ItemKey } from './keys';

/**
 * The store as the capacity item's functions take it: with `upstream`, the item of that upstream
 * (`DISPATCH#CAPACITY` / `CREATE#<name>`, docs/guides/upstreams.md); without, the one upstream's
 * (`CREATE`), as a deployment without an upstreams list has always had it.
 */
export type CapacityContext = RetryingStoreContext & { readonly upstream?: string | undefined };

/** The capacity item's key for `ctx`'s upstream. */
export function capacityKey(ctx: CapacityContext): ItemKey {
  return { PK: 'DISPATCH#CAPACITY', SK: ctx.upstream === undefined ? 'CREATE' : `CREATE#${ctx.upstream}` };
}

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
  /**
   * Since when the upstream is out (epoch ms): its sends failed (5xx, unreachable, timeouts) and it is
   * cooling off until `backoffUntil`, then probed with a single send (store/upstream-health.ts).
   */
  unhealthySince?: number;
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

export async function readCapacity(ctx: CapacityContext): Promise<CapacityState> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: capacityKey(ctx), ConsistentRead: true })),
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
  if (typeof item.unhealthySince === 'number') state.unhealthySince = item.unhealthySince;
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
  ctx: CapacityContext,
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
  const version = conditions.capacityVersionIs(input.state.n);
  const notBackingOff = conditions.notBackingOffAt(input.now);
  const slot = update({ set: { sends, ...tokens, lastServed: input.account, n: input.state.n + 1 } });
  const reservation = input.maxInFlight === undefined ? undefined : reserve(input.state, input.now, input.maxInFlight);
  const change: Expr = reservation
    ? {
        expression: `${slot.expression}, ${reservation.set}`,
        names: { ...slot.names, ...reservation.names },
        values: { ...slot.values, ...reservation.values },
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
): { set: string; names: Record<string, string>; values: Record<string, unknown>; condition: Expr } {
  const key = slotKey(state.n + 1);
  if (state.running === undefined) {
    return {
      set: `${attr('running')} = :runningNew`,
      names: RUNNING,
      values: { ':runningNew': { [key]: { sentAt: now } } },
      condition: conditions.noRunningMap(),
    };
  }
  return {
    set: `${attr('running')}.${attr('runningSlot')} = :runningSlotEntry`,
    names: { ...RUNNING, [attr('runningSlot')]: key },
    values: { ':runningSlotEntry': { sentAt: now } },
    condition: conditions.runningBelow(cap),
  };
}

/**
 * Puts the task claimed with a slot in place of the slot's reservation in `running` (one write: the
 * count stays). Nothing happens when the map is gone.
 */
export async function holdInFlight(
  ctx: CapacityContext,
  input: { slot: number; userId: string; taskId: string; sentAt: number },
): Promise<void> {
  await updateRunning(
    ctx,
    withCondition(
      {
        UpdateExpression: `REMOVE ${attr('running')}.${attr('runningFrom')} SET ${attr('running')}.${attr('runningTo')} = :runningEntry`,
        ExpressionAttributeNames: {
          ...RUNNING,
          [attr('runningFrom')]: slotKey(input.slot),
          [attr('runningTo')]: input.taskId,
        },
        ExpressionAttributeValues: { ':runningEntry': { sentAt: input.sentAt, userId: input.userId } },
      },
      conditions.runningMapExists(),
    ),
  );
}

/**
 * Removes an entry of `running` (a task that left the upstream, or a slot's reservation left unused):
 * unconditional but for the map existing, so removing twice removes once. With `sentAt`, only the
 * entry as it was read (a dispatcher's heal must not remove an entry written again since).
 */
export async function leaveInFlight(ctx: CapacityContext, input: { key: string; sentAt?: number }): Promise<void> {
  const removal = {
    UpdateExpression: `REMOVE ${attr('running')}.${attr('runningKey')}`,
    ExpressionAttributeNames: { ...RUNNING, [attr('runningKey')]: input.key },
  };
  await updateRunning(
    ctx,
    withCondition(
      removal,
      input.sentAt === undefined
        ? conditions.runningMapExists()
        : conditions.runningEntrySentAt(input.key, input.sentAt),
    ),
  );
}

/** The request fields of one conditional write of the capacity item. */
type CapacityUpdate = ReturnType<typeof updateParams>;

/**
 * The one conditional write of the capacity item every change here goes through: true when written,
 * false when its condition did not hold (the caller decides what losing means).
 */
export async function updateCapacity(ctx: CapacityContext, params: CapacityUpdate): Promise<boolean> {
  try {
    await withRetry(
      () => ctx.doc.send(new UpdateCommand({ TableName: ctx.tableName, Key: capacityKey(ctx), ...params })),
      ctx.retry,
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

async function updateRunning(ctx: CapacityContext, params: CapacityUpdate): Promise<void> {
  await updateCapacity(ctx, params);
}

/**
 * Claims the look at `running` for entries whose removal was lost: true when nobody looked since
 * `before` (epoch ms), so at the cap one dispatcher at a time reads the listed tasks, not every step.
 */
export async function claimHeal(ctx: CapacityContext, input: { now: number; before: number }): Promise<boolean> {
  return updateCapacity(ctx, {
    ...updateParams(update({ set: { healAt: input.now } }), conditions.healDue(input.before)),
  });
}

/**
 * Records when the upstream answered the send of `slot` (whatever it answered): the upstream counted the
 * request at some moment before that, so the ring frees this slot one window after this time, never
 * earlier. Not versioned (it does not take a slot); a late write never replaces a newer slot's time.
 */
export async function recordAnswered(
  ctx: CapacityContext,
  input: { slot: number; at: number; ring: number },
): Promise<void> {
  const name = answeredAttribute(input.slot, input.ring);
  await updateCapacity(
    ctx,
    withCondition(
      {
        UpdateExpression: 'SET #answered = :answered',
        ExpressionAttributeNames: { '#answered': name },
        ExpressionAttributeValues: { ':answered': { slot: input.slot, at: input.at } },
      },
      conditions.answeredBefore(name, input.slot),
    ),
  );
}

/**
 * Starts (or lengthens) the backoff every dispatcher honours: no send before `until`. A backoff that
 * already reaches further is kept.
 */
export async function backOff(ctx: CapacityContext, input: { until: number; backoffMs: number }): Promise<void> {
  await updateCapacity(ctx, {
    ...updateParams(
      update({ set: { backoffUntil: input.until, backoffMs: input.backoffMs } }),
      conditions.backoffEndsBefore(input.until),
    ),
  });
}

/**
 * Starts (or lengthens) the backoff of one model: no send of its tasks before `until`; a backoff of it
 * that already reaches further is kept. The same write removes the entries of `stale` (other models'
 * backoffs that ended a while ago, as read), so the map holds only the models refused lately and the
 * item stays small.
 */
export async function backOffModel(
  ctx: CapacityContext,
  input: { model: string; until: number; backoffMs: number; stale?: readonly string[] },
): Promise<void> {
  const entry = { until: input.until, ms: input.backoffMs };
  const stale = (input.stale ?? []).filter((model) => model !== input.model);
  const staleNames = Object.fromEntries(stale.map((model, index) => [`#stale${index}`, model]));
  const remove = stale.length === 0 ? '' : ` REMOVE ${stale.map((_, index) => `#mb.#stale${index}`).join(', ')}`;
  // The map exists: set the model's entry in it, unless a longer backoff of the model is there.
  const inMap = await updateCapacity(
    ctx,
    withCondition(
      {
        UpdateExpression: `SET #mb.#model = :entry${remove}`,
        ExpressionAttributeNames: { '#mb': 'modelBackoff', '#model': input.model, ...staleNames },
        ExpressionAttributeValues: { ':entry': entry },
      },
      conditions.modelBackoffEndsBefore(input.model, input.until),
    ),
  );
  if (inMap) return;
  // No map yet (a nested path cannot be set without its map): create it with the entry. When another
  // dispatcher created it meanwhile, this fails too, and the first write is tried once more.
  const created = await updateCapacity(
    ctx,
    withCondition(
      {
        UpdateExpression: 'SET #mb = :map',
        ExpressionAttributeNames: {},
        ExpressionAttributeValues: { ':map': { [input.model]: entry } },
      },
      conditions.noModelBackoffs(),
    ),
  );
  if (created) return;
  await updateCapacity(
    ctx,
    withCondition(
      {
        UpdateExpression: 'SET #mb.#model = :entry',
        ExpressionAttributeNames: {},
        ExpressionAttributeValues: { ':entry': entry },
      },
      conditions.modelBackoffEndsBefore(input.model, input.until),
    ),
  );
}

/**
 * Claims the one wake-up for `at` (epoch ms): true when no wake-up is pending before `at`, so exactly
 * one of the dispatchers that must wait schedules it (no herd of wake-ups).
 */
export async function claimWake(ctx: CapacityContext, input: { at: number; now: number }): Promise<boolean> {
  return updateCapacity(ctx, {
    ...updateParams(update({ set: { wakeAt: input.at } }), conditions.wakeFree(input.at, input.now)),
  });
}
