/**
 * POST /api/ai/tasks/{id}/cancel: cancels the caller's task while it still waits in the queue, and
 * refunds it (`status: 2`, `errorCode: CANCELLED`). 409 once it has left for the provider or ended, 404
 * for another owner's task or an unknown id. An API key or a session (with the CSRF check).
 */

import { TaskNotFoundError } from '../core/errors';
import { toTaskResource } from '../core/lifecycle';
import { apiHandler } from '../http/api-handler';
import { cancelTask } from '../lifecycle/cancel-task';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const taskId = req.pathParameters.id;
  if (!taskId) throw new TaskNotFoundError();
  const cancelled = await cancelTask(
    { store: storeFromEnv(), now: () => new Date() },
    { userId: req.caller.userId, taskId },
    req.log,
  );
  return { statusCode: 200, body: toTaskResource(cancelled) };
});
