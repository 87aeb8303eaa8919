/**
 * The refund (fail-and-refund, and the cancel of a queued task): composed from its contributors (the
 * task's update, a balance shard's credit, the ledger's refund entry, the spend allowances' counters, the
 * usage counters) and answered by the refund's declared precedence (money/findings.ts).
 */
import { type ErrorCode, type TaskRecord, TaskStatus } from '../core/task';
import { randomShard } from '../store/balance';
import type { RetryingStoreContext } from '../store/errors';
import { spendCounterRefund } from '../store/spend';
import { getTask } from '../store/tasks';
import { transact } from '../store/transaction';
import { usageRefundChanges } from '../store/usage';
import { balanceCredit, ledgerEntry, refundedTask, unconditioned } from './contributors';
import { REFUND_PRECEDENCE, type RefundFinding } from './findings';
import { type ComposedTransaction, type Contributor, compose, decide } from './transaction';

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

/**
 * What a cancelled refund means, by the refund's precedence: the task was missing, or it is no longer
 * refundable (terminal, already refunded: the exactly-once case). Rethrows anything else.
 */
export function refundAnswer(error: unknown, transaction: ComposedTransaction<RefundFinding>): RefundFinding['kind'] {
  const decided = decide(transaction.findings(error) ?? [], REFUND_PRECEDENCE);
  if (!decided) throw error;
  return decided;
}

/**
 * Fails a pending task and gives its credits back, exactly once however many callers race: ONE
 * `TransactWriteItems` that moves the task `status 0 -> 2` and `creditsRefunded false -> true` (both
 * conditions), sets the error fields, leaves the pending index, adds `creditsUsed` to one balance shard
 * (picked at random, again on each retry) and puts the ledger refund. The refund entry's key is the task's (creation time, id, 'refund'), so even
 * the ledger cannot hold two refunds of one task.
 *
 * Returns `{ task, refunded: true }` to the caller that refunded, `{ task: <current>, refunded: false }`
 * when the task was already terminal (read after the failed attempt), undefined when it does not exist.
 *
 * A refund that is not a cancel whose condition failed, yet whose re-read shows the task still pending,
 * unrefunded and charged as the caller's copy says, also returns `{ task: <current>, refunded: false }`
 * (it used to throw). That is safe: the cancelled transaction wrote nothing, so no credit was made or
 * lost, and the task is still pending with its charge held and still in the pending index (the update
 * that takes it out is the one that failed); the sweeper's walk of pending tasks (or the next poller)
 * fails and refunds it, exactly once by the same conditions. Throwing would only report, as a fault, a
 * race the caller cannot act on. A copy that does not match the stored charge still throws: that is
 * the caller's bug, not a race.
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
  const failure = {
    status: TaskStatus.FAILED,
    creditsRefunded: true,
    errorCode: input.errorCode,
    errorMessage: input.errorMessage,
    ...(input.providerErrorCode === undefined ? {} : { providerErrorCode: input.providerErrorCode }),
    updatedAt,
  };
  const charged = base;
  const refund = (shard: number): ComposedTransaction<RefundFinding> => {
    const contributors: Array<Contributor<RefundFinding>> = [
      refundedTask(ctx, {
        userId: input.userId,
        taskId: input.taskId,
        set: failure,
        credits,
        createdAt: charged.createdAt,
        whileQueued: input.whileQueued,
      }),
      balanceCredit(ctx, { userId: input.userId, shard, delta: credits, at: updatedAt }),
      ledgerEntry<RefundFinding>(ctx, {
        entry: { userId: input.userId, kind: 'refund', delta: credits, at: updatedAt, taskId: input.taskId },
        keyTime: charged.createdAt,
        // The refund entry's key is unique per task, so it exists only if the task was refunded.
        taken: { kind: 'not-refundable' },
      }),
    ];
    // Accepted with a limited key: the credits go back to the budget of the period they were counted in.
    for (const [sk, counterShard] of [
      [charged.spendCounter, charged.spendShard],
      [charged.accountSpendCounter, charged.accountSpendShard],
    ] as const) {
      if (!sk) continue;
      contributors.push(
        unconditioned('spend allowance', [
          spendCounterRefund(ctx, { userId: input.userId, sk, shard: counterShard, credits, at: input.now }),
        ]),
      );
    }
    // Usage: the refund on its day, the failed task on its accept's day (store/usage.ts).
    contributors.push(
      unconditioned(
        'usage counter',
        usageRefundChanges(ctx, {
          userId: input.userId,
          shard,
          subject: { keyId: charged.keyId, model: charged.model },
          credits,
          acceptedAt: charged.createdAt,
          at: updatedAt,
        }),
      ),
    );
    return compose(contributors);
  };

  // A cancel can meet the task while a dispatcher holds it (`sending`) and then puts it back in the
  // queue (a 429, a refused send): the condition failed, yet the re-read shows it queued again. That is
  // not a lost race, so the cancel tries again from the task as it now is, a few rounds.
  for (let round = 1; ; round += 1) {
    const attempt = await refundOnce(ctx, refund);
    if (attempt === 'refunded') return { task: { ...base, ...failure }, refunded: true };
    if (attempt === 'task-missing') return undefined;
    const current = await getTask(ctx, input.userId, input.taskId);
    if (!current) return undefined;
    const refundable = current.status === TaskStatus.PENDING && !current.creditsRefunded;
    if (!refundable) return { task: current, refunded: false };
    const sameCharge = current.creditsUsed === base.creditsUsed && current.createdAt === base.createdAt;
    if (!sameCharge) {
      // Still refundable, so the condition that failed was chargedAs: the caller's copy is not this task.
      throw new Error('failAndRefund: the given task does not match the stored one', { cause: attempt.error });
    }
    const leftQueue = current.stage !== 'queued' || current.providerTaskId !== undefined;
    if (!input.whileQueued || leftQueue || round >= CANCEL_ROUNDS) return { task: current, refunded: false };
  }
}

/** How many times a cancel tries again when it met its task on a dispatcher's round trip. */
const CANCEL_ROUNDS = 4;

/**
 * One refund transaction (tried again on transient cancellations by the runner): `refunded`, the task
 * missing, or a failed condition the caller reads the task to explain.
 */
async function refundOnce(
  ctx: RetryingStoreContext,
  refund: (shard: number) => ComposedTransaction<RefundFinding>,
): Promise<'refunded' | 'task-missing' | { error: unknown }> {
  // Each try credits a shard picked afresh, so a shard held by an accept is rarely met twice.
  // The last try's transaction: its contributors read the failure.
  let transaction: ComposedTransaction<RefundFinding> | undefined;
  try {
    await transact(
      ctx,
      () => {
        transaction = refund(randomShard(undefined, ctx.retry?.random));
        return transaction.items;
      },
      // Racing pollers and sweepers all want the same task item, and each conflict costs a loser one
      // try: a larger budget than an accept's, so a crowd of them still ends in one refund, not a 503.
      { maxAttempts: 20, ...ctx.retry },
    );
    return 'refunded';
  } catch (error) {
    if (!transaction) throw error;
    return refundAnswer(error, transaction) === 'task-missing' ? 'task-missing' : { error };
  }
}
