/**
 * Waking deliveries that wait past the bound on open deliveries (store/webhook-queue.ts): the worker
 * that frees a place, the opener that queued, and the sweeper each minute (the backstop) promote the
 * account's oldest queued deliveries while it is below its bound. A promotion's write claims the first
 * attempt, which the stream hands to the webhook worker as it does a new delivery's.
 */
import { randomUUID } from 'node:crypto';
import { WEBHOOK_CLAIM_SECONDS } from '../core/webhooks';
import type { Logger } from '../observability/logger';
import type { RetryingStoreContext } from '../store/errors';
import { accountsWithQueuedDeliveries, promoteQueuedDeliveries } from '../store/webhook-queue';

/**
 * Promotes the account's queued deliveries into the places free under `maxOpen` (the bound stored with
 * its queue when not given). A failure is logged, never thrown: the sweeper promotes within a minute.
 * @returns how many were promoted
 */
export async function wakeQueuedDeliveries(
  store: RetryingStoreContext,
  input: { userId: string; maxOpen?: number; now: Date },
  log: Logger,
): Promise<number> {
  try {
    const promoted = await promoteQueuedDeliveries(store, {
      userId: input.userId,
      ...(input.maxOpen === undefined ? {} : { maxOpen: input.maxOpen }),
      now: input.now,
      newClaim: () => ({
        claimId: randomUUID(),
        leaseUntil: new Date(input.now.getTime() + WEBHOOK_CLAIM_SECONDS * 1000),
      }),
    });
    if (promoted.length > 0) log.info('Queued webhook deliveries promoted', { promoted: promoted.length });
    return promoted.length;
  } catch (error) {
    log.warn('Promoting queued webhook deliveries failed; the sweeper promotes them', { error });
    return 0;
  }
}

/** The sweeper's part: wakes the queued deliveries of every account that has some. */
export async function wakeQueuedEverywhere(store: RetryingStoreContext, now: Date, log: Logger): Promise<number> {
  let accounts: string[];
  try {
    accounts = await accountsWithQueuedDeliveries(store);
  } catch (error) {
    log.warn('Listing accounts with queued webhook deliveries failed; the next sweep tries again', { error });
    return 0;
  }
  const counts = await Promise.all(accounts.map((userId) => wakeQueuedDeliveries(store, { userId, now }, log)));
  return counts.reduce((sum, n) => sum + n, 0);
}
