/**
 * Recording an attempt that was made (a task's, an account event's or an endpoint's delivery): what
 * comes after it, the one rule that keeps our own retries from sending a delivery again after it was
 * answered, and the queued delivery a freed place wakes. lifecycle/webhooks.ts and
 * lifecycle/endpoint-deliveries.ts make their attempts differently and record them here alike.
 */
import { ServiceBusyError } from '../core/errors';
import { DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES, isDelivered, nextAttemptAt } from '../core/webhooks';
import type { Logger } from '../observability/logger';
import type { StoreContext } from '../store/client';
import { type AttemptRecord, recordAttempt } from '../store/webhook-attempts';
import type { AfterAttempt } from '../store/webhooks';
import type { AttemptOutcome } from '../webhooks/send';
import { wakeQueuedDeliveries } from './webhook-queue';

/** Tries at recording an attempt made (`withRetry`'s attempts) before waiting and trying again. */
const RECORD_ATTEMPTS = 12;

/** How long an attempt made keeps trying to get recorded against contention (the worker runs 60 s at most). */
const RECORD_WITHIN_MS = 30_000;

/** What recording needs of the worker: the table, the clock, the retry schedule and the bound. */
export interface AttemptRecordingContext {
  store: StoreContext;
  now: () => Date;
  webhooks: {
    /** Seconds to wait after each failed attempt. */
    retryDelays: readonly number[];
    /** The account's bound on open deliveries, for promoting the queued delivery a freed place wakes. */
    maxOpenDeliveries?: number;
  };
}

/** An attempt that was made under a claim. */
export interface FinishedAttempt {
  /** The claimed delivery (`taskId`: its key, a task's id, an account event's or a `dlv_` id). */
  ref: { userId: string; taskId: string; claimId: string };
  /** The attempt's number (1-based). */
  attempt: number;
  startedAt: Date;
  outcome: AttemptOutcome;
  /** The delivery is counted in the account's open deliveries (`countsOpen`). */
  countsOpen: boolean;
  /** No attempt follows this one, whatever its answer (an ended endpoint, a one-attempt redelivery). */
  last?: boolean;
}

/**
 * Records a finished attempt with what comes next: delivered on a 2xx, else the next time of the
 * schedule, or failed when the schedule is spent (or there is none). When the delivery ends and its
 * place in the account's open deliveries frees, the account's oldest queued delivery, whichever
 * endpoint it is for, takes it.
 * @returns whether it was recorded (false: the claim was lost, nothing written) and what comes next
 */
export async function recordFinishedAttempt(
  lc: AttemptRecordingContext,
  input: FinishedAttempt,
  log: Logger,
): Promise<{ recorded: boolean; next: AfterAttempt }> {
  const { ref, outcome } = input;
  const finishedAt = lc.now();
  const next = afterAttempt(input, finishedAt, input.last ? undefined : lc.webhooks.retryDelays);
  const recorded = await recordMadeAttempt(lc.store, {
    userId: ref.userId,
    taskId: ref.taskId,
    claimId: ref.claimId,
    attempt: {
      attempt: input.attempt,
      at: input.startedAt.toISOString(),
      durationMs: outcome.durationMs,
      ...(outcome.statusCode === undefined ? {} : { statusCode: outcome.statusCode }),
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
    },
    next,
    now: finishedAt,
    countsOpen: input.countsOpen,
  });
  if (recorded && next.state !== 'waiting' && input.countsOpen) {
    const maxOpen = lc.webhooks.maxOpenDeliveries ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES;
    await wakeQueuedDeliveries(lc.store, { userId: ref.userId, maxOpen, now: finishedAt }, log);
  }
  return { recorded, next };
}

/** Delivered on a 2xx; else the schedule's next time, or failed when it is spent (or there is none). */
function afterAttempt(
  input: FinishedAttempt,
  finishedAt: Date,
  retryDelays: readonly number[] | undefined,
): AfterAttempt {
  if (isDelivered(input.outcome.statusCode)) return { state: 'delivered' };
  const dueAt = retryDelays ? nextAttemptAt(input.attempt, finishedAt, retryDelays) : undefined;
  return dueAt ? { state: 'waiting', dueAt } : { state: 'failed' };
}

/**
 * Records an attempt that was made, trying again while the table answers busy (contention on the
 * account's counter item, which a delivered or given-up attempt moves) until it is recorded, its claim
 * is found lost, or `RECORD_WITHIN_MS` passed. Why: an attempt whose record throws is made again under
 * the same claim when its stream record is retried, so a delivery answered 2xx would be sent twice by
 * our own retry. Measured: with a plain write's 5 tries, a burst past the bound through the conflict
 * layer sent one in four twice; with 12, a counter item held longer than their backoff (7 s in
 * test/integration/webhooks.test.ts) still made the record throw.
 * @returns false when the claim was lost (nothing written)
 */
async function recordMadeAttempt(store: StoreContext, input: AttemptRecord): Promise<boolean> {
  const deadline = Date.now() + RECORD_WITHIN_MS;
  for (;;) {
    try {
      return await recordAttempt({ ...store, retry: { maxAttempts: RECORD_ATTEMPTS } }, input);
    } catch (error) {
      if (!(error instanceof ServiceBusyError) || Date.now() > deadline) throw error;
      await new Promise((next) => setTimeout(next, 100 + Math.random() * 400));
    }
  }
}
