/**
 * The two submit endpoints differ only in their rulebook (validation, price, provider request); this
 * builds either from it.
 */
import { ValidationError } from '../core/errors';
import { parseIdempotencyKey, requestHash } from '../core/lifecycle';
import type { ProviderProfile } from '../core/profiles/profile';
import { TaskStatus, type TaskType } from '../core/task';
import { parsePreferWait } from '../core/wait';
import { RESULT_RETENTION_DAYS, readEnv } from '../environment/environment';
import {
  INLINE_IMAGES_MAX_BYTES,
  removeInlineImages,
  storeInlineImages,
  takeInlineImages,
} from '../lifecycle/inline-uploads';
import { submitTask } from '../lifecycle/submit-task';
import { waitForSubmitted } from '../lifecycle/submitted-wait';
import { checkUploadReferences } from '../lifecycle/uploads';
import { type SourcePolicy, STRICT_SOURCE_POLICY } from '../media/source-policy';
import { uploadReaderFromEnv } from '../media/uploads';
import { mediaUrlsFromEnv } from '../runtime/lifecycle-from-env';
import { providerProfileFromEnv } from '../runtime/provider-profile-from-env';
import { uploadSettingsFromEnv } from '../runtime/uploads-from-env';
import { maxQueuedTasksFromEnv } from '../store/dispatch';
import { storeFromEnv } from '../store/from-env';
import { webhookTargetPolicy, webhookUrlProblem } from '../webhooks/target-policy';
import { apiHandler } from './api-handler';

let policy: SourcePolicy | undefined;

/**
 * A `webhookUrl` the deployment will not call is the caller's 400, naming the field, before anything is
 * debited; the same rule judges every delivery attempt.
 */
function checkWebhookUrl(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  // Deployed bundles fix the setting empty (LOCAL_ONLY_DEFINE in lib/), so its parsing is left out:
  // spelled `process.env.X`, the one form `define` replaces (a build-time variable of the contract,
  // functions/environment/environment.ts).
  policy ??= process.env.WEBHOOK_INSECURE_ORIGINS ? webhookTargetPolicy() : STRICT_SOURCE_POLICY;
  const problem = webhookUrlProblem(url, policy);
  if (problem) throw new ValidationError({ fieldErrors: { webhookUrl: [problem] }, formErrors: [] });
  return url;
}

export interface SubmitRules<TRequest extends { model: string; prompt: string }> {
  type: TaskType;
  /** Throws ValidationError. The profile's billed keys and output limits are part of the rules. */
  validate: (body: unknown, profile: ProviderProfile) => TRequest;
  price: (request: TRequest) => number;
}

/**
 * 202 Accepted with `Location` to poll; an idempotent replay says so in `Idempotent-Replayed`. With
 * `Prefer: wait=N`: 200 and the Task resource when the task ends within N seconds, else the 202;
 * either way `Preference-Applied: wait=N`.
 */
export function submitHandler<TRequest extends { model: string; prompt: string }>(rules: SubmitRules<TRequest>) {
  // Checked when the function loads: a bad profile stops it at start, never a task at a time.
  providerProfileFromEnv();
  return apiHandler({ jsonBody: true }, async (req) => {
    const idempotencyKey = parseIdempotencyKey(req.header('idempotency-key'));
    const wait = parsePreferWait(req.header('prefer'));
    const profile = providerProfileFromEnv();
    const settings = uploadSettingsFromEnv();
    // Inline data: images become upload:// references (stored below, once the request is valid).
    const inline = takeInlineImages(req.body, settings.maxBytes);
    const request = rules.validate(inline.body, profile);
    const webhookUrl = checkWebhookUrl((request as { webhookUrl?: unknown }).webhookUrl);
    // The request as sent (inline images included): a replay with the same images is the same request.
    const idempotency = idempotencyKey
      ? { key: idempotencyKey, requestHash: requestHash(rules.type, req.body) }
      : undefined;
    const ctx = { store: storeFromEnv(), now: () => new Date() };
    const uploads = uploadReaderFromEnv();
    await storeInlineImages(
      { ...ctx, uploads },
      {
        userId: req.caller.userId,
        images: inline.images,
        ttlSeconds: settings.ttlSeconds,
        maxBytes: Math.min(settings.maxBytes, INLINE_IMAGES_MAX_BYTES),
        idempotency,
      },
    );
    // Inline images are kept only for an accepted task: whatever refuses the submit from here on (a bad
    // reference, 402, 429, busy) removes them again, so a refused submit leaves nothing stored.
    let uploadVersions: Record<string, string> | undefined;
    let submitted: Awaited<ReturnType<typeof submitTask>>;
    try {
      // Before anything is debited: a refused upload is the caller's 400, naming its entry.
      const { inputImageUrls, providerInput } = request as {
        inputImageUrls?: string[];
        providerInput?: Record<string, unknown>;
      };
      uploadVersions = await checkUploadReferences(
        { ...ctx, uploads },
        req.caller.userId,
        inputImageUrls,
        idempotency,
        providerInput,
      );
      submitted = await submitTask(
        ctx,
        {
          caller: req.caller,
          type: rules.type,
          request: request as TRequest & Record<string, unknown>,
          cost: rules.price(request),
          webhookUrl,
          idempotency,
          maxQueued: maxQueuedTasksFromEnv(),
          uploadVersions,
          inlineUploads: inline.images.map((image) => image.uploadId),
        },
        req.log,
      );
    } catch (error) {
      if (inline.images.length > 0) {
        await removeInlineImages(
          { store: ctx.store, uploads },
          { userId: req.caller.userId, images: inline.images, versions: uploadVersions },
        );
      }
      throw error;
    }
    const { response, replayed } = submitted;
    const headers = {
      // Behind a stage URL (`.../prod/api/...`) or a base path, the task lives under the same prefix.
      Location: `${req.pathPrefix}/api/ai/tasks/${encodeURIComponent(response.taskId)}`,
      ...(replayed ? { 'Idempotent-Replayed': 'true' } : {}),
      ...(wait === undefined ? {} : { 'Preference-Applied': `wait=${wait}`, Vary: 'Prefer' }),
    };
    // A replay of a task that ended meanwhile answers at once; the wait watches the task's record only.
    const ended =
      wait === undefined
        ? undefined
        : await waitForSubmitted(
            {
              ...ctx,
              // Only the retention (a result's URLs never outlive it): the submit has no refresh settings.
              results: () => ({
                media: mediaUrlsFromEnv(),
                config: { resultRetentionDays: readEnv(RESULT_RETENTION_DAYS) },
              }),
            },
            {
              userId: req.caller.userId,
              submitted: response,
              seconds: response.status === TaskStatus.PENDING ? wait : 0,
              remainingMs: req.remainingTimeMs(),
            },
          );
    return ended ? { statusCode: 200, body: ended, headers } : { statusCode: 202, body: response, headers };
  });
}
