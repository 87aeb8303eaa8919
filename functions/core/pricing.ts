/**
 * Credits for a validated request. The figure computed here is the only one: it is debited at submission
 * and returned as `creditsUsed`; clients never recompute it.
 */

import {
  IMAGE_TIERS,
  type ImageModel,
  type ImageTier,
  imageModel,
  imageTiersOf,
  imageUnitPrice,
  VIDEO_RESOLUTIONS,
  type VideoModel,
  type VideoResolution,
  videoModel,
  videoPrice,
} from './catalog';
import type { ImageRequest, VideoRequest } from './request-schemas';

/** `value` matched case-insensitively against `allowed`, or undefined. */
function matchToken<T extends string>(value: unknown, allowed: readonly T[]): T | undefined {
  if (typeof value !== 'string') return undefined;
  const wanted = value.toLowerCase();
  return allowed.find((token) => token.toLowerCase() === wanted);
}

/** The model's lowest offered level at or above `wanted`, else its highest (`offered` is lowest first). */
function atOrAbove<T extends string>(all: readonly T[], offered: readonly T[], wanted: T): T | undefined {
  const rank = (t: T) => all.indexOf(t);
  return offered.find((t) => rank(t) >= rank(wanted)) ?? offered[offered.length - 1];
}

function imageTierFromSize(width: number | undefined, height: number | undefined): ImageTier | undefined {
  const sides = [width, height].filter((s): s is number => s !== undefined);
  if (sides.length === 0) return undefined;
  const longest = Math.max(...sides);
  if (longest <= 1024) return '1K';
  if (longest <= 2048) return '2K';
  return '4K';
}

function videoResolutionFromSize(width: number | undefined, height: number | undefined): VideoResolution | undefined {
  const sides = [width, height].filter((s): s is number => s !== undefined);
  if (sides.length === 0) return undefined;
  // Video resolutions are named after the short side (1920x1080 is 1080p, 1080x1920 too).
  const shortest = Math.min(...sides);
  if (shortest <= 480) return '480p';
  if (shortest <= 720) return '720p';
  return '1080p';
}

/**
 * The tier an image request is priced (and generated) at.
 *
 * 1. `providerInput.resolution` when it is `1K`, `2K` or `4K` (any letter case) and the model offers it;
 * 2. else the tier of the larger of `width`/`height` (<= 1024: 1K, <= 2048: 2K, else 4K; one side alone
 *    counts), moved to the model's lowest tier at or above it (image-model-3 has no 1K, so 1K becomes 2K),
 *    or to its highest tier when none is;
 * 3. else the model's lowest tier.
 *
 * A flat-rate model offers every tier at one price, so the result only matters for its provider input.
 */
export function resolveImageTier(req: ImageRequest): ImageTier {
  const model: ImageModel = imageModel(req.model);
  const offered = imageTiersOf(model);
  const tier = requestedImageTier(req) ?? imageTierOfSize(req) ?? offered[0];
  if (tier === undefined) throw new RangeError(`${model.id} offers no resolution tier`);
  return tier;
}

/** The tier named by `providerInput.resolution` when it is one the model offers (any letter case). */
export function requestedImageTier(req: ImageRequest): ImageTier | undefined {
  return matchToken(req.providerInput?.resolution, imageTiersOf(imageModel(req.model)));
}

/** The offered tier that `width`/`height` call for (rule 2 of {@link resolveImageTier}), if either is set. */
export function imageTierOfSize(req: ImageRequest): ImageTier | undefined {
  const derived = imageTierFromSize(req.width, req.height);
  return derived === undefined ? undefined : atOrAbove(IMAGE_TIERS, imageTiersOf(imageModel(req.model)), derived);
}

/**
 * Credits for an image request: the model's unit price at {@link resolveImageTier}'s tier x `numOutputs`
 * (default 1). image-model-1 and image-model-4 are flat-rate (3 per output at any tier).
 */
export function priceImage(req: ImageRequest): number {
  const model = imageModel(req.model);
  const unit = imageUnitPrice(model, resolveImageTier(req));
  if (unit === undefined) throw new RangeError(`${model.id} has no price for this tier`);
  return unit * (req.numOutputs ?? 1);
}

/**
 * The resolution a video request is priced (and generated) at.
 *
 * 1. `providerInput.resolution` when it is `480p`, `720p` or `1080p` (any letter case) and the model offers it;
 * 2. else from the shorter of `width`/`height` (<= 480: 480p, <= 720: 720p, else 1080p; one side alone
 *    counts), moved to the model's lowest resolution at or above it, or to its highest when none is;
 * 3. else the model's lowest resolution.
 */
export function resolveVideoResolution(req: VideoRequest): VideoResolution {
  const model: VideoModel = videoModel(req.model);
  const resolution = requestedVideoResolution(req) ?? videoResolutionOfSize(req) ?? model.resolutions[0];
  if (resolution === undefined) throw new RangeError(`${model.id} offers no resolution`);
  return resolution;
}

/** The resolution named by `providerInput.resolution` when the model offers it (any letter case). */
export function requestedVideoResolution(req: VideoRequest): VideoResolution | undefined {
  return matchToken(req.providerInput?.resolution, videoModel(req.model).resolutions);
}

/** The offered resolution that `width`/`height` call for (rule 2 of {@link resolveVideoResolution}). */
export function videoResolutionOfSize(req: VideoRequest): VideoResolution | undefined {
  const derived = videoResolutionFromSize(req.width, req.height);
  return derived === undefined ? undefined : atOrAbove(VIDEO_RESOLUTIONS, videoModel(req.model).resolutions, derived);
}

/** The video's duration in seconds: `duration`, else the model's default (its shortest). */
export function resolveVideoDuration(req: VideoRequest): number {
  return req.duration ?? videoModel(req.model).defaultDuration;
}

/**
 * Credits for a video request: the catalog price of the model at {@link resolveVideoDuration} seconds and
 * {@link resolveVideoResolution}. Validation guarantees the duration is one the model offers.
 */
export function priceVideo(req: VideoRequest): number {
  const model = videoModel(req.model);
  const duration = resolveVideoDuration(req);
  const resolution = resolveVideoResolution(req);
  const credits = videoPrice(model, duration, resolution);
  if (credits === undefined) throw new RangeError(`${model.id} has no price for ${duration} s at ${resolution}`);
  return credits;
}
