/**
 * The catalog as `GET /api/ai/models` shows it: everything a client needs to build a valid request and
 * know its price, and nothing internal (the provider's model names stay inside the service).
 */
import { IMAGE_MODELS, IMAGE_TIERS, imageTiersOf, imageUnitPrice, VIDEO_MODELS } from './catalog';

/** An image model as clients see it. */
export interface ImageModelResource {
  id: string;
  type: 'image';
  inputModes: readonly string[];
  maxPromptLength: number;
  maxReferenceImages: number;
  aspectRatios: readonly string[];
  /** Credits per output image at each resolution tier offered (`providerInput.resolution`), lowest first. */
  prices: { resolution: string; creditsPerImage: number }[];
  /** Whether every tier costs the same. */
  flatRate: boolean;
}

/** A video model as clients see it. */
export interface VideoModelResource {
  id: string;
  type: 'video';
  family: string;
  inputModes: readonly string[];
  maxPromptLength: number;
  maxReferenceImages: number;
  aspectRatios: readonly string[];
  /** Allowed `duration` values in seconds; `defaultDuration` when omitted. */
  durations: readonly number[];
  defaultDuration: number;
  /** Resolutions offered (`providerInput.resolution`), lowest first; the lowest is the default. */
  resolutions: readonly string[];
  /** Credits per video for every duration and resolution offered. */
  prices: { duration: number; resolution: string; credits: number }[];
}

/** The body of `GET /api/ai/models`. */
export function modelsResource(): { models: (ImageModelResource | VideoModelResource)[] } {
  const images: ImageModelResource[] = IMAGE_MODELS.map((model) => ({
    id: model.id,
    type: 'image',
    inputModes: model.inputModes,
    maxPromptLength: model.maxPromptLength,
    maxReferenceImages: model.maxReferenceImages,
    aspectRatios: model.aspectRatios,
    prices: imageTiersOf(model).flatMap((tier) => {
      const credits = imageUnitPrice(model, tier);
      return credits === undefined || !IMAGE_TIERS.includes(tier)
        ? []
        : [{ resolution: tier, creditsPerImage: credits }];
    }),
    flatRate: model.pricing.kind === 'flat',
  }));
  const videos: VideoModelResource[] = VIDEO_MODELS.map((model) => ({
    id: model.id,
    type: 'video',
    family: model.family,
    inputModes: model.inputModes,
    maxPromptLength: model.maxPromptLength,
    maxReferenceImages: model.maxReferenceImages,
    aspectRatios: model.aspectRatios,
    durations: model.durations,
    defaultDuration: model.defaultDuration,
    resolutions: model.resolutions,
    prices: model.prices.map(({ duration, resolution, credits }) => ({ duration, resolution, credits })),
  }));
  return { models: [...images, ...videos] };
}
