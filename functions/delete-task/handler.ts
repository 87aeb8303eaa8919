/**
 * DELETE /api/ai/tasks/{id}: removes the caller's ended task, its result files and its references in
 * storage; 204. A pending task: 409 (cancel it first). Another owner's task, an unknown or an already
 * deleted one: 404. The ledger keeps its entries (docs/design/accounts.md#deleting-data). An API key or
 * a session (with the CSRF check).
 */
import { TaskNotFoundError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { deleteTask } from '../lifecycle/delete-data';
import { removalFromEnv } from '../runtime/removal-from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const taskId = req.pathParameters.id;
  if (!taskId) throw new TaskNotFoundError();
  await deleteTask(removalFromEnv(), { userId: req.caller.userId, taskId }, req.log);
  return { statusCode: 204, body: undefined };
});
