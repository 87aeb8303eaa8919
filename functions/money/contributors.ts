/**
 * The contributors of the money transactions (money/transaction.ts): each builds its items with store/'s
 * item builders and named conditions, and reads what a failure of its own condition means. A new limit
 * is one more contributor here and one entry in the transaction's list (money/accept.ts).
 */
import type { KeySpendLimit } from '../core/task';
import { type KeyGuard, keyEndCheck, shardChange } from '../store/balance';
import * as conditions from '../store/condition-fragments';
import { and, conditionParams, update, updateParams } from '../store/conditions';
import { type RetryingStoreContext, readNumber, readString, type SpendScope } from '../store/errors';
import { type LedgerEntry, ledgerEntryItem } from '../store/ledger-entry';
import { spendCounterChange } from '../store/spend';
import { TABLE } from '../store/table';
import * as keys from '../store/task-keys';
import type { TransactItem } from '../store/transaction';
import type { AcceptFinding, RefundFinding } from './findings';
import { type Contributor, type Finding, failedCondition } from './transaction';

/** A contributor with no condition of its own: its items only (the queue entry, the usage counters). */
export function unconditioned<F extends Finding>(name: string, items: TransactItem[]): Contributor<F> {
  return { name, items };
}

/** The accepted task, put as a new item (the task id is not taken). */
export function newTask(ctx: RetryingStoreContext, item: Record<string, unknown>): Contributor<AcceptFinding> {
  return {
    name: 'task',
    items: [
      {
        Put: {
          TableName: ctx.tableName,
          Item: item,
          ...conditionParams(conditions.itemIsNew()),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ],
    read: (reasons) => (failedCondition(reasons) ? { kind: 'task-taken' } : undefined),
  };
}

/**
 * The ledger entry of a movement, put as a new item: its key is unique per movement (a refund's is the
 * task's, so the ledger cannot hold two refunds of one task). `taken` is what an existing entry means to
 * the transaction it is in.
 */
export function ledgerEntry<F extends Finding>(
  ctx: RetryingStoreContext,
  input: { entry: LedgerEntry; keyTime?: string; taken: F },
): Contributor<F> {
  return {
    name: 'ledger entry',
    items: [
      {
        Put: {
          TableName: ctx.tableName,
          Item: ledgerEntryItem(input.entry, input.keyTime),
          ...conditionParams(conditions.itemIsNew()),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ],
    read: (reasons) => (failedCondition(reasons) ? input.taken : undefined),
  };
}

/**
 * The Idempotency-Key's record, put while the key is free (never used, or expired). Taken, it names the
 * task to replay when the request is the same (`requestHash`), none when it differs.
 */
export function idempotencyRecord(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    key: string;
    taskId: string;
    requestHash: string;
    createdAt: string;
    nowSeconds: number;
    ttlSeconds: number;
  },
): Contributor<AcceptFinding> {
  return {
    name: 'idempotency record',
    items: [
      {
        Put: {
          TableName: ctx.tableName,
          Item: {
            ...keys.idempotency(input.userId, input.key),
            taskId: input.taskId,
            requestHash: input.requestHash,
            createdAt: input.createdAt,
            [TABLE.ttlAttribute]: input.nowSeconds + input.ttlSeconds,
          },
          ...conditionParams(conditions.idempotencyKeyFree(input.nowSeconds)),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ],
    read: (reasons) => {
      const failed = failedCondition(reasons);
      return (
        failed &&
        idempotencyFinding(readString(failed.Item, 'taskId'), readString(failed.Item, 'requestHash'), input.requestHash)
      );
    },
  };
}

/**
 * What a taken Idempotency-Key's record (its task and request hash) means to a request of hash
 * `requestHash`: a replay of that task when the request is the same, else a conflict (409). Also read
 * from the record itself by a refusal without a transaction (money/accept.ts).
 */
export function idempotencyFinding(
  taskId: unknown,
  recordHash: unknown,
  requestHash: string,
): Extract<AcceptFinding, { kind: 'idempotency' }> {
  const same = typeof taskId === 'string' && recordHash === requestHash;
  return { kind: 'idempotency', replayOf: same ? taskId : undefined };
}

/**
 * One balance shard's debit (store/balance.ts `shardChange`: the shard holds what is taken, and carries
 * the account limit version the accept states). Failed, it is `short`, or `account-limit` when it carries
 * another version (learnt from the shard); held by another transaction, a `conflict` on that shard.
 */
export function balanceDebit(
  ctx: RetryingStoreContext,
  input: { userId: string; shard: number; delta: number; at: string; accountLimitVersion: number | undefined },
): Contributor<AcceptFinding> {
  return {
    name: `balance shard ${input.shard}`,
    items: [shardChange(ctx, input)],
    read: ([reason]) => {
      if (reason?.Code === 'TransactionConflict') return { kind: 'conflict', shard: input.shard };
      if (reason?.Code !== 'ConditionalCheckFailed') return undefined;
      const version = readNumber(reason.Item, 'acctLimitVersion') ?? 0;
      if (version !== (input.accountLimitVersion ?? version)) {
        return { kind: 'account-limit', version, credits: readNumber(reason.Item, 'acctLimitCredits') };
      }
      return { kind: 'short', shard: input.shard };
    },
  };
}

/** One balance shard's credit (a refund, a grant): no condition. */
export function balanceCredit<F extends Finding>(
  ctx: RetryingStoreContext,
  input: { userId: string; shard: number; delta: number; at: string },
): Contributor<F> {
  return unconditioned(`balance shard ${input.shard}`, [shardChange(ctx, input)]);
}

/** The key guard of an accept (store/balance.ts `keyEndCheck`); failed, read by `guardFinding`. */
export function keyGuard(
  ctx: RetryingStoreContext,
  input: { userId: string; guard: KeyGuard; shard: number },
): Contributor<AcceptFinding> {
  return {
    name: 'key guard',
    items: [keyEndCheck(ctx, input.userId, input.guard, input.shard)],
    read: (reasons) => {
      const failed = failedCondition(reasons);
      return (
        failed && guardFinding(readNumber(failed.Item, 'endsAt'), readNumber(failed.Item, 'limitVersion'), input.guard)
      );
    },
  };
}

/**
 * What a key guard whose check failed means: the key has ended when its `endsAt` is at or before the
 * accept's time, or it has no limit stamp to blame (an old guard, or no item returned); otherwise its
 * spend limit changed since the authorizer read it. Also read from the guard itself by a refusal
 * without a transaction (money/accept.ts).
 */
export function guardFinding(endsAt: unknown, limitVersion: unknown, guard: KeyGuard): AcceptFinding {
  const ended = (typeof endsAt === 'number' && endsAt <= guard.nowSeconds) || typeof limitVersion !== 'number';
  return { kind: ended ? 'key-ended' : 'limit-changed' };
}

/**
 * One counter shard of a spend allowance (the key's budget or the account's, `scope`): the cost counted
 * on it within its room (store/spend.ts `spendCounterChange`). Failed, the allowance is `short` there
 * (the budget's sum then decides a 402).
 */
export function spendAllowance(
  ctx: RetryingStoreContext,
  input: { scope: SpendScope; userId: string; limit: KeySpendLimit; shard: number; delta: number; at: Date },
): Contributor<AcceptFinding> {
  const { scope, ...change } = input;
  return {
    name: `${scope} spend allowance shard ${input.shard}`,
    items: [spendCounterChange(ctx, change)],
    read: (reasons) => (failedCondition(reasons) ? { kind: 'short', scope } : undefined),
  };
}

/**
 * The failed task's update of a refund: PENDING to FAILED, its credits marked refunded, out of the
 * pending index, on the conditions that it is pending, not yet refunded, charged as the caller's copy
 * says and, for a cancel, still queued here. Failed, the task is missing (no item came back), or no
 * longer refundable as the caller described it.
 */
export function refundedTask(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    taskId: string;
    /** What the failure sets on the task (status, error fields, `updatedAt`). */
    set: Record<string, unknown>;
    credits: number;
    createdAt: string;
    whileQueued: boolean | undefined;
  },
): Contributor<RefundFinding> {
  return {
    name: 'task',
    items: [
      {
        Update: {
          TableName: ctx.tableName,
          Key: keys.task(input.userId, input.taskId),
          ...updateParams(
            update({ set: input.set, remove: [TABLE.pendingIndex.partitionKey, TABLE.pendingIndex.sortKey] }),
            and(
              conditions.taskIsPending(),
              conditions.notYetRefunded(),
              conditions.chargedAs(input.credits, input.createdAt),
              ...(input.whileQueued ? [conditions.stillQueued()] : []),
            ),
          ),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ],
    read: (reasons) => {
      const failed = failedCondition(reasons);
      if (!failed) return undefined;
      return failed.Item ? { kind: 'not-refundable' } : { kind: 'task-missing' };
    },
  };
}
