/**
 * `estimatedStartAt` of a queued task as its owner reads it (functions/core/start-estimate.ts for the
 * arithmetic and what it leaves out).
 */
import { type CreateRateLimit, parseCreateRateLimit } from '../core/provider-capacity';
import { estimateStart } from '../core/start-estimate';
import type { TaskRecord } from '../core/task';
import { PROVIDER_CREATE_RATE_LIMIT, readEnv } from '../environment/environment';
import type { StoreContext } from '../store/client';
import { otherAccountsQueued } from '../store/queue-turns';

/** The upstream's create rate the dispatcher keeps to (`PROVIDER_CREATE_RATE_LIMIT`; a string parsed per read). */
function rateFromEnv(): CreateRateLimit | undefined {
  const text = readEnv(PROVIDER_CREATE_RATE_LIMIT);
  return text === undefined ? undefined : parseCreateRateLimit(text, PROVIDER_CREATE_RATE_LIMIT.name);
}

/**
 * The estimated start (ISO 8601) of a queued task with `ownAhead` of its account's tasks before it.
 * Without a rate no Query is made: the estimate is now.
 */
export async function estimateStartAt(
  lc: { store: StoreContext; now: () => Date },
  task: Pick<TaskRecord, 'userId'>,
  ownAhead: number,
): Promise<string> {
  const now = lc.now().getTime();
  const pace = rateFromEnv();
  const otherQueues = pace ? await otherAccountsQueued(lc.store, { userId: task.userId, upTo: ownAhead + 1 }) : [];
  return new Date(estimateStart({ now, ownAhead, otherQueues, rate: pace })).toISOString();
}
