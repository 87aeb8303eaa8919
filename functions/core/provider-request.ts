/**
 * Turns a validated request into the provider's create-task call: the provider model name from the catalog
 * and an input object in the provider's snake_case style.
 *
 * Input keys built from the request (only fields the caller sent, except where noted):
 * - image: `prompt`, `negative_prompt`, `width`, `height`, `aspect_ratio`, `num_outputs` (always; default 1),
 *   `seed`, `guidance_scale`, `num_inference_steps`, `image_urls` (all reference images), `resolution`
 *   (the priced tier, always, for tiered models only).
 * - video: `prompt`, `negative_prompt`, `width`, `height`, `aspect_ratio`, `duration` (always; the priced
 *   duration), `resolution` (always; the priced resolution), `fps`, `seed`, `guidance_scale`,
 *   `motion_strength`, `camera_motion`, `image_url` (the first of `inputImageUrls` only, spec rule 4).
 *
 * `providerInput` is then merged over these defaults. It cannot change what was priced: validation's price
 * guard (`price-guard.ts`) has refused every billed key (`billed-keys.ts`) whose value differs from the
 * one built here, so the merge only adds provider-specific options (such as the mock provider's
 * `mockOutcome` and `mockDelayMs`). As a second line, `num_outputs` (images) and `duration` (videos) are
 * still set after the merge, and a recognised `resolution` is sent in canonical form (`4k` as `4K`).
 */

import { imageModel, videoModel } from './catalog';
import { resolveImageTier, resolveVideoDuration, resolveVideoResolution } from './pricing';
import type { ImageRequest, VideoRequest } from './validation';

/** What the provider port's `createTask` needs besides the callback. */
export interface ProviderRequest {
  /** The provider's model name (not our model id). */
  model: string;
  input: Record<string, unknown>;
}

/** Copies the defined entries only, so an omitted request field never reaches the provider as `undefined`. */
function defined(entries: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));
}

/** Pricing matches `providerInput.resolution` in any letter case; the provider gets the canonical token. */
function sameToken(value: unknown, token: string): boolean {
  return typeof value === 'string' && value.toLowerCase() === token.toLowerCase();
}

/**
 * The provider call for an image request. image-model-1 is a unified text/edit model: with
 * `inputImageUrls` it is called under its edit model name.
 */
export function buildImageProviderRequest(req: ImageRequest): ProviderRequest {
  const model = imageModel(req.model);
  const editing = req.inputImageUrls !== undefined && req.inputImageUrls.length > 0;
  const numOutputs = req.numOutputs ?? 1;
  const tier = model.pricing.kind === 'tiered' ? resolveImageTier(req) : undefined;
  const defaults = defined({
    prompt: req.prompt,
    negative_prompt: req.negativePrompt,
    width: req.width,
    height: req.height,
    aspect_ratio: req.aspectRatio,
    seed: req.seed,
    guidance_scale: req.guidanceScale,
    num_inference_steps: req.numInferenceSteps,
    image_urls: req.inputImageUrls,
    resolution: tier,
  });
  const input: Record<string, unknown> = { ...defaults, ...req.providerInput, num_outputs: numOutputs };
  if (tier !== undefined && sameToken(input.resolution, tier)) input.resolution = tier;
  return { model: (editing ? model.editProviderModel : undefined) ?? model.providerModel, input };
}

/** The provider call for a video request. Only the first reference image is sent (spec rule 4). */
export function buildVideoProviderRequest(req: VideoRequest): ProviderRequest {
  const model = videoModel(req.model);
  const resolution = resolveVideoResolution(req);
  const defaults = defined({
    prompt: req.prompt,
    negative_prompt: req.negativePrompt,
    width: req.width,
    height: req.height,
    aspect_ratio: req.aspectRatio,
    resolution,
    fps: req.fps,
    seed: req.seed,
    guidance_scale: req.guidanceScale,
    motion_strength: req.motionStrength,
    camera_motion: req.cameraMotion,
    image_url: req.inputMode === 'image_to_video' ? req.inputImageUrls?.[0] : undefined,
  });
  const input: Record<string, unknown> = { ...defaults, ...req.providerInput, duration: resolveVideoDuration(req) };
  if (sameToken(input.resolution, resolution)) input.resolution = resolution;
  return { model: model.providerModel, input };
}
