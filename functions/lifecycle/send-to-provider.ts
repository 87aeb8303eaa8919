/**
 * Creating a task at the provider, as the dispatcher does it (lifecycle/dispatch.ts), from the request
 * stored at acceptance.
 */
import type { TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
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
 * Creates the task at the provider, with the signed callback URL (made on each send, never stored: it
 * carries the task's signature), and returns the provider's id. Errors are the provider port's.
 */
export async function createAtProvider(
  lc: ProviderLifecycle,
  task: TaskRecord,
  log: Logger,
): Promise<{ providerTaskId: string }> {
  const request = storedProviderRequest(task);
  const callBackUrl = await lc.callbacks?.urlFor(task.userId, task.taskId);
  // Upload references become short-lived signed GET URLs at each send; the task keeps the references.
  const signed = await withSignedUploads(lc, task.userId, request);
  const create = callBackUrl === undefined ? signed : { ...signed, callBackUrl };
  return timedProviderCall('createTask', () => lc.provider.createTask(create), log);
}
