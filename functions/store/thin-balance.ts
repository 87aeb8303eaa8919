/**
 * What this process learnt of an account's balance layout, so an accept on a thin balance plans its
 * first try from it instead of trying blind (docs/decisions/0018-thin-balance-bursts.md,
 * docs/decisions/0019-thin-accept-in-one-request.md, docs/decisions/0020-one-process-settles-a-layout.md).
 *
 * An accept's first try debits a shard picked at random without reading (one request, balance.ts). On a
 * thick balance that try nearly always fits. On a thin one (a few credits a shard, or nothing left) it
 * nearly always falls short, and a short try is not free: it holds its shard for a whole transaction, so
 * a burst's blind tries keep cancelling the one gathering (store/shard-plan.ts) that would put the
 * credits into lumps the racing accepts can take. So a read that finds an account thin is remembered
 * for `THIN_MEMORY_MS`, layout and all, until a read finds every shard covering the cost again. The
 * next accepts plan their first try from that layout: when it names a shard that covers the cost alone,
 * they try it without reading (one request); otherwise (a gathering, or not enough) they read first
 * (one Query, which holds nothing). Each try's plan is applied to the layout while it is in flight and
 * given back when it fails, so the racing accepts of one process pick different shards. Only a hint:
 * every plan is still checked item by item in the transaction, and a try that falls short or meets a
 * conflict reads again. Racing accepts of one account in one process take turns to learn: one settles
 * the layout (the first of an account unknown here, or a gathering) while the others wait for it
 * (`turnToPlan`, `untilSettled`), and a blind try goes around the shards of the tries in flight.
 *
 * Also here, so the accept's loop (store/tasks.ts) stays as it was: a gathering that met a conflict backs
 * off before it reads again (balance.ts `pauseAfterConflict`), where a single-shard debit retries at once
 * on another shard: the other transaction is most likely a gathering too, whose lumps the next read shows.
 */
import { readShards, type ShardBalances, totalOf } from './balance';
import type { RetryingStoreContext } from './errors';
import { planTake, type ShardPlan } from './shard-plan';
import { TABLE } from './table';

/** How long a thin layout is remembered: far longer than a burst, short beside a customer's top-up cadence. */
export const THIN_MEMORY_MS = 10_000;

/**
 * Accounts remembered at most (clearing costs each one a read): bounded like store/spend.ts's limits, a
 * layout is 32 numbers.
 */
const MAX_REMEMBERED = 10_000;

/** A thin layout as last read, less the plans of this process's tries since (`balances` is updated in place). */
interface Layout {
  until: number;
  balances: ShardBalances;
}

const layouts = new Map<string, Layout>();

/** What this process's tries in flight take from each shard of an account (bounded by the tries in flight). */
const inFlight = new Map<string, { tries: number; taken: number[]; ends: Set<Promise<void>> }>();

/** The balances handed out as remembered (not read): planned from as the memory stands at the try. */
const handedOut = new WeakSet<ShardBalances>();

/**
 * Thin for a cost: fewer than half the shards cover it alone, so a shard picked at random more likely
 * falls short than fits.
 */
export function isThin(balances: ShardBalances, cost: number): boolean {
  const covering = balances.filter((balance) => balance >= cost).length;
  return covering * 2 < balances.length;
}

/** The layout a read of this process found thin less than `THIN_MEMORY_MS` ago, if any. */
function remembered(userId: string, now: number): Layout | undefined {
  const layout = layouts.get(userId);
  if (layout && layout.until <= now) layouts.delete(userId);
  return layout && layout.until > now ? layout : undefined;
}

/** Whether a read of this process found the account thin less than `THIN_MEMORY_MS` ago. */
export function thinLately(userId: string, now: number = Date.now()): boolean {
  return remembered(userId, now) !== undefined;
}

/** Whether the layout remembered for `userId` (less the tries in flight) cannot pay `cost`: a refusal is likely. */
export function unpaidLately(userId: string, cost: number): boolean {
  const layout = remembered(userId, Date.now());
  return layout !== undefined && totalOf(layout.balances) < cost;
}

/** Every shard's balance (balance.ts `readShards`), remembering the layout when it is thin for `cost`. */
export async function readLayout(
  ctx: RetryingStoreContext,
  userId: string,
  cost: number,
  now: () => number = Date.now,
): Promise<ShardBalances> {
  const balances = await readShards(ctx, userId);
  // Remembered until every shard covers the cost again: a gathering leaves lumps on about two shards in
  // three, no longer thin, and forgetting it there sent the rest of a burst blind onto the emptied
  // shards (at 32 in flight, 40 of 61 transactions short or cancelled).
  const keep = remembered(userId, now()) !== undefined && balances.some((balance) => balance < cost);
  if (!isThin(balances, cost) && !keep) {
    layouts.delete(userId);
    rememberThick(userId, now());
  } else {
    if (layouts.size >= MAX_REMEMBERED) layouts.clear();
    thickUntil.delete(userId);
    // A copy: the accept plans (and decides a 402) from what it read, the memory takes the holds. Less
    // what this process's tries in flight take (a try that commits before the read is then counted
    // twice: the memory errs low, which costs a read, never a conflict).
    const taken = inFlight.get(userId)?.taken ?? [];
    const free = balances.map((balance, shard) => Math.max(0, balance - (taken[shard] ?? 0)));
    layouts.set(userId, { until: now() + THIN_MEMORY_MS, balances: free });
  }
  return balances;
}

/** Accounts a try or read of this process found thick, until when (bounded like `layouts`). */
const thickUntil = new Map<string, number>();

/**
 * Remembers that a blind single-shard try committed, or a read found the account thick: the next
 * accepts of this process try blind at once, without waiting for a scout (`settleLayout`).
 */
export function rememberThick(userId: string, now: number = Date.now()): void {
  if (layouts.has(userId)) return;
  if (thickUntil.size >= MAX_REMEMBERED) thickUntil.clear();
  thickUntil.set(userId, now + THIN_MEMORY_MS);
}

/** Whether this process knows the account's layout lately: found thin (the layout) or thick. */
function layoutKnown(userId: string, now: number): boolean {
  const until = thickUntil.get(userId);
  if (until !== undefined && until <= now) thickUntil.delete(userId);
  return remembered(userId, now) !== undefined || (until !== undefined && until > now);
}

/**
 * The accept of this process that is settling an account's layout, by account: the first accept of an
 * account this process knows nothing of (its scout), or one whose try gathers the credits into lumps.
 * The other accepts of that account wait for it before they plan (`untilSettled`), then plan from what
 * it left in the memory. Bounded by the accepts in flight: the entry goes when its accept ends.
 */
const settling = new Map<string, SettlingHold>();

/** A hold on an account's layout (`settleLayout`): `end` lets the waiting accepts plan; ending twice is harmless. */
export interface SettlingHold {
  readonly ended: Promise<void>;
  end: () => void;
}

/**
 * Waits while another accept of this process settles `userId`'s layout. A burst's first wave on a thin balance used to try blind side by side (each short try
 * holding a shard), read side by side, and gather side by side, each gathering cancelling the others:
 * at 32 in flight three quarters of the transactions were cancelled. Waiting instead costs the waiters
 * one accept's time, once, and only where racing accepts share a process (the local server, the
 * in-process harness; a Lambda container serves one request at a time and never waits here).
 */
export async function untilSettled(userId: string): Promise<void> {
  for (let hold = settling.get(userId); hold; hold = settling.get(userId)) await hold.ended;
}

/**
 * An accept's turn to plan: waits while another accept of this process settles `userId`'s layout
 * (`untilSettled`), then, in the same step (accepts arriving together must not all find it free), takes
 * the hold as the account's scout when the layout is unknown here. Returns that hold, if taken.
 */
export async function turnToPlan(userId: string): Promise<SettlingHold | undefined> {
  for (let hold = settling.get(userId); hold; hold = settling.get(userId)) await hold.ended;
  return settleLayout(userId, 'scout');
}

/**
 * Takes the hold on `userId`'s layout when nobody holds it and `when` says so: `scout`, the account's
 * layout is unknown to this process (neither thin nor thick lately: the first try would be blind);
 * `gather`, the try about to be sent gathers. Returns the hold, or undefined when not taken.
 */
export function settleLayout(userId: string, when: 'scout' | 'gather'): SettlingHold | undefined {
  if (settling.has(userId) || (when === 'scout' && layoutKnown(userId, Date.now()))) return undefined;
  let release = () => {};
  const ended = new Promise<void>((resolve) => {
    release = resolve;
  });
  const hold: SettlingHold = {
    ended,
    end: () => {
      if (settling.get(userId) === hold) settling.delete(userId);
      release();
    },
  };
  settling.set(userId, hold);
  return hold;
}

/**
 * The balances an accept plans its first try from: none (a blind try) on an account not found thin
 * lately; the remembered layout when a shard of it covers the cost alone (see `planTry`); else a read.
 */
export async function layoutBeforeFirstTry(
  ctx: RetryingStoreContext,
  userId: string,
  cost: number,
): Promise<ShardBalances | undefined> {
  const layout = remembered(userId, Date.now());
  if (!layout) return undefined;
  if (planTake(layout.balances, cost)?.length !== 1) return await readLayout(ctx, userId, cost);
  const copy = [...layout.balances];
  handedOut.add(copy);
  return copy;
}

/**
 * What one try of an accept debits: planned from the balances read (store/shard-plan.ts; undefined when
 * they cannot pay), or from the remembered layout as it stands now, with the holds of the tries in
 * flight (`read` when they left nothing: only a read can say the account cannot pay), or without
 * either the cost from shard `target`.
 */
export function planTry(
  userId: string,
  balances: ShardBalances | undefined,
  cost: number,
  input: { target: number; avoid: ReadonlySet<number>; random: () => number },
): ShardPlan | 'read' | 'wait' | undefined {
  if (!balances) return [{ shard: unheldShard(userId, input), delta: -cost }];
  const options = { prefer: input.target, avoid: input.avoid, random: input.random };
  if (handedOut.has(balances)) return planTake(layouts.get(userId)?.balances ?? balances, cost, options) ?? 'read';
  // A read does not show the tries in flight: plan around them. When they take all the rest, the read
  // alone cannot say whether the account can pay: wait for them and read again (a plan from the read
  // would take what a try in flight holds, and be cancelled or fall short).
  const taken = inFlight.get(userId)?.taken;
  const free = taken && balances.map((balance, shard) => balance - (taken[shard] ?? 0));
  if (!free) return planTake(balances, cost, options);
  return planTake(free, cost, options) ?? (totalOf(balances) >= cost ? 'wait' : undefined);
}

/**
 * `target`, or when a try of this process in flight debits it, a shard picked at random that none does
 * (nor `avoid` names), if any is left: blind tries of one process racing on one account used to pick
 * the same shard and cancel each other (32 in flight on 32 shards: most picks shared one).
 */
function unheldShard(
  userId: string,
  input: { target: number; avoid: ReadonlySet<number>; random: () => number },
): number {
  const taken = inFlight.get(userId)?.taken;
  if (!taken?.[input.target]) return input.target;
  const free = [...Array(TABLE.balanceShards).keys()].filter((shard) => !taken[shard] && !input.avoid.has(shard));
  return free[Math.floor(input.random() * free.length)] ?? input.target;
}

/** Resolves when every try of this process in flight on `userId`'s balance now has ended. */
export async function triesEnded(userId: string): Promise<void> {
  await Promise.all([...(inFlight.get(userId)?.ends ?? [])]);
}

/**
 * Holds a try's plan while it is in flight, so the racing accepts of this process plan around it: its
 * debits are counted as taken from what reads show, and the plan is applied to the remembered layout.
 * Returns what ends the hold: a committed plan stays in the layout, a failed one is given back (unless a
 * read replaced the layout meanwhile: the read shows what is there).
 */
export function holdPlan(userId: string, plan: ShardPlan): (committed: boolean) => void {
  const layout = layouts.get(userId);
  const flying = inFlight.get(userId) ?? { tries: 0, taken: [], ends: new Set<Promise<void>>() };
  inFlight.set(userId, flying);
  flying.tries++;
  let ended = () => {};
  const end = new Promise<void>((resolve) => {
    ended = resolve;
  });
  flying.ends.add(end);
  for (const { shard, delta } of plan) {
    if (delta < 0) flying.taken[shard] = (flying.taken[shard] ?? 0) - delta;
    if (layout) layout.balances[shard] = (layout.balances[shard] ?? 0) + delta;
  }
  return (committed) => {
    flying.tries--;
    flying.ends.delete(end);
    ended();
    for (const { shard, delta } of plan) {
      if (delta < 0) flying.taken[shard] = (flying.taken[shard] ?? 0) + delta;
      if (!committed && layout && layouts.get(userId) === layout) {
        layout.balances[shard] = (layout.balances[shard] ?? 0) - delta;
      }
    }
    if (flying.tries === 0 && inFlight.get(userId) === flying) inFlight.delete(userId);
  };
}
