import { VIDEO_MODEL_IDS, videoModel } from '../../functions/core/catalog';
import { IMAGE_URL, imageBody, urls, videoBody } from './core-fixtures';
import {
  buildImageProviderRequest,
  buildVideoProviderRequest,
  validateImageRequest,
  validateVideoRequest,
} from './mock-profile-rules';

describe('buildImageProviderRequest', () => {
  test('maps every request field to snake_case provider input', () => {
    // Prepare
    const req = validateImageRequest(
      imageBody('image-model-2', {
        negativePrompt: 'blurry',
        width: 1536,
        height: 1024,
        aspectRatio: '3:2',
        numOutputs: 3,
        seed: '12345678901234567890',
        guidanceScale: 4.5,
        numInferenceSteps: 28,
        inputImageUrls: [IMAGE_URL],
      }),
    );

    // Act
    const call = buildImageProviderRequest(req);

    // Assert
    expect(call).toEqual({
      model: 'provider/image-model-2',
      input: {
        prompt: req.prompt,
        negative_prompt: 'blurry',
        width: 1536,
        height: 1024,
        aspect_ratio: '3:2',
        num_outputs: 3,
        seed: '12345678901234567890',
        guidance_scale: 4.5,
        num_inference_steps: 28,
        image_urls: [IMAGE_URL],
        resolution: '2K',
      },
    });
  });

  test('image-model-1 uses its text model without images and its edit model with them', () => {
    // Prepare
    const text = validateImageRequest(imageBody('image-model-1'));
    const edit = validateImageRequest(imageBody('image-model-1', { inputImageUrls: urls(4) }));

    // Act
    const textCall = buildImageProviderRequest(text);
    const editCall = buildImageProviderRequest(edit);

    // Assert
    expect(textCall).toEqual({ model: 'provider/image-model-1', input: { prompt: text.prompt, num_outputs: 1 } });
    expect(editCall.model).toBe('provider/image-model-1-edit');
    expect(editCall.input.image_urls).toEqual(urls(4));
  });

  test('providerInput wins over the defaults and mock controls pass through unchanged', () => {
    // Prepare
    const req = validateImageRequest(
      imageBody('image-model-3', {
        aspectRatio: '1:1',
        providerInput: { aspect_ratio: '21:9', output_format: 'png', mockOutcome: 'broken_result', mockDelayMs: 250 },
      }),
    );

    // Act
    const call = buildImageProviderRequest(req);

    // Assert
    expect(call.input).toMatchObject({ aspect_ratio: '21:9', output_format: 'png', mockOutcome: 'broken_result' });
    expect(call.input.mockDelayMs).toBe(250);
  });

  test('a repeated billed quantity is kept and the priced tier is sent in canonical form', () => {
    // Prepare
    const req = validateImageRequest(
      imageBody('image-model-2', { providerInput: { num_outputs: 1, resolution: '4k' } }),
    );

    // Act
    const call = buildImageProviderRequest(req);

    // Assert
    expect(call.input.num_outputs).toBe(1);
    expect(call.input.resolution).toBe('4K');
  });

  test('provider-specific options pass through next to the priced values', () => {
    // Prepare
    const req = validateImageRequest(
      imageBody('image-model-3', { numOutputs: 2, providerInput: { style: 'vivid', safety: { level: 2 } } }),
    );

    // Act
    const call = buildImageProviderRequest(req);

    // Assert
    expect(call.input).toMatchObject({ style: 'vivid', safety: { level: 2 }, num_outputs: 2, resolution: '2K' });
  });
});

describe('buildVideoProviderRequest', () => {
  test('maps every request field and sends only the first reference image', () => {
    // Prepare
    const req = validateVideoRequest(
      videoBody('video-d3', {
        inputMode: 'image_to_video',
        inputImageUrls: urls(3),
        negativePrompt: 'text overlays',
        width: 1280,
        height: 720,
        aspectRatio: '16:9',
        fps: 24,
        seed: '1',
        guidanceScale: 10,
        motionStrength: 30,
        cameraMotion: 'orbit',
      }),
    );

    // Act
    const call = buildVideoProviderRequest(req);

    // Assert
    expect(call).toEqual({
      model: 'provider/video-d3',
      input: {
        prompt: req.prompt,
        negative_prompt: 'text overlays',
        width: 1280,
        height: 720,
        aspect_ratio: '16:9',
        duration: 8,
        resolution: '720p',
        fps: 24,
        seed: '1',
        guidance_scale: 10,
        motion_strength: 30,
        camera_motion: 'orbit',
        image_url: urls(3)[0],
      },
    });
  });

  test.each(VIDEO_MODEL_IDS)('%s: uses its mock profile name and its default duration', (id) => {
    // Prepare
    const req = validateVideoRequest(videoBody(id));

    // Act
    const call = buildVideoProviderRequest(req);

    // Assert
    expect(call.model).toBe(`provider/${id}`);
    expect(call.input.duration).toBe(videoModel(id).defaultDuration);
    expect('image_url' in call.input).toBe(videoModel(id).inputModes[0] === 'image_to_video');
  });

  test('providerInput picks the resolution, mock controls pass through, the billed duration stays', () => {
    // Prepare
    const req = validateVideoRequest(
      videoBody('video-f/1.5-pro', {
        duration: 5,
        providerInput: { duration: 5, resolution: '1080P', camera_fixed: true, mockOutcome: 'fail', mockDelayMs: 0 },
      }),
    );

    // Act
    const call = buildVideoProviderRequest(req);

    // Assert
    expect(call.input).toMatchObject({
      duration: 5,
      resolution: '1080p',
      camera_fixed: true,
      mockOutcome: 'fail',
      mockDelayMs: 0,
    });
  });
});
