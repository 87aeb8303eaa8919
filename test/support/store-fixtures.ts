/** Small builders shared by the store's integration tests. */
import { randomUUID } from 'node:crypto';
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
