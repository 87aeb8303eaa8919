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

function imageMapping(model: ImageModel): ModelMapping {
  return {
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
  };
}

function videoMapping(model: VideoModel): ModelMapping {
  return {
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
  };
}

/** The mock provider's profile. */
export const MOCK_PROFILE: ProviderProfile = {
  name: 'mock',
  description: 'The local mock provider (local/mock-provider.ts): provider/<model id>, snake_case input keys.',
  models: Object.fromEntries([
    ...IMAGE_MODELS.map((m) => [m.id, imageMapping(m)] as const),
    ...VIDEO_MODELS.map((m) => [m.id, videoMapping(m)] as const),
  ]),
};
