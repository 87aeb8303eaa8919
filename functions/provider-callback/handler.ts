/**
 * POST /api/provider/callbacks/{taskId}?u=<owner>&sig=<signature>: the provider says a task ended.
 * No authorizer: the signature in the URL is the credential. A wrong or missing signature, or an
 * unknown task, is a 404 before any work (no table read for a bad signature, no provider read ever
 * without a valid one). Of the body only the upstream's task id is read (`data.taskId`): a task whose
 * create's outcome is unknown adopts it (docs/design/dispatching.md, "Outcome unknown"); the task's state
 * always comes from the provider.
 */
import { TaskNotFoundError } from '../core/errors';
import { publicHandler } from '../http/public-handler';
import { jsonResponse } from '../http/response';
import { refreshFromCallback } from '../lifecycle/refresh-task';
import { logger } from '../observability/logger';
import { callbackProviderTaskId } from '../provider/http-provider';
import { lifecycleFromEnv } from '../runtime/lifecycle-from-env';
import { getTask } from '../store/tasks';

/** Ids and signatures are short; anything longer is not ours and is refused before hashing it. */
const MAX_PARAMETER_LENGTH = 256;

function parameter(value: string | undefined | null): string | undefined {
  return value && value.length <= MAX_PARAMETER_LENGTH ? value : undefined;
}

export const handler = publicHandler(async (event) => {
  const taskId = parameter(event.pathParameters?.taskId);
  const userId = parameter(event.queryStringParameters?.u);
  const signature = parameter(event.queryStringParameters?.sig);
  // With an upstreams list, the upstream whose key signed the URL (docs/guides/upstreams.md).
  const upstream = parameter(event.queryStringParameters?.up);
  const lc = lifecycleFromEnv();
  if (!taskId || !userId || !signature || !lc.callbacks) throw new TaskNotFoundError();
  if (!(await lc.callbacks.verify(userId, taskId, signature, upstream))) throw new TaskNotFoundError();
  const log = logger.child({ requestId: event.requestContext?.requestId, function: 'provider-callback' });
  const stored = await getTask(lc.store, userId, taskId);
  // A callback signed for another upstream than the one that took the task is not that task's.
  if (!stored || stored.upstream !== upstream) throw new TaskNotFoundError();
  const named = callbackProviderTaskId(event.body, event.isBase64Encoded);
  const outcome = await refreshFromCallback(lc, stored, log, named);
  log.info('Provider callback', { taskId, providerRead: outcome.providerRead, status: outcome.task.status });
  // The provider only needs to know it was heard; nothing about the task goes back.
  return jsonResponse(200, { received: true });
});
