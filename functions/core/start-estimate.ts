/**
 * When a queued task should start (`estimatedStartAt`), from the dispatcher's rules
 * (docs/design/dispatching.md): accounts take turns one send each, in key order from a cursor; each
 * account's own tasks go oldest first; sends keep to the upstream's create rate. Plain arithmetic.
 */
import type { CreateRateLimit } from './provider-capacity';

/** What the estimate is computed from. */
export interface StartEstimateInput {
  /** Now (epoch ms). */
  now: number;
  /** The account's own tasks queued before this one. */
  ownAhead: number;
  /**
   * For each other account with tasks queued: how many, counted no further than `ownAhead + 1` (more
   * cannot come before this task: one send per account per turn).
   */
  otherQueues: readonly number[];
  /** The upstream's create rate; undefined: no rate, sends follow one another as fast as they go. */
  rate: CreateRateLimit | undefined;
}

/**
 * The sends that come before this task's: its own account's `ownAhead`, and from every other account
 * one per turn for `ownAhead` turns, plus the turn this task's comes in when that account comes first.
 * Where the cursor stands is not read (it sits on the dispatcher's capacity item, up to 300 KB), so
 * that last turn counts half for each account that still has a task then: the expected value with the
 * cursor anywhere, off by at most half a send per account waiting.
 */
export function sendsBefore(input: Pick<StartEstimateInput, 'ownAhead' | 'otherQueues'>): number {
  let sends = input.ownAhead;
  for (const queued of input.otherQueues) {
    sends += Math.min(queued, input.ownAhead) + (queued > input.ownAhead ? 0.5 : 0);
  }
  return sends;
}

/**
 * The estimated start (epoch ms): the sends before it at the upstream's pace (one every `window /
 * requests`), from now. The dispatcher's token bucket lets up to three quarters of a window go at once
 * after a quiet spell, so a burst's estimate can be late by up to that much; backoffs and refusals
 * make it early. Without a rate the estimate is now.
 */
export function estimateStart(input: StartEstimateInput): number {
  if (!input.rate) return input.now;
  const paceMs = (input.rate.windowSeconds * 1000) / input.rate.requests;
  return input.now + Math.round(sendsBefore(input) * paceMs);
}
