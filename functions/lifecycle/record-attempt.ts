/**
 * Recording an attempt that was made (a task's, an account event's or an endpoint's delivery): the one
 * rule that keeps our own retries from sending a delivery again after it was answered.
 */
import { ServiceBusyError } from '../core/errors';
import type { StoreContext } from '../store/client';
import { recordAttempt } from '../store/webhooks';

/** Tries at recording an attempt made (`withRetry`'s attempts) before waiting and trying again. */
const RECORD_ATTEMPTS = 12;

/** How long an attempt made keeps trying to get recorded against contention (the worker runs 60 s at most). */
const RECORD_WITHIN_MS = 30_000;

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
export async function recordMadeAttempt(
  store: StoreContext,
  input: Parameters<typeof recordAttempt>[1],
): Promise<boolean> {
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
