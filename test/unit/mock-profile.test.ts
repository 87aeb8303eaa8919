import { KIE_PROFILE, MOCK_PROFILE } from '../../functions/core/profiles';
import { checkProfiledCall } from '../../local/mock-profile';

describe('the mock provider in profile mode (kie)', () => {
  test('accepts a call shaped as the profile says, with the mock controls, and counts its images', () => {
    // Act
    const result = checkProfiledCall(KIE_PROFILE, 'bytedance/seedream-v4-text-to-image', {
      prompt: 'x',
      image_size: 'landscape_16_9',
      max_images: 3,
      mockDelayMs: 10,
    });

    // Assert
    expect(result).toEqual({ ok: true, call: { kind: 'image', count: 3 } });
  });

  test.each([
    ['an unknown model', 'google/imagen-9', { prompt: 'x' }, 'model google/imagen-9 does not exist'],
    [
      'an unknown key',
      'kling/v2-1-pro',
      { prompt: 'x', image_url: 'u', cfg: 1 },
      'input.cfg is not a parameter of kling/v2-1-pro',
    ],
    [
      'a duration as a number',
      'kling/v2-1-pro',
      { prompt: 'x', image_url: 'u', duration: 5 },
      'input.duration must be a whole number as a string, e.g. "5"',
    ],
    [
      'a duration the model lacks',
      'hailuo/02-text-to-video-standard',
      { prompt: 'x', duration: '8' },
      'input.duration must be one of 6, 10',
    ],
    [
      'our token where the upstream has its own',
      'seedream/4.5-text-to-image',
      { prompt: 'x', quality: '4K' },
      'input.quality must be one of basic, high',
    ],
    [
      'one URL where a list is due',
      'google/nano-banana-edit',
      { prompt: 'x', image_urls: 'u' },
      'input.image_urls must be a non-empty list of URLs',
    ],
    [
      'images under the text model name',
      'google/nano-banana',
      { prompt: 'x', image_urls: ['u'] },
      'input.image_urls is not a parameter of google/nano-banana',
    ],
    [
      'the edit model without images',
      'google/nano-banana-edit',
      { prompt: 'x' },
      'input.image_urls is required by google/nano-banana-edit',
    ],
    ['no prompt', 'wan/2-6-text-to-video', { duration: '5' }, 'input.prompt is required'],
  ])('refuses %s, saying what is wrong', (_case, model, input, message) => {
    // Act
    const result = checkProfiledCall(KIE_PROFILE, model, input);

    // Assert
    expect(result).toEqual({ ok: false, message });
  });

  test('a provider model several of our models map to is accepted when any of their shapes fits', () => {
    // Act
    const result = checkProfiledCall(KIE_PROFILE, 'bytedance/seedance-1.5-pro', {
      prompt: 'x',
      resolution: '1080p',
      duration: '8',
    });

    // Assert
    expect(result).toEqual({ ok: true, call: { kind: 'video', count: 1 } });
  });

  test('the mock profile itself is strict too when asked to be', () => {
    // Act
    const result = checkProfiledCall(MOCK_PROFILE, 'provider/image-model-2', { prompt: 'x', style: 'noir' });

    // Assert
    expect(result).toEqual({ ok: false, message: 'input.style is not a parameter of provider/image-model-2' });
  });
});
