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
 * Mappings marked `flagged` are stand-ins: their `source` says what the documentation did not cover
 * and which documented model was taken instead. A model without an `outputCount` key makes one image
 * per task upstream, so this profile accepts only `numOutputs: 1` for it (the price guard says so).
 */

import type { ModelMapping, ProviderProfile } from './profile';

const MARKET = 'https://docs.kie.ai/market/';

/** Kling 2.1: "5"/"10" s as text; the resolution is fixed by the model name. */
function kling(model: string, images: boolean): ModelMapping {
  return {
    model,
    input: {
      prompt: 'prompt',
      negativePrompt: 'negative_prompt',
      duration: { key: 'duration', format: 'string' },
      ...(images
        ? { referenceImages: { key: 'image_url', form: 'single' } }
        : { aspectRatio: { key: 'aspect_ratio' } }),
    },
    source: `${MARKET}${model}`,
  };
}

/** Bytedance (Seedance) V1: "5"/"10" s as text, 480p/720p/1080p as they are; image-to-video takes no ratio. */
function bytedanceV1(model: string, images: boolean): ModelMapping {
  return {
    model,
    input: {
      prompt: 'prompt',
      resolution: { key: 'resolution' },
      duration: { key: 'duration', format: 'string' },
      ...(images
        ? { referenceImages: { key: 'image_url', form: 'single' } }
        : { aspectRatio: { key: 'aspect_ratio' } }),
    },
    source: `${MARKET}bytedance/${model.split('/')[1]} (page not in the index read; shape of the documented seedance-1.5-pro)`,
  };
}

/** Hailuo 02: "6"/"10" s as text; standard runs at 768P and pro at 1080P, fixed by the model name. */
function hailuo(model: string, images: boolean, note = ''): ModelMapping {
  return {
    model,
    input: {
      prompt: 'prompt',
      duration: { key: 'duration', format: 'string' },
      ...(images ? { referenceImages: { key: 'image_url', form: 'single' } } : {}),
    },
    defaults: { prompt_optimizer: true },
    source: `${MARKET}${model}${note}`,
    ...(note ? { flagged: true } : {}),
  };
}

/** Seedance 1.5 pro: text or image to video, 480p/720p/1080p, up to two images in `input_urls`. */
function seedance15(source: string, flagged: boolean): ModelMapping {
  return {
    model: 'bytedance/seedance-1.5-pro',
    input: {
      prompt: 'prompt',
      aspectRatio: { key: 'aspect_ratio' },
      resolution: { key: 'resolution' },
      duration: { key: 'duration', format: 'string' },
      referenceImages: { key: 'input_urls', form: 'list' },
    },
    source,
    ...(flagged ? { flagged } : {}),
  };
}

const VEO =
  'Veo 3.1 (veo3, veo3_fast) is documented only at POST /api/v1/veo/generate, another protocol than createTask ' +
  '(old-docs.kie.ai/veo3-api/generate-veo-3-video); closest documented createTask model with both input modes, ' +
  '720p/1080p and an 8 s clip: bytedance/seedance-1.5-pro';

/** Kie.ai's profile. */
export const KIE_PROFILE: ProviderProfile = {
  name: 'kie',
  description: 'Kie.ai market models (https://api.kie.ai), documentation read on 2026-11-23.',
  models: {
    'image-model-1': {
      model: 'google/nano-banana',
      editModel: 'google/nano-banana-edit',
      input: {
        prompt: 'prompt',
        aspectRatio: { key: 'image_size' },
        referenceImages: { key: 'image_urls', form: 'list' },
      },
      defaults: { output_format: 'png' },
      source: `${MARKET}google/nano-banana, ${MARKET}google/nano-banana-edit`,
    },
    'image-model-2': {
      model: 'nano-banana-pro',
      input: {
        prompt: 'prompt',
        aspectRatio: { key: 'aspect_ratio' },
        referenceImages: { key: 'image_input', form: 'list' },
        resolution: { key: 'resolution' },
      },
      defaults: { output_format: 'png' },
      source: `${MARKET}google/pro-image-to-image (model nano-banana-pro)`,
    },
    'image-model-3': {
      model: 'seedream/4.5-text-to-image',
      editModel: 'seedream/4.5-edit',
      input: {
        prompt: 'prompt',
        aspectRatio: { key: 'aspect_ratio' },
        referenceImages: { key: 'image_urls', form: 'list' },
        // "basic" renders 2K, "high" 4K.
        resolution: { key: 'quality', values: { '2K': 'basic', '4K': 'high' } },
      },
      source: `${MARKET}seedream/4.5-text-to-image, ${MARKET}seedream/4.5-edit`,
    },
    'image-model-4': {
      model: 'bytedance/seedream-v4-text-to-image',
      editModel: 'bytedance/seedream-v4-edit',
      input: {
        prompt: 'prompt',
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
        referenceImages: { key: 'image_urls', form: 'list' },
        outputCount: { key: 'max_images', format: 'number' },
      },
      billedAliases: { resolution: ['image_resolution'] },
      source: `${MARKET}seedream/seedream-v4-text-to-image, ${MARKET}seedream/seedream-v4-edit`,
    },
    'video-a/v2-1-standard': kling('kling/v2-1-standard', true),
    'video-a/v2-1-pro': kling('kling/v2-1-pro', true),
    'video-a/v2-1-master-text-to-video': kling('kling/v2-1-master-text-to-video', false),
    'video-b-2-text-to-video': bytedanceV1('bytedance/v1-lite-text-to-video', false),
    'video-b-2-pro-text-to-video': bytedanceV1('bytedance/v1-pro-text-to-video', false),
    'video-b-2-image-to-video': bytedanceV1('bytedance/v1-lite-image-to-video', true),
    'video-c/02-text-to-video-standard': hailuo('hailuo/02-text-to-video-standard', false),
    'video-c/02-text-to-video-pro': hailuo(
      'hailuo/02-text-to-video-pro',
      false,
      ' (the documentation offers 1080P for 6 s only; the catalog also sells 10 s)',
    ),
    'video-c/02-image-to-video-standard': hailuo('hailuo/02-image-to-video-standard', true),
    'video-c/02-image-to-video-pro': hailuo(
      'hailuo/02-image-to-video-pro',
      true,
      ' (the documentation offers 1080P for 6 s only; the catalog also sells 10 s)',
    ),
    'video-d3_fast': seedance15(VEO, true),
    'video-d3': seedance15(VEO, true),
    'video-d3_lite': seedance15(`${VEO} (no Veo "lite" model is documented at all)`, true),
    'video-e/2-6-text-to-video': {
      model: 'wan/2-6-text-to-video',
      input: { prompt: 'prompt', resolution: { key: 'resolution' }, duration: { key: 'duration', format: 'string' } },
      source: `${MARKET}wan/2-6-text-to-video`,
    },
    'video-e/2-6-image-to-video': {
      model: 'wan/2-6-image-to-video',
      input: {
        prompt: 'prompt',
        resolution: { key: 'resolution' },
        duration: { key: 'duration', format: 'string' },
        referenceImages: { key: 'image_urls', form: 'list' },
      },
      source: `${MARKET}wan/2-6-image-to-video`,
    },
    'video-f/1.5-pro': seedance15(
      `${MARKET}bytedance/seedance-1.5-pro (the 5 s and 10 s durations of the catalog were not confirmed by the page)`,
      true,
    ),
  },
};
