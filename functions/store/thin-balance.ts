/**
 * What this process learnt of an account's balance layout, so an accept on a thin balance reads the
 * shards before its first try instead of after it (docs/decisions/0018-thin-balance-bursts.md).
 *
 * An accept's first try debits a shard picked at random without reading (one request, balance.ts). On a
 * thick balance that try nearly always fits. On a thin one (a few credits a shard, or nothing left) it
 * nearly always falls short, and a short try is not free: it holds its shard for a whole transaction, so
 * a burst's blind tries keep cancelling the one gathering (store/shard-plan.ts) that would put the
 * credits into lumps the racing accepts can take, and each refusal costs a failed transaction before the
 * read that decides its 402. So once a read of this process found an account thin, its next accepts
 * read first (one Query, which holds nothing) for `THIN_MEMORY_MS`, and a read that finds it thick
 * again forgets it at once. Only a hint: a plan made from a read is still checked item by item in the
 * transaction, and forgetting costs one short try.
 *
 * Also here, so the accept's loop (store/tasks.ts) stays as it was: a gathering that met a conflict backs
 * off before it reads again (balance.ts `pauseAfterConflict`), where a single-shard debit retries at once
 * on another shard: the other transaction is most likely a gathering too, whose lumps the next read shows.
 */
import { InsufficientCreditsError } from '../core/errors';
import { readShards, type ShardBalances, totalOf } from './balance';
import type { RetryingStoreContext } from './errors';
import { planTake, type ShardPlan } from './shard-plan';

/** How long a thin layout is remembered: far longer than a burst, short beside a customer's top-up cadence. */
export const THIN_MEMORY_MS = 10_000;

/** Accounts remembered at most (clearing costs each one short try): bounded like store/spend.ts's limits. */
const MAX_REMEMBERED = 10_000;

const thinUntil = new Map<string, number>();

/**
 * Thin for a cost: fewer than half the shards cover it alone, so a shard picked at random more likely
 * falls short than fits.
 */
export function isThin(balances: ShardBalances, cost: number): boolean {
  const covering = balances.filter((balance) => balance >= cost).length;
  return covering * 2 < balances.length;
}

/** Whether a read of this process found the account thin less than `THIN_MEMORY_MS` ago. */
export function thinLately(userId: string, now: number = Date.now()): boolean {
  const until = thinUntil.get(userId);
  if (until === undefined) return false;
  if (until > now) return true;
  thinUntil.delete(userId);
  return false;
}

/** Every shard's balance (balance.ts `readShards`), remembering whether the layout is thin for `cost`. */
export async function readLayout(
  ctx: RetryingStoreContext,
  userId: string,
  cost: number,
  now: () => number = Date.now,
): Promise<ShardBalances> {
  const balances = await readShards(ctx, userId);
  if (!isThin(balances, cost)) thinUntil.delete(userId);
  else {
    if (thinUntil.size >= MAX_REMEMBERED) thinUntil.clear();
    thinUntil.set(userId, now() + THIN_MEMORY_MS);
  }
  return balances;
}

/** The balances an accept plans its first try from: read first on an account found thin lately, else none. */
export async function layoutBeforeFirstTry(
  ctx: RetryingStoreContext,
  userId: string,
  cost: number,
): Promise<ShardBalances | undefined> {
  return thinLately(userId) ? await readLayout(ctx, userId, cost) : undefined;
}

/**
 * What one try of an accept debits: planned from the balances read (store/shard-plan.ts; undefined when
 * they cannot pay), or without a read the cost from shard `target`. A read before the first try that
 * says the account cannot pay still plans that one try, on `target`, with `unpaid` the 402 to answer
 * when it falls short: a replay, an ended key and a changed account limit, which that try tells, outrank
 * the 402.
 */
export function planTry(
  balances: ShardBalances | undefined,
  cost: number,
  input: { target: number; avoid: ReadonlySet<number>; random: () => number; firstTry: boolean },
): { plan?: ShardPlan; unpaid?: InsufficientCreditsError } {
  const blind = [{ shard: input.target, delta: -cost }];
  if (!balances) return { plan: blind };
  const plan = planTake(balances, cost, { prefer: input.target, avoid: input.avoid, random: input.random });
  if (plan || !input.firstTry) return plan ? { plan } : {};
  return { plan: blind, unpaid: new InsufficientCreditsError(cost, totalOf(balances)) };
}
