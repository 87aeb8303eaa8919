import { VIDEO_MODEL_IDS, type VideoModelId, videoModel } from '../../functions/core/catalog';
import {
  priceImage,
  priceVideo,
  resolveImageTier,
  resolveVideoDuration,
  resolveVideoResolution,
} from '../../functions/core/pricing';
import { imageBody, videoBody } from './core-fixtures';
import { validateImageRequest, validateVideoRequest } from './mock-profile-rules';

const image = (model: string, extra: Record<string, unknown> = {}) => validateImageRequest(imageBody(model, extra));
const video = (model: VideoModelId, extra: Record<string, unknown> = {}) =>
  validateVideoRequest(videoBody(model, extra));

describe('priceImage', () => {
  test.each([
    ['image-model-1', {}, 3],
    ['image-model-1', { width: 4096, height: 4096 }, 3],
    ['image-model-1', { providerInput: { resolution: '4K' } }, 3],
    ['image-model-1', { numOutputs: 10 }, 30],
    ['image-model-4', {}, 3],
    ['image-model-4', { width: 3000, numOutputs: 4 }, 12],
  ])('flat-rate %s with %j costs %i', (model, extra, credits) => {
    // Prepare
    const req = image(model, extra);

    // Act
    const price = priceImage(req);

    // Assert
    expect(price).toBe(credits);
  });

  test.each([
    ['tier from providerInput 1K', { providerInput: { resolution: '1K' } }, 4],
    ['tier from providerInput 2K', { providerInput: { resolution: '2K' } }, 6],
    ['tier from providerInput 4K', { providerInput: { resolution: '4K' } }, 8],
    ['providerInput in lower case', { providerInput: { resolution: '4k' } }, 8],
    ['no size: lowest tier', {}, 4],
    ['width 1024: 1K', { width: 1024 }, 4],
    ['width 1025: 2K', { width: 1025 }, 6],
    ['height 2048: 2K', { height: 2048 }, 6],
    ['height 2049: 4K', { height: 2049 }, 8],
    ['the larger side counts', { width: 512, height: 3000 }, 8],
    ['times numOutputs', { numOutputs: 10, providerInput: { resolution: '4K' } }, 80],
    ['providerInput and size agreeing', { width: 4096, providerInput: { resolution: '4k' } }, 8],
  ])('image-model-2: %s', (_name, extra, credits) => {
    // Prepare
    const req = image('image-model-2', extra);

    // Act
    const price = priceImage(req);

    // Assert
    expect(price).toBe(credits);
  });

  test.each([
    ['no size: lowest tier (2K)', {}, 12, '2K'],
    ['1K size is priced as 2K', { width: 512, height: 512 }, 12, '2K'],
    ['4K by size', { width: 4096 }, 20, '4K'],
    ['4K by providerInput', { providerInput: { resolution: '4K' } }, 20, '4K'],
    ['times numOutputs', { numOutputs: 3, width: 2049 }, 60, '4K'],
  ])('image-model-3: %s', (_name, extra, credits, tier) => {
    // Prepare
    const req = image('image-model-3', extra);

    // Act
    const price = priceImage(req);
    const resolved = resolveImageTier(req);

    // Assert
    expect(price).toBe(credits);
    expect(resolved).toBe(tier);
  });
});

describe('priceVideo', () => {
  test.each(
    VIDEO_MODEL_IDS.map((id) => {
      const model = videoModel(id);
      const lowest = model.prices.find(
        (p) => p.duration === model.defaultDuration && p.resolution === model.resolutions[0],
      );
      return [id, lowest?.credits] as const;
    }),
  )('%s without duration or size costs its default duration at its lowest resolution (%i)', (id, credits) => {
    // Prepare
    const req = video(id);

    // Act
    const price = priceVideo(req);

    // Assert
    expect(price).toBe(credits);
    expect(price).toBeGreaterThan(0);
  });

  test.each(
    VIDEO_MODEL_IDS.flatMap((id) =>
      videoModel(id).prices.map((p) => [id, p.duration, p.resolution, p.credits] as const),
    ),
  )('%s for %i s at %s costs %i', (id, duration, resolution, credits) => {
    // Prepare
    const req = video(id, { duration, providerInput: { resolution } });

    // Act
    const price = priceVideo(req);

    // Assert
    expect(price).toBe(credits);
  });

  test.each([
    ['video-b-2-text-to-video', { width: 640, height: 480 }, '480p', 10],
    ['video-b-2-text-to-video', { width: 1280, height: 720 }, '720p', 20],
    ['video-b-2-text-to-video', { width: 1920, height: 1080, duration: 10 }, '1080p', 80],
    ['video-b-2-text-to-video', { width: 1080, height: 1920 }, '1080p', 40],
    ['video-b-2-text-to-video', { height: 721 }, '1080p', 40],
    ['video-b-2-pro-text-to-video', { width: 640, height: 480 }, '720p', 40],
    ['video-a/v2-1-standard', { width: 1920, height: 1080 }, '720p', 25],
    ['video-d3', { width: 1920, height: 1080 }, '1080p', 200],
    ['video-f/1.5-pro', { width: 4096, height: 4096, duration: 10 }, '1080p', 100],
    ['video-b-2-text-to-video', { width: 1920, height: 1080, providerInput: { resolution: '1080P' } }, '1080p', 40],
  ] as const)('%s with %j is priced at %s: %i', (id, extra, resolution, credits) => {
    // Prepare
    const req = video(id, extra);

    // Act
    const price = priceVideo(req);
    const resolved = resolveVideoResolution(req);

    // Assert
    expect(resolved).toBe(resolution);
    expect(price).toBe(credits);
  });

  test.each([
    ['video-a/v2-1-pro', 5],
    ['video-c/02-text-to-video-pro', 6],
    ['video-d3_lite', 8],
    ['video-f/1.5-pro', 5],
  ] as const)('%s defaults to %i seconds', (id, seconds) => {
    // Prepare
    const req = video(id);

    // Act
    const duration = resolveVideoDuration(req);

    // Assert
    expect(duration).toBe(seconds);
  });

  test('a duration the model does not offer cannot be priced (validation rejects it first)', () => {
    // Prepare
    const req = { ...video('video-d3'), duration: 5 };

    // Act
    const act = () => priceVideo(req);

    // Assert
    expect(act).toThrow(RangeError);
  });
});
