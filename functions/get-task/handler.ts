/**
 * GET /api/ai/tasks/{id}: the caller's task, refreshed; a queued one with `queuedAhead`.
 */
import { TaskNotFoundError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { presentTask } from '../lifecycle/present-task';
import { refreshTask } from '../lifecycle/refresh-task';
import { lifecycleFromEnv } from '../runtime/lifecycle-from-env';
import { getTask } from '../store/tasks';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const taskId = req.pathParameters.id;
  const lc = lifecycleFromEnv();
  // Keyed by the caller's own user id: someone else's task is simply not there.
  const stored = taskId ? await getTask(lc.store, req.caller.userId, taskId) : undefined;
  if (!stored) throw new TaskNotFoundError();
  const task = await refreshTask(lc, stored, req.log);
  return { statusCode: 200, body: await presentTask(lc, task, { countAhead: true }) };
});
