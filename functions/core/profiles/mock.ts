/**
 * The `mock` profile: the local mock provider's names (`provider/<model id>`) and one snake_case input
 * shape for every model. It is the local default and what the tests use unless they name another
 * profile. Built from the catalog, so a new model is mapped here without a second list.
 */

import { IMAGE_MODELS, type ImageModel, VIDEO_MODELS, type VideoModel } from '../catalog';
import type { InputShape, ModelMapping, ProviderProfile } from './profile';

const COMMON = {
  prompt: 'prompt',
  negativePrompt: 'negative_prompt',
  width: 'width',
  height: 'height',
  aspectRatio: { key: 'aspect_ratio' },
  seed: 'seed',
  guidanceScale: 'guidance_scale',
} as const satisfies InputShape;

/**
 * The mock provider's profile. The mappings are built inline, in calls marked pure and without spreads
 * (which esbuild must keep): a bundle built for another profile then drops all of this.
 */
export const MOCK_PROFILE: ProviderProfile = {
  name: 'mock',
  models: /* @__PURE__ */ Object.fromEntries(
    /* @__PURE__ */ IMAGE_MODELS.map((model: ImageModel): [string, ModelMapping] => [
      model.id,
      {
        model: `provider/${model.id}`,
        // image-model-1 is a unified text/edit model upstream: with reference images it has its own name.
        ...(model.id === 'image-model-1' ? { editModel: 'provider/image-model-1-edit' } : {}),
        input: {
          ...COMMON,
          numInferenceSteps: 'num_inference_steps',
          referenceImages: { key: 'image_urls', form: 'list' },
          outputCount: { key: 'num_outputs', format: 'number' },
          ...(model.pricing.kind === 'tiered' ? { resolution: { key: 'resolution' } } : {}),
        },
      },
    ]).concat(
      /* @__PURE__ */ VIDEO_MODELS.map((model: VideoModel): [string, ModelMapping] => [
        model.id,
        {
          model: `provider/${model.id}`,
          input: {
            ...COMMON,
            fps: 'fps',
            motionStrength: 'motion_strength',
            cameraMotion: 'camera_motion',
            referenceImages: { key: 'image_url', form: 'single' },
            resolution: { key: 'resolution' },
            duration: { key: 'duration', format: 'number' },
          },
        },
      ]),
    ),
  ),
};
