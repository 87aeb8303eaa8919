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
import { MOCK_PROFILE } from './profiles/mock';
import {
  type InputShape,
  mappingOf,
  type NumberField,
  type ProviderProfile,
  type TokenField,
} from './profiles/profile';
import type { ImageRequest, VideoRequest } from './validation';

/** What the provider port's `createTask` needs besides the callback. */
export interface ProviderRequest {
  /** The provider's model name (not our model id). */
  model: string;
  input: Record<string, unknown>;
}

/** The request fields sent as they are, by their shape field. */
type PlainField = 'prompt' | 'negativePrompt' | 'width' | 'height' | 'seed' | 'guidanceScale';
type PlainValues = Partial<
  Record<PlainField | 'numInferenceSteps' | 'fps' | 'motionStrength' | 'cameraMotion', string | number>
>;

/** Copies the plain fields the shape maps and the request holds. */
function plainInput(shape: InputShape, values: PlainValues): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(values)) {
    const key = shape[field as keyof PlainValues];
    if (typeof key === 'string' && value !== undefined) input[key] = value;
  }
  return input;
}

function token(field: TokenField, value: string): string {
  return field.values?.[value] ?? value;
}

function numberValue(field: NumberField, value: number): number | string {
  return field.format === 'string' ? String(value) : value;
}

/** Sets the billed keys on `input` (after the merge, so nothing can replace them). */
function setBilled(input: Record<string, unknown>, billed: readonly [string | undefined, unknown][]): void {
  for (const [key, value] of billed) if (key !== undefined && value !== undefined) input[key] = value;
}

/** The provider call for an image request under `profile`. */
export function buildImageProviderRequest(req: ImageRequest, profile: ProviderProfile = MOCK_PROFILE): ProviderRequest {
  const model = imageModel(req.model);
  const mapping = mappingOf(profile, model.id);
  const shape = mapping.input;
  const editing = req.inputImageUrls !== undefined && req.inputImageUrls.length > 0;
  const input: Record<string, unknown> = {
    ...mapping.defaults,
    ...plainInput(shape, {
      prompt: req.prompt,
      negativePrompt: req.negativePrompt,
      width: req.width,
      height: req.height,
      seed: req.seed,
      guidanceScale: req.guidanceScale,
      numInferenceSteps: req.numInferenceSteps,
    }),
  };
  if (shape.aspectRatio && req.aspectRatio !== undefined) {
    input[shape.aspectRatio.key] = token(shape.aspectRatio, req.aspectRatio);
  }
  if (shape.referenceImages && editing) {
    const urls = req.inputImageUrls ?? [];
    input[shape.referenceImages.key] = shape.referenceImages.form === 'list' ? urls : urls[0];
  }
  Object.assign(input, req.providerInput);
  const tier = model.pricing.kind === 'tiered' ? resolveImageTier(req) : undefined;
  setBilled(input, [
    [shape.outputCount?.key, shape.outputCount && numberValue(shape.outputCount, req.numOutputs ?? 1)],
    [shape.resolution?.key, shape.resolution && tier && token(shape.resolution, tier)],
  ]);
  return { model: (editing ? mapping.editModel : undefined) ?? mapping.model, input };
}

/** The provider call for a video request under `profile`. Only the first reference image is sent (spec rule 4). */
export function buildVideoProviderRequest(req: VideoRequest, profile: ProviderProfile = MOCK_PROFILE): ProviderRequest {
  const model = videoModel(req.model);
  const mapping = mappingOf(profile, model.id);
  const shape = mapping.input;
  const input: Record<string, unknown> = {
    ...mapping.defaults,
    ...plainInput(shape, {
      prompt: req.prompt,
      negativePrompt: req.negativePrompt,
      width: req.width,
      height: req.height,
      seed: req.seed,
      guidanceScale: req.guidanceScale,
      fps: req.fps,
      motionStrength: req.motionStrength,
      cameraMotion: req.cameraMotion,
    }),
  };
  if (shape.aspectRatio && req.aspectRatio !== undefined) {
    input[shape.aspectRatio.key] = token(shape.aspectRatio, req.aspectRatio);
  }
  const first = req.inputMode === 'image_to_video' ? req.inputImageUrls?.[0] : undefined;
  if (shape.referenceImages && first !== undefined) {
    input[shape.referenceImages.key] = shape.referenceImages.form === 'list' ? [first] : first;
  }
  Object.assign(input, req.providerInput);
  setBilled(input, [
    [shape.resolution?.key, shape.resolution && token(shape.resolution, resolveVideoResolution(req))],
    [shape.duration?.key, shape.duration && numberValue(shape.duration, resolveVideoDuration(req))],
  ]);
  return { model: mapping.model, input };
}
