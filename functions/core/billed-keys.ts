/**
 * The provider input keys that decide what a task costs or how much it produces. The service owns these
 * values: they are derived from the priced request and sent by the service, and a `providerInput` may
 * only repeat them (see `price-guard.ts`). The lists below are the spellings any upstream may read; the
 * provider profile adds the keys its upstream really uses (the keys it sends the billed quantities
 * under, and its `billedAliases`), and `billedKeyIndex` joins both, so the price guard and the keys the
 * service sends can never disagree.
 *
 * Keys are matched loosely, the way upstream APIs spell them: any letter case, with `_`, `-` and other
 * separators ignored, so `num_images`, `numImages` and `NUM-IMAGES` are the same key.
 */

import type { BilledInputKeys, BilledQuantity } from './billed-quantity';
import type { Model } from './catalog';
import type { ModelMapping } from './profiles/profile';

/** Keys shared by image and video models. */
const SHARED = {
  width: ['width', 'image_width', 'video_width', 'output_width'],
  height: ['height', 'image_height', 'video_height', 'output_height'],
  size: ['size', 'image_size', 'video_size', 'output_size', 'dimensions', 'megapixels', 'scale', 'upscale'],
} as const;

/** Billed keys of every image model (the known aliases of the major upstream APIs). */
export const IMAGE_BILLED_KEYS: BilledInputKeys = {
  ...SHARED,
  outputCount: [
    'num_outputs',
    'num_images',
    'number_of_images',
    'image_count',
    'n',
    'batch_size',
    'batch_count',
    'count',
    'samples',
    'num_samples',
    'num_outputs_per_prompt',
  ],
  resolution: ['resolution', 'image_resolution', 'output_resolution', 'quality'],
  duration: [],
};

/** Billed keys of every video model. */
export const VIDEO_BILLED_KEYS: BilledInputKeys = {
  ...SHARED,
  outputCount: ['num_outputs', 'num_videos', 'number_of_videos', 'video_count', 'n', 'batch_size', 'count'],
  resolution: ['resolution', 'video_resolution', 'output_resolution', 'quality'],
  duration: [
    'duration',
    'duration_seconds',
    'seconds',
    'length',
    'video_length',
    'num_frames',
    'frames',
    'frame_count',
    'n_frames',
  ],
};

/** A key in the loose form used for matching: lower case letters and digits only. */
export function normalizeInputKey(key: string): string {
  return key.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** The billed keys of `model`. */
export function billedKeysOf(model: Model): BilledInputKeys {
  return model.type === 'image' ? IMAGE_BILLED_KEYS : VIDEO_BILLED_KEYS;
}

/** Shape fields that are billed quantities; every other field with a key sets something unbilled. */
const BILLED_FIELDS: ReadonlySet<string> = new Set(['outputCount', 'width', 'height', 'resolution', 'duration']);

/**
 * Normalized key -> the quantity it sets, for `model` called through `mapping`: the general spellings,
 * the keys the profile sends billed quantities under and its `billedAliases`. A key the profile uses for
 * a field that is not billed (image-model-1's `image_size` holds an aspect ratio upstream) is left out:
 * the profile knows what it means there.
 */
export function billedKeyIndex(model: Model, mapping?: ModelMapping): ReadonlyMap<string, BilledQuantity> {
  const index = new Map<string, BilledQuantity>();
  // The general spellings, then the profile's aliases (the last entries of the list).
  for (const [quantity, names] of [
    ...Object.entries(billedKeysOf(model)),
    ...Object.entries(mapping?.billedAliases ?? {}),
  ] as [BilledQuantity, readonly string[]][]) {
    for (const name of names) index.set(normalizeInputKey(name), quantity);
  }
  for (const [field, value] of Object.entries(mapping?.input ?? {})) {
    // Plain fields name their key; the others are `{ key, ... }`.
    const key = normalizeInputKey(typeof value === 'string' ? value : value.key);
    if (BILLED_FIELDS.has(field)) index.set(key, field as BilledQuantity);
    else index.delete(key);
  }
  return index;
}
