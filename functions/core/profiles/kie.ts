/**
 * The `kie` profile: Kie.ai (base URL `https://api.kie.ai`), an aggregator whose "market" models all
 * speak the task-queue protocol of `functions/provider/http-provider.ts` (`POST /api/v1/jobs/createTask`,
 * `GET /api/v1/jobs/recordInfo`, `resultJson.resultUrls`, `callBackUrl`).
 *
 * Sources, read on 2026-11-23 (through a search index of the public pages; the site itself was not
 * reachable from the development machine, so check the pages again before going live):
 * - https://docs.kie.ai/market/google/nano-banana-edit (and the mirror of the market OpenAPI blocks at
 *   docs.apikley.ru: google/nano-banana-edit, nano-banana-pro, seedream/seedream-v4-text-to-image,
 *   kling/v2-1-standard, hailuo/02-text-to-video-pro, kling/text-to-video, wan/2-6-text-to-video,
 *   bytedance/seedance-1.5-pro, sora2/*)
 * - https://docs.kie.ai/market/seedream/4.5-edit, https://docs.kie.ai/cn/market/seedream/4.5-text-to-image
 * - https://docs.kie.ai/cn/market/seedream/seedream-v4-edit
 * - https://docs.kie.ai/cn/market/wan/2-6-text-to-video
 * - https://docs.kie.ai/cn/market/google/imagen4-fast (input values as strings, e.g. `"num_images": "1"`)
 * - https://old-docs.kie.ai/veo3-api/generate-veo-3-video (Veo: a different endpoint, see family D)
 * - the common "Get Task Details" page (recordInfo: `state`, `resultJson`, `failCode`, `failMsg`; times
 *   in milliseconds) as quoted by the compatible docs.ruxa.ai/api-reference/common/get-task-detail.
 *
 * Each mapping says its page in a comment (comments cost the bundles nothing). Mappings marked FLAGGED
 * are stand-ins: the comment says what the documentation did not cover and which documented model was
 * taken instead. A model without an `outputCount` key makes one image per task upstream, so this
 * profile accepts only `numOutputs: 1` for it (the price guard says so).
 */

import type { InputShape, ModelMapping, ProviderProfile } from './profile';

// Shared pieces (one object each, so the bundles carry each once).
const P = 'prompt';
const ASPECT = { key: 'aspect_ratio' } as const;
const RESOLUTION = { key: 'resolution' } as const;
/** Upstream durations are text: `"5"`, not `5`. */
const DURATION = { key: 'duration', format: 'string' } as const;
const ONE_IMAGE = { key: 'image_url', form: 'single' } as const;
const IMAGE_LIST = { key: 'image_urls', form: 'list' } as const;

/** A video model whose input is the prompt, `more`, and either one image or an aspect ratio. */
function video(model: string, images: boolean, more: Omit<InputShape, 'prompt'>): ModelMapping {
  return {
    model,
    input: { prompt: P, ...more, ...(images ? { referenceImages: ONE_IMAGE } : { aspectRatio: ASPECT }) },
  };
}

// Kling 2.1 (docs.kie.ai/market/kling/v2-1-*): "5"/"10" s; the resolution is fixed by the model name.
const KLING = { negativePrompt: 'negative_prompt', duration: DURATION } as const;
// Bytedance (Seedance) V1 (docs.kie.ai/market/bytedance/v1-*; these pages were not in the index read,
// the shape is that of the documented seedance-1.5-pro): "5"/"10" s, 480p/720p/1080p as they are;
// image-to-video takes no aspect ratio.
const BYTEDANCE_V1 = { resolution: RESOLUTION, duration: DURATION } as const;

/**
 * Hailuo 02 (docs.kie.ai/market/hailuo/02-*): "6"/"10" s; standard runs at 768P and pro at 1080P,
 * fixed by the model name; no aspect ratio.
 */
function hailuo(model: string, images: boolean): ModelMapping {
  return { model, input: { prompt: P, duration: DURATION, ...(images ? { referenceImages: ONE_IMAGE } : {}) } };
}

/**
 * Seedance 1.5 pro (docs.kie.ai/market/bytedance/seedance-1.5-pro): text or image to video,
 * 480p/720p/1080p, up to two images in `input_urls`.
 */
const SEEDANCE_15: ModelMapping = {
  model: 'bytedance/seedance-1.5-pro',
  input: {
    prompt: P,
    aspectRatio: ASPECT,
    resolution: RESOLUTION,
    duration: DURATION,
    referenceImages: { key: 'input_urls', form: 'list' },
  },
};

/** Kie.ai's profile. */
export const KIE_PROFILE: ProviderProfile = {
  name: 'kie',
  // "20 new generation requests per 10 seconds" per API key; the excess is answered 429, not queued.
  capacity: { createRateLimit: '20/10' },
  models: {
    // docs.kie.ai/market/google/nano-banana, .../google/nano-banana-edit
    'image-model-1': {
      model: 'google/nano-banana',
      editModel: 'google/nano-banana-edit',
      input: { prompt: P, aspectRatio: { key: 'image_size' }, referenceImages: IMAGE_LIST },
    },
    // docs.kie.ai/market/google/pro-image-to-image (model nano-banana-pro)
    'image-model-2': {
      model: 'nano-banana-pro',
      input: {
        prompt: P,
        aspectRatio: ASPECT,
        referenceImages: { key: 'image_input', form: 'list' },
        resolution: RESOLUTION,
      },
    },
    // docs.kie.ai/market/seedream/4.5-text-to-image, .../seedream/4.5-edit
    'image-model-3': {
      model: 'seedream/4.5-text-to-image',
      editModel: 'seedream/4.5-edit',
      input: {
        prompt: P,
        aspectRatio: ASPECT,
        referenceImages: IMAGE_LIST,
        // "basic" renders 2K, "high" 4K.
        resolution: { key: 'quality', values: { '2K': 'basic', '4K': 'high' } },
      },
    },
    // docs.kie.ai/market/seedream/seedream-v4-text-to-image, .../seedream/seedream-v4-edit
    'image-model-4': {
      model: 'bytedance/seedream-v4-text-to-image',
      editModel: 'bytedance/seedream-v4-edit',
      input: {
        prompt: P,
        aspectRatio: {
          key: 'image_size',
          values: {
            '1:1': 'square_hd',
            '4:3': 'landscape_4_3',
            '3:4': 'portrait_4_3',
            '16:9': 'landscape_16_9',
            '9:16': 'portrait_16_9',
            '3:2': 'landscape_3_2',
            '2:3': 'portrait_3_2',
          },
        },
        referenceImages: IMAGE_LIST,
        outputCount: { key: 'max_images', format: 'number' },
      },
    },
    'video-a/v2-1-standard': /* @__PURE__ */ video('kling/v2-1-standard', true, KLING),
    'video-a/v2-1-pro': /* @__PURE__ */ video('kling/v2-1-pro', true, KLING),
    'video-a/v2-1-master-text-to-video': /* @__PURE__ */ video('kling/v2-1-master-text-to-video', false, KLING),
    'video-b-2-text-to-video': /* @__PURE__ */ video('bytedance/v1-lite-text-to-video', false, BYTEDANCE_V1),
    'video-b-2-pro-text-to-video': /* @__PURE__ */ video('bytedance/v1-pro-text-to-video', false, BYTEDANCE_V1),
    'video-b-2-image-to-video': /* @__PURE__ */ video('bytedance/v1-lite-image-to-video', true, BYTEDANCE_V1),
    'video-c/02-text-to-video-standard': /* @__PURE__ */ hailuo('hailuo/02-text-to-video-standard', false),
    // FLAGGED: the documentation offers 1080P for 6 s only; the catalog also sells 10 s at pro.
    'video-c/02-text-to-video-pro': /* @__PURE__ */ hailuo('hailuo/02-text-to-video-pro', false),
    'video-c/02-image-to-video-standard': /* @__PURE__ */ hailuo('hailuo/02-image-to-video-standard', true),
    // FLAGGED: as text-to-video-pro, 10 s at 1080P is not documented.
    'video-c/02-image-to-video-pro': /* @__PURE__ */ hailuo('hailuo/02-image-to-video-pro', true),
    // FLAGGED, family D: Veo 3.1 (veo3, veo3_fast) is documented only at POST /api/v1/veo/generate
    // (old-docs.kie.ai/veo3-api/generate-veo-3-video), another protocol than createTask, and no Veo
    // "lite" is documented at all. Closest documented createTask model with both input modes,
    // 720p/1080p and an 8 s clip: bytedance/seedance-1.5-pro.
    'video-d3_fast': SEEDANCE_15,
    'video-d3': SEEDANCE_15,
    'video-d3_lite': SEEDANCE_15,
    // docs.kie.ai/market/wan/2-6-text-to-video, .../wan/2-6-image-to-video
    'video-e/2-6-text-to-video': {
      model: 'wan/2-6-text-to-video',
      input: { prompt: P, resolution: RESOLUTION, duration: DURATION },
    },
    'video-e/2-6-image-to-video': {
      model: 'wan/2-6-image-to-video',
      input: { prompt: P, resolution: RESOLUTION, duration: DURATION, referenceImages: IMAGE_LIST },
    },
    // FLAGGED: the page read did not confirm the catalog's 5 s and 10 s durations for this model.
    'video-f/1.5-pro': SEEDANCE_15,
  },
};
