/**
 * The model catalog: every rule the service knows about each of the 20 models (modes, caps, aspect
 * ratios, durations, resolution tiers, prices). Validation, pricing, the provider input builder and the
 * price table of docs/api/prices.md all read this one module, so they cannot disagree. How an upstream names the
 * models and shapes their input is not here but in the provider profile (`profiles/`).
 *
 * Spec figures (image prices, prompt and reference caps, image-model-1's aspect ratios, family A's 5/10 s,
 * family D's fixed 8 s and 3 images) are copied from the API spec. Everything the spec leaves open
 * (video prices, other aspect-ratio lists, other durations, video resolutions) is a decision recorded here
 * and shown in the price table of docs/api/prices.md.
 */

/** Image resolution tiers, lowest first. */
export const IMAGE_TIERS = ['1K', '2K', '4K'] as const;
export type ImageTier = (typeof IMAGE_TIERS)[number];

/** Video resolutions (named by the short side of the frame), lowest first. */
export const VIDEO_RESOLUTIONS = ['480p', '720p', '1080p'] as const;
export type VideoResolution = (typeof VIDEO_RESOLUTIONS)[number];

export const IMAGE_INPUT_MODES = ['text_to_image', 'image_to_image'] as const;
export type ImageInputMode = (typeof IMAGE_INPUT_MODES)[number];

/** The values of the video request's `inputMode` field. */
export const VIDEO_INPUT_MODES = ['text_to_video', 'image_to_video'] as const;
export type VideoInputMode = (typeof VIDEO_INPUT_MODES)[number];

export const VIDEO_FAMILIES = ['A', 'B', 'C', 'D', 'E', 'F'] as const;
export type VideoFamily = (typeof VIDEO_FAMILIES)[number];

/** The four image model ids of the spec. */
export const IMAGE_MODEL_IDS = ['image-model-1', 'image-model-2', 'image-model-3', 'image-model-4'] as const;
export type ImageModelId = (typeof IMAGE_MODEL_IDS)[number];

/** The sixteen video model ids of the spec, grouped by family A-F. */
export const VIDEO_MODEL_IDS = [
  'video-a/v2-1-standard',
  'video-a/v2-1-pro',
  'video-a/v2-1-master-text-to-video',
  'video-b-2-text-to-video',
  'video-b-2-pro-text-to-video',
  'video-b-2-image-to-video',
  'video-c/02-text-to-video-standard',
  'video-c/02-text-to-video-pro',
  'video-c/02-image-to-video-standard',
  'video-c/02-image-to-video-pro',
  'video-d3_fast',
  'video-d3',
  'video-d3_lite',
  'video-e/2-6-text-to-video',
  'video-e/2-6-image-to-video',
  'video-f/1.5-pro',
] as const;
export type VideoModelId = (typeof VIDEO_MODEL_IDS)[number];

export type ModelId = ImageModelId | VideoModelId;

/**
 * How an image model is priced: `flat` costs the same per output at any size; `tiered` lists a price per
 * resolution tier it offers, lowest tier first.
 */
export type ImagePricing =
  | { readonly kind: 'flat'; readonly credits: number }
  | { readonly kind: 'tiered'; readonly tiers: readonly { readonly tier: ImageTier; readonly credits: number }[] };

export interface ImageModel {
  readonly id: ImageModelId;
  readonly type: 'image';
  readonly inputModes: readonly ImageInputMode[];
  /** Most entries allowed in `inputImageUrls`. */
  readonly maxReferenceImages: number;
  /** Most characters (Unicode code points) allowed in `prompt`. */
  readonly maxPromptLength: number;
  /** Allowed `aspectRatio` tokens. */
  readonly aspectRatios: readonly string[];
  /** Credits per output image. */
  readonly pricing: ImagePricing;
}

/** The price of one video of `duration` seconds at `resolution`. */
export interface VideoPrice {
  readonly duration: number;
  readonly resolution: VideoResolution;
  readonly credits: number;
}

export interface VideoModel {
  readonly id: VideoModelId;
  readonly type: 'video';
  readonly family: VideoFamily;
  readonly inputModes: readonly VideoInputMode[];
  /** Most entries allowed in `inputImageUrls` (only the first one reaches the provider). */
  readonly maxReferenceImages: number;
  /** Most characters (Unicode code points) allowed in `prompt`. */
  readonly maxPromptLength: number;
  /** Allowed `aspectRatio` tokens. */
  readonly aspectRatios: readonly string[];
  /** Allowed `duration` values in seconds, ascending. */
  readonly durations: readonly number[];
  /** Duration used (and priced) when the request has none. */
  readonly defaultDuration: number;
  /** Resolutions offered, lowest first. */
  readonly resolutions: readonly VideoResolution[];
  /** One price for every duration x resolution combination the model offers. */
  readonly prices: readonly VideoPrice[];
}

export type Model = ImageModel | VideoModel;

/** Image-model-1's list is the spec's; the others follow what their providers commonly accept. */
const IMAGE_1_ASPECTS = ['auto', '1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '4:5', '5:4', '21:9'] as const;
const IMAGE_2_ASPECTS = ['auto', '1:1', '2:3', '3:2', '3:4', '4:3', '4:5', '5:4', '9:16', '16:9', '21:9'] as const;
const IMAGE_3_ASPECTS = ['1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3', '21:9'] as const;
const IMAGE_4_ASPECTS = ['1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3'] as const;

const BOTH_IMAGE_MODES = IMAGE_INPUT_MODES;

/** Image models in spec order. */
export const IMAGE_MODELS: readonly ImageModel[] = [
  {
    id: 'image-model-1',
    type: 'image',
    inputModes: BOTH_IMAGE_MODES,
    maxReferenceImages: 4,
    maxPromptLength: 20000,
    aspectRatios: IMAGE_1_ASPECTS,
    pricing: { kind: 'flat', credits: 3 },
  },
  {
    id: 'image-model-2',
    type: 'image',
    inputModes: BOTH_IMAGE_MODES,
    maxReferenceImages: 14,
    maxPromptLength: 20000,
    aspectRatios: IMAGE_2_ASPECTS,
    pricing: {
      kind: 'tiered',
      tiers: [
        { tier: '1K', credits: 4 },
        { tier: '2K', credits: 6 },
        { tier: '4K', credits: 8 },
      ],
    },
  },
  {
    id: 'image-model-3',
    type: 'image',
    inputModes: BOTH_IMAGE_MODES,
    maxReferenceImages: 8,
    maxPromptLength: 10000,
    aspectRatios: IMAGE_3_ASPECTS,
    pricing: {
      kind: 'tiered',
      tiers: [
        { tier: '2K', credits: 12 },
        { tier: '4K', credits: 20 },
      ],
    },
  },
  {
    id: 'image-model-4',
    type: 'image',
    inputModes: BOTH_IMAGE_MODES,
    maxReferenceImages: 10,
    maxPromptLength: 5000,
    aspectRatios: IMAGE_4_ASPECTS,
    pricing: { kind: 'flat', credits: 3 },
  },
];

/** Price list from `{ resolution: { duration: credits } }`. */
/* @__NO_SIDE_EFFECTS__ */
function grid(table: Partial<Record<VideoResolution, Readonly<Record<number, number>>>>): VideoPrice[] {
  const prices: VideoPrice[] = [];
  for (const resolution of VIDEO_RESOLUTIONS) {
    const byDuration = table[resolution];
    if (byDuration === undefined) continue;
    for (const [duration, credits] of Object.entries(byDuration)) {
      prices.push({ duration: Number(duration), resolution, credits });
    }
  }
  return prices;
}

const resolutionsOf = (prices: readonly VideoPrice[]): VideoResolution[] =>
  VIDEO_RESOLUTIONS.filter((r) => prices.some((p) => p.resolution === r));
const durationsOf = (prices: readonly VideoPrice[]): number[] =>
  [...new Set(prices.map((p) => p.duration))].sort((a, b) => a - b);

const WIDE_TALL_SQUARE = ['16:9', '9:16', '1:1'] as const;
const TEXT_ONLY: readonly VideoInputMode[] = ['text_to_video'];
const IMAGE_ONLY: readonly VideoInputMode[] = ['image_to_video'];
const BOTH_VIDEO_MODES: readonly VideoInputMode[] = VIDEO_INPUT_MODES;

interface VideoModelSpec {
  id: VideoModelId;
  family: VideoFamily;
  inputModes: readonly VideoInputMode[];
  aspectRatios: readonly string[];
  prices: VideoPrice[];
  maxReferenceImages?: number;
}

/**
 * Fills in what follows from the spec's family rules and the price list. Marked side-effect free (as is
 * `grid`): a bundle that never reads the video models (submit-image) then leaves them out.
 */
/* @__NO_SIDE_EFFECTS__ */
function video(spec: VideoModelSpec): VideoModel {
  const durations = durationsOf(spec.prices);
  return {
    id: spec.id,
    type: 'video',
    family: spec.family,
    inputModes: spec.inputModes,
    maxReferenceImages: spec.maxReferenceImages ?? 1,
    maxPromptLength: 4000,
    aspectRatios: spec.aspectRatios,
    durations,
    // The shortest clip is the default: the cheapest outcome when the caller did not ask for more.
    defaultDuration: durations[0] ?? 0,
    resolutions: resolutionsOf(spec.prices),
    prices: spec.prices,
  };
}

/**
 * Video models in spec order. Decisions (the spec gives only the family notes):
 * - A: 5 or 10 s (spec); one resolution per model (standard 720p, pro and master 1080p); price by duration.
 *   standard and pro are image-to-video only, master is text-to-video only (spec).
 * - B: 5 or 10 s; price by duration and resolution (480p/720p/1080p; pro 720p/1080p).
 * - C: 6 or 10 s; standard 720p, pro 1080p; standard vs pro priced by duration tier. The `-text-to-video-*`
 *   ids are text-to-video only and the `-image-to-video-*` ids image-to-video only (the id names the mode even
 *   though it does not end with it).
 * - D: fixed 8 s (spec), flat rate at 720p or 1080p, both modes, up to 3 reference images (spec).
 * - E: 5 or 10 s; 720p/1080p; price by duration and resolution.
 * - F: 5 or 10 s; 480p/720p/1080p; price by duration and resolution; both modes (spec).
 * Every model other than family D takes at most 1 reference image.
 */
export const VIDEO_MODELS: readonly VideoModel[] = [
  video({
    id: 'video-a/v2-1-standard',
    family: 'A',
    inputModes: IMAGE_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '720p': { 5: 25, 10: 50 } }),
  }),
  video({
    id: 'video-a/v2-1-pro',
    family: 'A',
    inputModes: IMAGE_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '1080p': { 5: 50, 10: 100 } }),
  }),
  video({
    id: 'video-a/v2-1-master-text-to-video',
    family: 'A',
    inputModes: TEXT_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '1080p': { 5: 160, 10: 320 } }),
  }),
  video({
    id: 'video-b-2-text-to-video',
    family: 'B',
    inputModes: TEXT_ONLY,
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4'],
    prices: grid({ '480p': { 5: 10, 10: 20 }, '720p': { 5: 20, 10: 40 }, '1080p': { 5: 40, 10: 80 } }),
  }),
  video({
    id: 'video-b-2-pro-text-to-video',
    family: 'B',
    inputModes: TEXT_ONLY,
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4'],
    prices: grid({ '720p': { 5: 40, 10: 80 }, '1080p': { 5: 70, 10: 140 } }),
  }),
  video({
    id: 'video-b-2-image-to-video',
    family: 'B',
    inputModes: IMAGE_ONLY,
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4'],
    prices: grid({ '480p': { 5: 10, 10: 20 }, '720p': { 5: 20, 10: 40 }, '1080p': { 5: 40, 10: 80 } }),
  }),
  video({
    id: 'video-c/02-text-to-video-standard',
    family: 'C',
    inputModes: TEXT_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '720p': { 6: 15, 10: 25 } }),
  }),
  video({
    id: 'video-c/02-text-to-video-pro',
    family: 'C',
    inputModes: TEXT_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '1080p': { 6: 30, 10: 50 } }),
  }),
  video({
    id: 'video-c/02-image-to-video-standard',
    family: 'C',
    inputModes: IMAGE_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '720p': { 6: 15, 10: 25 } }),
  }),
  video({
    id: 'video-c/02-image-to-video-pro',
    family: 'C',
    inputModes: IMAGE_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '1080p': { 6: 30, 10: 50 } }),
  }),
  video({
    id: 'video-d3_fast',
    family: 'D',
    inputModes: BOTH_VIDEO_MODES,
    aspectRatios: ['16:9', '9:16'],
    maxReferenceImages: 3,
    prices: grid({ '720p': { 8: 60 }, '1080p': { 8: 60 } }),
  }),
  video({
    id: 'video-d3',
    family: 'D',
    inputModes: BOTH_VIDEO_MODES,
    aspectRatios: ['16:9', '9:16'],
    maxReferenceImages: 3,
    prices: grid({ '720p': { 8: 200 }, '1080p': { 8: 200 } }),
  }),
  video({
    id: 'video-d3_lite',
    family: 'D',
    inputModes: BOTH_VIDEO_MODES,
    aspectRatios: ['16:9', '9:16'],
    maxReferenceImages: 3,
    prices: grid({ '720p': { 8: 30 }, '1080p': { 8: 30 } }),
  }),
  video({
    id: 'video-e/2-6-text-to-video',
    family: 'E',
    inputModes: TEXT_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '720p': { 5: 30, 10: 60 }, '1080p': { 5: 45, 10: 90 } }),
  }),
  video({
    id: 'video-e/2-6-image-to-video',
    family: 'E',
    inputModes: IMAGE_ONLY,
    aspectRatios: WIDE_TALL_SQUARE,
    prices: grid({ '720p': { 5: 30, 10: 60 }, '1080p': { 5: 45, 10: 90 } }),
  }),
  video({
    id: 'video-f/1.5-pro',
    family: 'F',
    inputModes: BOTH_VIDEO_MODES,
    aspectRatios: ['21:9', '16:9', '4:3', '1:1', '3:4', '9:16'],
    prices: grid({ '480p': { 5: 12, 10: 24 }, '720p': { 5: 25, 10: 50 }, '1080p': { 5: 50, 10: 100 } }),
  }),
];

/** Every model, images first, in spec order. */
export const MODELS: readonly Model[] = /* @__PURE__ */ (() => [...IMAGE_MODELS, ...VIDEO_MODELS])();

/** The image model with this id, or undefined for anything else. */
export function findImageModel(id: string): ImageModel | undefined {
  return IMAGE_MODELS.find((m) => m.id === id);
}

/** The video model with this id, or undefined for anything else. */
export function findVideoModel(id: string): VideoModel | undefined {
  return VIDEO_MODELS.find((m) => m.id === id);
}

/** The image model with this (already validated) id. */
export function imageModel(id: ImageModelId): ImageModel {
  const model = findImageModel(id);
  if (model === undefined) throw new RangeError(`Unknown image model ${id}`);
  return model;
}

/** The video model with this (already validated) id. */
export function videoModel(id: VideoModelId): VideoModel {
  const model = findVideoModel(id);
  if (model === undefined) throw new RangeError(`Unknown video model ${id}`);
  return model;
}

/** Tiers an image model can be priced at, lowest first (every tier for a flat-rate model). */
export function imageTiersOf(model: ImageModel): readonly ImageTier[] {
  return model.pricing.kind === 'flat' ? IMAGE_TIERS : model.pricing.tiers.map((t) => t.tier);
}

/** Credits per output image at `tier`, or undefined when the model does not offer that tier. */
export function imageUnitPrice(model: ImageModel, tier: ImageTier): number | undefined {
  if (model.pricing.kind === 'flat') return model.pricing.credits;
  return model.pricing.tiers.find((t) => t.tier === tier)?.credits;
}

/** Credits for one video, or undefined when the model does not offer that duration and resolution. */
export function videoPrice(model: VideoModel, duration: number, resolution: VideoResolution): number | undefined {
  return model.prices.find((p) => p.duration === duration && p.resolution === resolution)?.credits;
}

const DASH = '—';

/**
 * The price section of docs/api/prices.md (between `<!-- prices:start -->` and `<!-- prices:end -->`), rendered from this
 * catalog; a unit test keeps that page equal to it. No leading or trailing newline.
 */
export function priceTableMarkdown(): string {
  const lines: string[] = [
    'Credits are debited when a task is accepted and refunded if the provider fails it. The `creditsUsed` of',
    'the submission response is the only figure clients should use. This section is rendered from',
    '`functions/core/catalog.ts` (`priceTableMarkdown()`) and a unit test keeps the two equal.',
    '',
    '### Image models (credits per output image)',
    '',
    `| Model | ${IMAGE_TIERS.join(' | ')} |`,
    `|---|${IMAGE_TIERS.map(() => '---:').join('|')}|`,
  ];
  for (const model of IMAGE_MODELS) {
    const cells = IMAGE_TIERS.map((tier) => String(imageUnitPrice(model, tier) ?? DASH));
    lines.push(`| ${model.id} | ${cells.join(' | ')} |`);
  }
  lines.push(
    '',
    '- Cost = the tier price x `numOutputs` (default 1). image-model-1 and image-model-4 are flat-rate: the',
    '  same price at any size.',
    '- Tier: `providerInput.resolution` (`1K`, `2K` or `4K`, any letter case; a tier the model does not offer',
    '  is a 400); else the larger of `width` and `height` (up to 1024: 1K, up to 2048: 2K, larger: 4K), moved',
    '  to the next tier the model offers (1K on image-model-3 is 2K); else the lowest tier. Both given: they',
    '  must agree.',
    '',
    '### Video models (credits per video)',
    '',
  );
  const allDurations = durationsOf(VIDEO_MODELS.flatMap((m) => m.prices));
  lines.push(
    `| Model | Family | Input modes | Resolution | ${allDurations.map((d) => `${d} s`).join(' | ')} |`,
    `|---|---|---|---|${allDurations.map(() => '---:').join('|')}|`,
  );
  for (const model of VIDEO_MODELS) {
    const modes = model.inputModes.join(', ');
    for (const resolution of model.resolutions) {
      const cells = allDurations.map((d) => String(videoPrice(model, d, resolution) ?? DASH));
      lines.push(`| ${model.id} | ${model.family} | ${modes} | ${resolution} | ${cells.join(' | ')} |`);
    }
  }
  lines.push(
    '',
    '- Duration: `duration` in seconds, one of the durations priced for the model (others are rejected);',
    '  when omitted, the model’s shortest (5 s; family C 6 s; family D 8 s).',
    '- Resolution: `providerInput.resolution` (`480p`, `720p` or `1080p`, any letter case; one the model does',
    '  not offer is a 400); else the shorter side of `width` / `height` (up to 480: 480p, up to 720: 720p,',
    '  larger: 1080p), moved to the model’s next resolution up (or its highest); else the model’s lowest',
    '  resolution. Both given: they must agree.',
  );
  return lines.join('\n');
}
