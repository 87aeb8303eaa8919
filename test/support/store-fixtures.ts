/** Small builders shared by the store's integration tests. */
import { randomUUID } from 'node:crypto';
import { ServiceBusyError } from '../../functions/core/errors';
import type { NewTask } from '../../functions/store/tasks';

export const T0 = new Date('2026-11-01T10:00:00.000Z');

/** A unique user id per test, so tests in one file never share an account. */
export function newUserId(): string {
  return `user-${randomUUID()}`;
}

/** An image task of `userId` costing `cost`, with a fresh id unless given. */
export function newTask(userId: string, cost: number, overrides: Partial<NewTask> = {}): NewTask {
  return {
    userId,
    taskId: randomUUID(),
    type: 'image',
    model: 'image-model-1',
    prompt: 'a lighthouse at dusk',
    request: { model: 'image-model-1', prompt: 'a lighthouse at dusk', numOutputs: 1 },
    creditsUsed: cost,
    keyId: 'key-1',
    now: T0,
    ...overrides,
  };
}

/**
 * Runs `operation` again after each `ServiceBusyError`, as a client answered 503 with `Retry-After` is
 * told to (a busy answer wrote nothing, so trying again is safe), until it gives a definite answer. Money tests under the conflict layer use it so that a loaded
 * machine, where held items meet more conflicts than the store's retry budget wins, cannot turn their
 * check of exactness into a check of that budget. Bounded, so that a store that never makes progress
 * fails the test rather than hanging it.
 */
export async function retriedWhileBusy<T>(operation: () => Promise<T>): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof ServiceBusyError) || round >= BUSY_ROUNDS) throw error;
      await new Promise((wait) => setTimeout(wait, Math.random() * error.retryAfterSeconds * 1000));
    }
  }
}

/** Rounds of `retriedWhileBusy` before it gives the busy answer up as the outcome. */
const BUSY_ROUNDS = 50;
