/**
 * The two submit endpoints differ only in their rulebook (validation, price, provider request); this
 * builds either from it.
 */
import { ValidationError } from '../core/errors';
import { parseIdempotencyKey, requestHash } from '../core/lifecycle';
import type { ProviderProfile } from '../core/profiles/profile';
import type { TaskType } from '../core/task';
import { INLINE_IMAGES_MAX_BYTES, storeInlineImages, takeInlineImages } from '../lifecycle/inline-uploads';
import { submitTask } from '../lifecycle/submit-task';
import { checkUploadReferences } from '../lifecycle/uploads';
import { type SourcePolicy, STRICT_SOURCE_POLICY } from '../media/source-policy';
import { uploadReaderFromEnv } from '../media/uploads';
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

/** 202 Accepted with `Location` to poll; an idempotent replay says so in `Idempotent-Replayed`. */
export function submitHandler<TRequest extends { model: string; prompt: string }>(rules: SubmitRules<TRequest>) {
  // Checked when the function loads: a bad profile stops it at start, never a task at a time.
  providerProfileFromEnv();
  return apiHandler({ jsonBody: true }, async (req) => {
    const idempotencyKey = parseIdempotencyKey(req.header('idempotency-key'));
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
    // Before anything is debited: a refused upload is the caller's 400, naming its entry.
    const { inputImageUrls, providerInput } = request as {
      inputImageUrls?: string[];
      providerInput?: Record<string, unknown>;
    };
    const uploadVersions = await checkUploadReferences(
      { ...ctx, uploads },
      req.caller.userId,
      inputImageUrls,
      idempotency,
      providerInput,
    );
    const { response, replayed } = await submitTask(
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
    return {
      statusCode: 202,
      body: response,
      headers: {
        // Behind a stage URL (`.../prod/api/...`) or a base path, the task lives under the same prefix.
        Location: `${req.pathPrefix}/api/ai/tasks/${encodeURIComponent(response.taskId)}`,
        ...(replayed ? { 'Idempotent-Replayed': 'true' } : {}),
      },
    };
  });
}
