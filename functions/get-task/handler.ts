/**
 * GET /api/ai/tasks/{id}: the caller's task, refreshed; a queued one with `queuedAhead` and
 * `estimatedStartAt`. With `?wait=N` it answers once the task ends, or after N seconds as it is then.
 */
import { TaskNotFoundError } from '../core/errors';
import { parseWaitQuery } from '../core/wait';
import { apiHandler } from '../http/api-handler';
import { presentTask } from '../lifecycle/present-task';
import { refreshTask } from '../lifecycle/refresh-task';
import { estimateStartAt } from '../lifecycle/start-estimate';
import { waitBudgetMs, waitForTaskEnd } from '../lifecycle/wait-for-task';
import { lifecycleFromEnv } from '../runtime/lifecycle-from-env';
import { getTask } from '../store/tasks';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const taskId = req.pathParameters.id;
  const wait = parseWaitQuery(req.query.wait);
  const lc = lifecycleFromEnv();
  // Keyed by the caller's own user id: someone else's task is simply not there.
  const read = async () => {
    const stored = taskId ? await getTask(lc.store, req.caller.userId, taskId) : undefined;
    // The refresh rule decides whether this read asks the provider (once per interval per task, whoever
    // reads): a waiting request asks no more often than polls would.
    return stored && refreshTask(lc, stored, req.log);
  };
  let task = await read();
  if (task && wait !== undefined) task = await waitForTaskEnd(task, read, waitBudgetMs(wait, req.remainingTimeMs()));
  if (!task) throw new TaskNotFoundError();
  const resource = await presentTask(lc, task, { countAhead: true });
  // Here, not in presentTask: the submits present tasks too and need not bundle the estimate.
  if (resource.queuedAhead !== undefined)
    resource.estimatedStartAt = await estimateStartAt(lc, task, resource.queuedAhead);
  return { statusCode: 200, body: resource };
});
