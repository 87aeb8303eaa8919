/**
 * The provider input keys that decide what a task costs or how much it produces. The service owns these
 * values: they are derived from the priced request and sent by the service, and a `providerInput` may
 * only repeat them (see `price-guard.ts`). This is the one declaration of those keys; the provider
 * request builder, the price guard and (with provider profiles) the profile's key names all read it.
 *
 * Keys are matched loosely, the way upstream APIs spell them: any letter case, with `_`, `-` and other
 * separators ignored, so `num_images`, `numImages` and `NUM-IMAGES` are the same key.
 */

import type { Model } from './catalog';

/** What a billed key sets. */
export type BilledQuantity = 'outputCount' | 'width' | 'height' | 'resolution' | 'duration' | 'size';

/** Provider input keys per billed quantity (spellings as upstream APIs use them; matched loosely). */
export type BilledInputKeys = Readonly<Record<BilledQuantity, readonly string[]>>;

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

/** Normalized key -> the quantity it sets, for `model`. */
export function billedKeyIndex(model: Model): ReadonlyMap<string, BilledQuantity> {
  const index = new Map<string, BilledQuantity>();
  for (const [quantity, names] of Object.entries(billedKeysOf(model)) as [BilledQuantity, readonly string[]][]) {
    for (const name of names) index.set(normalizeInputKey(name), quantity);
  }
  return index;
}
