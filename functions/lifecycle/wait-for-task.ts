/**
 * Holds a request open until its task ends or its wait is over, watching the task's record
 * (docs/api/reference.md#waiting). Nothing here talks to the provider: whoever reads passes a `read`
 * that refreshes under the existing rule (a GET) or only reads (a submit, which has no provider).
 */
import { type TaskRecord, TaskStatus } from '../core/task';
import { WAIT_READ_INTERVAL_MS, WAIT_TIME_RESERVE_MS } from '../core/wait';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * How long a request that asked to wait `seconds` may wait: those seconds, cut so the function keeps
 * {@link WAIT_TIME_RESERVE_MS} of its remaining time for the answer.
 * @param remainingMs the function's remaining time, when the runtime tells it
 */
export function waitBudgetMs(seconds: number, remainingMs: number | undefined): number {
  const asked = seconds * 1000;
  return remainingMs === undefined ? asked : Math.max(0, Math.min(asked, remainingMs - WAIT_TIME_RESERVE_MS));
}

/**
 * Reads the task every {@link WAIT_READ_INTERVAL_MS} until it is no longer pending or `waitMs` has
 * passed (wall clock), and returns it as last read: at most `waitMs / interval + 1` reads.
 * @returns undefined when a read no longer finds the task (deleted meanwhile)
 */
export async function waitForTaskEnd(
  first: TaskRecord,
  read: () => Promise<TaskRecord | undefined>,
  waitMs: number,
  intervalMs = WAIT_READ_INTERVAL_MS,
): Promise<TaskRecord | undefined> {
  const deadline = Date.now() + waitMs;
  let task = first;
  while (task.status === TaskStatus.PENDING) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(intervalMs, left));
    const next = await read();
    if (!next) return undefined;
    task = next;
  }
  return task;
}
