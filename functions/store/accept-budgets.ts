/**
 * The spend budgets of one accept (store/tasks.ts `acceptTask`): the key's limit and the account's
 * monthly limit, each counted on its own counter shards (store/spend.ts). What the accept knows of a
 * budget's shards, how it plans to take the cost from them, and where the cost was counted.
 */
import { SpendLimitError } from '../core/errors';
import type { KeySpendLimit } from '../core/task';
import type { RetryingStoreContext, SpendScope } from './errors';
import { planTake, type ShardPlan, totalAmount } from './shard-plan';
import { readSpentShards, SPEND_SHARDS, spendCounterOf, spendRooms } from './spend';

/** A budget as the accept sees it: the limit, and the room on each counter shard once read. */
export interface AcceptBudget {
  limit: KeySpendLimit;
  rooms?: number[];
}

/**
 * Counter shards a gathering takes from at most: with the balance's 32 and the accept's own items, the
 * transaction stays within DynamoDB's 100 items even when both budgets gather at once.
 */
const MAX_GATHER = 28;

/** The room on every counter shard of `limit` in the period of `at` (one Query). */
export async function readRooms(
  ctx: RetryingStoreContext,
  userId: string,
  limit: KeySpendLimit,
  at: Date,
): Promise<number[]> {
  return spendRooms(limit.credits, await readSpentShards(ctx, userId, limit, at));
}

/**
 * The rooms, read now, when no shard's share of the limit covers `cost` (a small limit, or a cost
 * above it): a try on one shard could only fail. Otherwise nothing: the first try takes the cost from
 * one shard unread.
 */
export async function roomsIfThin(
  ctx: RetryingStoreContext,
  userId: string,
  limit: KeySpendLimit,
  cost: number,
  at: Date,
): Promise<{ rooms?: number[] }> {
  return Math.floor(limit.credits / SPEND_SHARDS) >= cost ? {} : { rooms: await readRooms(ctx, userId, limit, at) };
}

/**
 * How this try takes `cost` from the budget: from the shard the balance is debited on (`prefer`) while
 * its rooms are unknown, else as store/shard-plan.ts plans it from what was read. When what was read
 * leaves less room than `cost` in all, the try still takes it from one shard (`exhausted` is the 402 to
 * answer when that shard turns out short): the same try tells an Idempotency-Key's replay, an ended key
 * and a changed account limit, which outrank a spent budget, and room a refund gave back meanwhile is
 * used.
 */
export function budgetPlan(
  budget: AcceptBudget,
  input: { scope: SpendScope; cost: number; prefer: number; random: () => number; at: Date },
): { plan: ShardPlan; exhausted?: SpendLimitError } {
  const single = [{ shard: input.prefer, delta: -input.cost }];
  if (!budget.rooms) return { plan: single };
  const plan = planTake(budget.rooms, input.cost, {
    prefer: input.prefer,
    random: input.random,
    maxShards: MAX_GATHER,
  });
  if (plan) return { plan };
  const { limit } = budget;
  const resetsAt = spendCounterOf('', limit, input.at).resetsAt?.toISOString() ?? null;
  const spent = limit.credits - totalAmount(budget.rooms);
  return { plan: single, exhausted: new SpendLimitError(limit.credits, limit.period, spent, resetsAt, input.scope) };
}

/** The shard a plan takes most from: where a refund gives the cost back. */
function mainShard(plan: ShardPlan | undefined): number | undefined {
  if (!plan || plan.length === 0) return undefined;
  return plan.reduce((most, entry) => (entry.delta < most.delta ? entry : most)).shard;
}

/** Where the task's cost is counted (the task records it for its refund); undefined where it is not. */
export function countedOn(
  userId: string,
  budgets: ReadonlyMap<SpendScope, AcceptBudget>,
  plans: ReadonlyMap<SpendScope, ShardPlan>,
  at: Date,
): { spendShard?: number; accountSpendCounter?: string; accountSpendShard?: number } {
  const account = budgets.get('account');
  return {
    spendShard: mainShard(plans.get('key')),
    accountSpendCounter: account ? spendCounterOf(userId, account.limit, at).key.SK : undefined,
    accountSpendShard: account ? mainShard(plans.get('account')) : undefined,
  };
}
