/**
 * `Prefer: wait=N` on a submit (docs/api/reference.md#waiting): the accepted task is watched until it
 * ends or the wait is over. The submit functions have no provider: they only read the task's record,
 * which the provider's callback and the media worker move to its end.
 */
import type { LifecycleConfig } from '../core/lifecycle';
import { type SubmissionResponse, type TaskResource, TaskStatus } from '../core/task';
import type { MediaUrls } from '../media/port';
import type { StoreContext } from '../store/client';
import { getTask } from '../store/tasks';
import { presentTask } from './present-task';
import { waitBudgetMs, waitForTaskEnd } from './wait-for-task';

/**
 * Waits up to `seconds` (cut to the function's remaining time) for the submitted task to end.
 * @returns the ended task as its owner reads it (result URLs, `creditsUsed`), or undefined when it is
 *   still pending (the submit then answers 202 as without the preference)
 */
export async function waitForSubmitted(
  ctx: {
    store: StoreContext;
    now: () => Date;
    /** What signs the ended task's result URLs, built only when one ended. */
    results: () => { media: MediaUrls; config: Pick<LifecycleConfig, 'resultRetentionDays'> };
  },
  input: { userId: string; submitted: SubmissionResponse; seconds: number; remainingMs: number | undefined },
): Promise<TaskResource | undefined> {
  const read = () => getTask(ctx.store, input.userId, input.submitted.taskId);
  const first = await read();
  if (!first) return undefined;
  const task = await waitForTaskEnd(first, read, waitBudgetMs(input.seconds, input.remainingMs));
  if (!task || task.status === TaskStatus.PENDING) return undefined;
  return presentTask({ store: ctx.store, now: ctx.now, ...ctx.results() }, task);
}
