/**
 * Turns a validated request into the provider's create-task call, as the provider profile says: the
 * provider's model name (image models with reference images may have a separate edit model) and the
 * input object under the profile's keys and value formats.
 *
 * Input built from the request (only fields the caller sent and the profile maps, except where noted):
 * - every plain field (prompt, negative prompt, width, height, seed, guidance scale, steps, fps, motion
 *   strength, camera motion) under its key; `aspectRatio` translated by the profile's tokens;
 * - reference images: image models send all of them; video models only the first one (spec rule 4),
 *   and only for `image_to_video`; as a list or a single URL, as the profile says;
 * - billed quantities, always: the number of images (when the upstream takes one), the priced tier of a
 *   tiered image model, and a video's priced resolution and duration, in the profile's format.
 *
 * The profile's fixed `defaults` come first and `providerInput` is merged over the built input. It
 * cannot change what was priced: the price guard (`price-guard.ts`) has refused every billed key whose
 * value differs from the one built here, so the merge only adds provider-specific options (such as the
 * mock provider's `mockOutcome`). As a second line, the billed keys are set again after the merge.
 */

import { imageModel, videoModel } from './catalog';
import { resolveImageTier, resolveVideoDuration, resolveVideoResolution } from './pricing';
import { type InputShape, type ModelMapping, mappingOf, type ProviderProfile } from './profiles/profile';
import type { ImageRequest, VideoRequest } from './request-schemas';

/** What the provider port's `createTask` needs besides the callback. */
export interface ProviderRequest {
  /** The provider's model name (not our model id). */
  model: string;
  input: Record<string, unknown>;
}

/** What both builders hand to `build`: the request's plain fields and what the call adds. */
interface Parts {
  plain: Partial<Record<keyof InputShape, string | number>>;
  aspectRatio?: string;
  /** The reference images to send (image models: all; video models: the first), if any. */
  images?: readonly string[];
  providerInput?: Record<string, unknown>;
  /** The billed values: set after the merge, so nothing can replace them. */
  count?: number;
  resolution?: string;
  duration?: number;
}

/** The input object for `parts` under `mapping` (one implementation for images and videos). */
function build(mapping: ModelMapping, parts: Parts): Record<string, unknown> {
  const shape = mapping.input;
  const input: Record<string, unknown> = { ...mapping.defaults };
  for (const [field, value] of Object.entries(parts.plain)) {
    const key = shape[field as keyof InputShape];
    if (typeof key === 'string' && value !== undefined) input[key] = value;
  }
  const { aspectRatio, referenceImages, outputCount, resolution, duration } = shape;
  if (aspectRatio && parts.aspectRatio !== undefined) {
    input[aspectRatio.key] = aspectRatio.values?.[parts.aspectRatio] ?? parts.aspectRatio;
  }
  if (referenceImages && parts.images?.length) {
    input[referenceImages.key] = referenceImages.form === 'list' ? parts.images : parts.images[0];
  }
  Object.assign(input, parts.providerInput);
  // A number field travels as a JSON number or, where the upstream wants `"5"`, as its text.
  for (const [field, value] of [
    [outputCount, parts.count],
    [duration, parts.duration],
  ] as const) {
    if (field && value !== undefined) input[field.key] = field.format === 'string' ? String(value) : value;
  }
  if (resolution && parts.resolution !== undefined) {
    input[resolution.key] = resolution.values?.[parts.resolution] ?? parts.resolution;
  }
  return input;
}

/** The provider call for an image request under `profile`. */
export function buildImageProviderRequest(req: ImageRequest, profile: ProviderProfile): ProviderRequest {
  const model = imageModel(req.model);
  const mapping = mappingOf(profile, model.id);
  const editing = req.inputImageUrls !== undefined && req.inputImageUrls.length > 0;
  const input = build(mapping, {
    plain: {
      prompt: req.prompt,
      negativePrompt: req.negativePrompt,
      width: req.width,
      height: req.height,
      seed: req.seed,
      guidanceScale: req.guidanceScale,
      numInferenceSteps: req.numInferenceSteps,
    },
    aspectRatio: req.aspectRatio,
    images: req.inputImageUrls,
    providerInput: req.providerInput,
    count: req.numOutputs ?? 1,
    resolution: model.pricing.kind === 'tiered' ? resolveImageTier(req) : undefined,
  });
  return { model: (editing ? mapping.editModel : undefined) ?? mapping.model, input };
}

/** The provider call for a video request under `profile`. Only the first reference image is sent (spec rule 4). */
export function buildVideoProviderRequest(req: VideoRequest, profile: ProviderProfile): ProviderRequest {
  const model = videoModel(req.model);
  const mapping = mappingOf(profile, model.id);
  const first = req.inputMode === 'image_to_video' ? req.inputImageUrls?.[0] : undefined;
  const input = build(mapping, {
    plain: {
      prompt: req.prompt,
      negativePrompt: req.negativePrompt,
      width: req.width,
      height: req.height,
      seed: req.seed,
      guidanceScale: req.guidanceScale,
      fps: req.fps,
      motionStrength: req.motionStrength,
      cameraMotion: req.cameraMotion,
    },
    aspectRatio: req.aspectRatio,
    images: first === undefined ? undefined : [first],
    providerInput: req.providerInput,
    resolution: resolveVideoResolution(req),
    duration: resolveVideoDuration(req),
  });
  return { model: mapping.model, input };
}
