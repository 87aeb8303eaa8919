import { isStorableNumber } from '../../functions/core/storable';
import { imageBody, rejectionOf, videoBody } from './core-fixtures';
import { validateImageRequest, validateVideoRequest } from './mock-profile-rules';

describe('the price guard: providerInput cannot buy more than was priced', () => {
  test.each([
    ['more images (image-model-2, num_images 10)', { providerInput: { num_images: 10 } }, 'providerInput.num_images'],
    ['camelCase alias', { numOutputs: 2, providerInput: { numImages: 3 } }, 'providerInput.numImages'],
    ['another spelling of the billed count', { providerInput: { 'NUM-OUTPUTS': 2 } }, 'providerInput.NUM-OUTPUTS'],
    ['nested deep in providerInput', { providerInput: { extra: [{ n: 4 }] } }, 'providerInput.extra.0.n'],
    ['size without a top-level size', { providerInput: { width: 4096, height: 4096 } }, 'providerInput.width'],
    ['size that differs from the top level', { width: 1024, providerInput: { width: 4096 } }, 'providerInput.width'],
    ['a size string', { providerInput: { image_size: '4096x4096' } }, 'providerInput.image_size'],
    ['a tier with a trailing space', { providerInput: { resolution: '4K ' } }, 'providerInput.resolution'],
    ['a tier that is not a string', { providerInput: { resolution: 4 } }, 'providerInput.resolution'],
    ['a tier contradicting width', { width: 4096, providerInput: { resolution: '1K' } }, 'providerInput.resolution'],
  ])('image-model-2: %s -> 400 at %s', (_name, extra, path) => {
    // Act
    const details = rejectionOf(() => validateImageRequest(imageBody('image-model-2', extra)));

    // Assert
    expect(Object.keys(details.fieldErrors)).toContain(path);
    expect(details.fieldErrors[path]?.[0]).toMatch(/Billed by the service|Must be one of|Conflicts with/);
  });

  test('a tier the model does not offer names the offered ones', () => {
    // Act
    const details = rejectionOf(() =>
      validateImageRequest(imageBody('image-model-3', { providerInput: { resolution: '1K' } })),
    );

    // Assert
    expect(details.fieldErrors['providerInput.resolution']).toEqual(['Must be one of 2K, 4K for image-model-3']);
  });

  test.each([
    ['an unknown resolution token', { providerInput: { resolution: '1080' } }, 'providerInput.resolution'],
    ['a longer duration', { duration: 5, providerInput: { duration: 10 } }, 'providerInput.duration'],
    ['a duration in frames', { providerInput: { num_frames: 240 } }, 'providerInput.num_frames'],
    ['two videos', { providerInput: { num_videos: 2 } }, 'providerInput.num_videos'],
    [
      'a resolution contradicting the size',
      { width: 1920, height: 1080, providerInput: { resolution: '480p' } },
      'providerInput.resolution',
    ],
  ])('video-b-2-text-to-video: %s -> 400 at %s', (_name, extra, path) => {
    // Act
    const details = rejectionOf(() => validateVideoRequest(videoBody('video-b-2-text-to-video', extra)));

    // Assert
    expect(Object.keys(details.fieldErrors)).toContain(path);
  });

  test('repeating the priced values is accepted', () => {
    // Act
    const image = validateImageRequest(
      imageBody('image-model-2', {
        numOutputs: 2,
        width: 2048,
        providerInput: { num_images: 2, width: 2048, resolution: '2k' },
      }),
    );
    const video = validateVideoRequest(
      videoBody('video-b-2-text-to-video', {
        duration: 10,
        providerInput: { duration: '10', resolution: '480P', seed_mode: 1 },
      }),
    );

    // Assert
    expect(image.providerInput).toEqual({ num_images: 2, width: 2048, resolution: '2k' });
    expect(video.providerInput).toEqual({ duration: '10', resolution: '480P', seed_mode: 1 });
  });
});

describe('values a task item cannot hold are a 400', () => {
  test.each([
    ['1e300 in providerInput', { providerInput: { a: 1e300 } }, 'providerInput.a'],
    ['1e-200 in providerInput', { providerInput: { a: { b: 1e-200 } } }, 'providerInput.a.b'],
    ['Infinity (1e400 parsed)', { providerInput: { a: [Number.POSITIVE_INFINITY] } }, 'providerInput.a.0'],
    [
      'an integer past 2^53 (a 40-digit number parsed)',
      { providerInput: { a: 1.2345678901234568e39 } },
      'providerInput.a',
    ],
    ['an empty key', { providerInput: { '': 1 } }, 'providerInput.'],
    ['a nested empty key', { providerInput: { b: { '': 1 } } }, 'providerInput.b.'],
    ['a tiny guidanceScale', { guidanceScale: 1e-200 }, 'guidanceScale'],
  ])('%s', (_name, extra, path) => {
    // Act
    const details = rejectionOf(() => validateImageRequest(imageBody('image-model-1', extra)));

    // Assert
    expect(Object.keys(details.fieldErrors)).toContain(path);
  });

  test.each([
    [0, true],
    [-0.5, true],
    [1e-130, true],
    [9007199254740991, true],
    [9007199254740992, false],
    [1e-131, false],
    [Number.NaN, false],
  ])('isStorableNumber(%p) is %p', (value, storable) => {
    // Act + Assert
    expect(isStorableNumber(value)).toBe(storable);
  });
});
