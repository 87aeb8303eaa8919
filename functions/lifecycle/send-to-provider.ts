/**
 * Sending a task to the provider, shared by submission and by the retry in refresh.
 */
import type { TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
import { ProviderRejectedError, ProviderUnavailableError } from '../provider/port';
import { recordProviderTask } from '../store/tasks';
import { failTask } from './finish-task';
import { type ProviderLifecycle, timedProviderCall } from './lifecycle';
import { withSignedUploads } from './uploads';

/** The provider request kept on the task at acceptance, so a retry sends exactly the same thing. */
export interface StoredProviderRequest {
  model: string;
  input: Record<string, unknown>;
}

/**
 * The provider request as stored: without `input.prompt` when it is the task's prompt, which the task
 * item holds already. An input built from a request always has a `prompt`, so a stored one without it
 * means "the task's prompt" (tasks stored before this rule keep theirs and are read as they are).
 */
export function withoutTaskPrompt(request: StoredProviderRequest, taskPrompt: string): StoredProviderRequest {
  const { prompt, ...input } = request.input;
  return prompt === taskPrompt ? { ...request, input } : request;
}

function storedProviderRequest(task: TaskRecord): StoredProviderRequest {
  const stored = task.request.providerRequest as StoredProviderRequest | undefined;
  if (!stored || typeof stored.model !== 'string') throw new Error(`Task ${task.taskId} has no provider request`);
  return 'prompt' in stored.input ? stored : { ...stored, input: { prompt: task.prompt, ...stored.input } };
}

/**
 * Sends the task. A refusal fails and refunds it (PROVIDER_REJECTED); an unreachable provider leaves it
 * pending without a provider id, and the refresh step retries the send.
 * @returns the task after the attempt
 */
export async function sendToProvider(lc: ProviderLifecycle, task: TaskRecord, log: Logger): Promise<TaskRecord> {
  const request = storedProviderRequest(task);
  try {
    // The callback URL is made on each send, never stored: it carries the task's signature.
    const callBackUrl = await lc.callbacks?.urlFor(task.userId, task.taskId);
    // Upload references become short-lived signed GET URLs at each send; the task keeps the references.
    const signed = await withSignedUploads(lc, task.userId, request);
    const create = callBackUrl === undefined ? signed : { ...signed, callBackUrl };
    const { providerTaskId } = await timedProviderCall('createTask', () => lc.provider.createTask(create), log);
    const recorded = await recordProviderTask(lc.store, {
      userId: task.userId,
      taskId: task.taskId,
      providerTaskId,
      now: lc.now(),
    });
    return recorded ?? task;
  } catch (error) {
    if (error instanceof ProviderRejectedError) {
      return failTask(
        lc,
        task,
        {
          errorCode: 'PROVIDER_REJECTED',
          providerMessage: error.message,
          ...(error.providerCode === undefined ? {} : { providerCode: error.providerCode }),
        },
        log,
      );
    }
    if (error instanceof ProviderUnavailableError) return task;
    throw error;
  }
}
