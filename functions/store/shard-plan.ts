/**
 * How an accept takes `cost` from an amount split over shards: the balance (credits per balance shard)
 * and a spend allowance (the room left per counter shard, store/spend.ts). Pure: the store builds the
 * items from the plan, each with its own condition, so a plan made from a stale read can fail but never
 * take what is not there.
 *
 * The shape of the split decides how fast a burst settles. Spread evenly, a thin amount (a few credits
 * per shard) makes every accept gather from several shards, and racing accepts all gather from the same
 * few: a storm of conflicts for seconds. So a plan made from a read takes the whole cost from one shard
 * that covers it when enough shards do, and otherwise gathers every shard with something on it into as
 * many lumps of at least one cost as the amount allows. One such gathering holds many shards for one
 * transaction; after it, every racing accept finds a shard of its own that covers it.
 */

/** Amounts by shard number (a shard of an allowance may be below zero after its limit was lowered). */
export type ShardAmounts = number[];

/** Shard numbers and the (non-zero) change of each one's amount; the changes add up to `-cost`. */
export type ShardPlan = Array<{ shard: number; delta: number }>;

/**
 * Takes from one covering shard while at least this share of the lumps the amount could make are
 * there (`floor(total / cost)`, at most one per shard); below it, a gathering is worth its one hold.
 */
const GOOD_LAYOUT_SHARE = 0.5;

/** The sum of the amounts (negative shards count: an allowance overdrawn by a lowered limit). */
export function totalAmount(amounts: ShardAmounts): number {
  return amounts.reduce((sum, amount) => sum + amount, 0);
}

/**
 * A plan that takes `cost` from `amounts`, or undefined when the total cannot pay it.
 *
 * - Enough shards cover the cost alone: one of them (`prefer` when it covers, else one at random not
 *   in `avoid`), a single item.
 * - Otherwise: every shard with something on it (richest first, at most `maxShards`; none in `avoid`
 *   while the others cover the cost) gives all it has, and what is left after the cost goes back to the
 *   richest of them in equal lumps of at least `cost`.
 */
export function planTake(
  amounts: ShardAmounts,
  cost: number,
  options: { prefer?: number; avoid?: ReadonlySet<number>; random?: () => number; maxShards?: number } = {},
): ShardPlan | undefined {
  const random = options.random ?? Math.random;
  const avoid = options.avoid ?? new Set<number>();
  const total = totalAmount(amounts);
  if (total < cost) return undefined;
  const shards = [...amounts.keys()];
  const covering = shards.filter((shard) => (amounts[shard] ?? 0) >= cost);
  const lumps = cost > 0 ? Math.min(amounts.length, Math.floor(total / cost)) : amounts.length;
  if (covering.length > 0 && covering.length >= Math.ceil(lumps * GOOD_LAYOUT_SHARE)) {
    if (options.prefer !== undefined && covering.includes(options.prefer) && !avoid.has(options.prefer)) {
      return single(options.prefer, cost);
    }
    const free = covering.filter((shard) => !avoid.has(shard));
    const pool = free.length > 0 ? free : covering;
    return single(pool[Math.floor(random() * pool.length)] ?? 0, cost);
  }
  // Around the shards a racing transaction holds (`avoid`) while the others cover the cost: a gathering
  // names every donor, and one held donor would cancel it again.
  const positive = shards.filter((shard) => (amounts[shard] ?? 0) > 0);
  const unheld = positive.filter((shard) => !avoid.has(shard));
  const pool = totalAmount(unheld.map((shard) => amounts[shard] ?? 0)) >= cost ? unheld : positive;
  // Richest first; ties broken at random so racing gatherings do not all list the same shards first.
  const donors = pool
    .map((shard) => [shard, (amounts[shard] ?? 0) + random() / 2] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([shard]) => shard);
  const involved = donors.slice(0, options.maxShards ?? donors.length);
  let covered = involved.reduce((sum, shard) => sum + (amounts[shard] ?? 0), 0);
  // A cap too tight to cover: take the next richest until covered (the total covers).
  for (const shard of donors.slice(involved.length)) {
    if (covered >= cost) break;
    involved.push(shard);
    covered += amounts[shard] ?? 0;
  }
  if (covered < cost) return undefined;
  const left = covered - cost;
  const keep = Math.max(1, Math.min(involved.length, cost > 0 ? Math.floor(left / cost) : involved.length));
  return involved
    .map((shard, i) => {
      const after = i < keep ? Math.floor(left / keep) + (i < left % keep ? 1 : 0) : 0;
      return { shard, delta: after - (amounts[shard] ?? 0) };
    })
    .filter((entry) => entry.delta !== 0);
}

/** One shard gives the whole cost (a cost of 0 still names its shard: the accept's items align on it). */
function single(shard: number, cost: number): ShardPlan {
  return [{ shard, delta: -cost }];
}
