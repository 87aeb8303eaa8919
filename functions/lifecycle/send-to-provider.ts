/**
 * Creating a task at the provider, as the dispatcher does it (lifecycle/dispatch.ts), from the request
 * stored at acceptance.
 */
import { buildImageProviderRequest, buildVideoProviderRequest } from '../core/provider-request';
import type { ImageRequest, VideoRequest } from '../core/request-schemas';
import type { TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
import { type ProviderLifecycle, timedProviderCall } from './lifecycle';
import { providerReferenceTtlSeconds, withSignedUploads } from './uploads';

/** A provider request as tasks accepted before 2026-11-25 kept it (newer tasks keep their request). */
export interface StoredProviderRequest {
  model: string;
  input: Record<string, unknown>;
}

/**
 * The validated request as the task keeps it (`task.request.body`): without the fields the task holds
 * already (prompt, model, reference images; the retention, kept as seconds), so nothing is stored twice (a 20,000-character prompt
 * stored twice doubled the write units of every accept).
 */
export function storedRequestBody(request: Record<string, unknown>): Record<string, unknown> {
  const {
    prompt: _prompt,
    model: _model,
    inputImageUrls: _images,
    webhookUrl: _webhook,
    resultRetention: _retention,
    ...body
  } = request;
  return body;
}

/**
 * The provider request of a task: built now with the profile from the request stored at acceptance, so
 * a resend sends the same; or, for a task accepted before that, the provider request it stored then.
 */
function providerRequestOf(lc: ProviderLifecycle, task: TaskRecord): StoredProviderRequest {
  const stored = task.request.providerRequest as StoredProviderRequest | undefined;
  if (stored && typeof stored.model === 'string') {
    return 'prompt' in stored.input ? stored : { ...stored, input: { prompt: task.prompt, ...stored.input } };
  }
  const body = task.request.body as Record<string, unknown> | undefined;
  if (!body || !lc.profile) throw new Error(`Task ${task.taskId} has no request to send, or no profile to send it by`);
  const images = task.request.inputImageUrls;
  const request = { ...body, model: task.model, prompt: task.prompt, ...(images ? { inputImageUrls: images } : {}) };
  return task.type === 'image'
    ? buildImageProviderRequest(request as ImageRequest, lc.profile)
    : buildVideoProviderRequest(request as VideoRequest, lc.profile);
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
  const request = providerRequestOf(lc, task);
  const callBackUrl = await lc.callbacks?.urlFor(task.userId, task.taskId, task.upstream);
  // Upload references become signed GET URLs at each send, living as long as the task may; the task
  // keeps the references.
  const ttlSeconds = lc.uploads
    ? providerReferenceTtlSeconds(task, {
        now: lc.now(),
        maxPendingMs: lc.config.maxPendingMs,
        maxUrlTtlSeconds: lc.uploads.maxUrlTtlSeconds(),
      })
    : 0;
  const signed = await withSignedUploads(lc, task, request, ttlSeconds);
  const create = callBackUrl === undefined ? signed : { ...signed, callBackUrl };
  return timedProviderCall('createTask', () => lc.provider.createTask(create), log);
}
