import { IMAGE_MODEL_IDS, VIDEO_MODEL_IDS, type VideoModelId, videoModel } from '../../functions/core/catalog';
import { PROVIDER_INPUT_MAX_BYTES, PROVIDER_INPUT_MAX_DEPTH } from '../../functions/core/validation';
import { IMAGE_URL, imageBody, rejectionOf, urls, videoBody } from './core-fixtures';
import { validateImageRequest, validateVideoRequest } from './mock-profile-rules';

describe('validateImageRequest: the schema', () => {
  test.each(IMAGE_MODEL_IDS)('accepts the smallest body for %s', (model) => {
    // Prepare
    const body = imageBody(model);

    // Act
    const req = validateImageRequest(body);

    // Assert
    expect(req).toEqual(body);
  });

  test('accepts a body using every field and keeps providerInput as sent', () => {
    // Prepare
    const body = imageBody('image-model-2', {
      negativePrompt: 'blurry',
      width: 2048,
      height: 1024,
      aspectRatio: '16:9',
      numOutputs: 2,
      seed: '18446744073709551615',
      guidanceScale: 7.5,
      numInferenceSteps: 30,
      inputImageUrls: [IMAGE_URL, 'http://plain.example.com/a.jpg'],
      providerInput: { mockOutcome: 'fail', nested: { deep: [1, null, 'x'] } },
    });

    // Act
    const req = validateImageRequest(body);

    // Assert
    expect(req).toEqual(body);
  });

  test.each([
    ['not an object: null', null],
    ['not an object: an array', [imageBody('image-model-1')]],
    ['not an object: a string', 'prompt'],
    ['not an object: a number', 42],
    ['not an object: a boolean', true],
    ['not an object: undefined', undefined],
  ])('%s is a form error', (_name, body) => {
    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details).toEqual({ fieldErrors: {}, formErrors: ['Request body must be a JSON object'] });
  });

  test('missing prompt and model are both reported as required', () => {
    // Act
    const details = rejectionOf(() => validateImageRequest({}));

    // Assert
    expect(details.fieldErrors).toEqual({ prompt: ['Required'], model: ['Required'] });
    expect(details.formErrors).toEqual([]);
  });

  test('every unknown top-level field is named, none inside providerInput', () => {
    // Prepare
    const body = JSON.parse(
      '{"prompt":"x","model":"image-model-1","quality":"hd","__proto__":{"admin":true},"providerInput":{"anything":1}}',
    );

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(Object.keys(details.fieldErrors).sort()).toEqual(['__proto__', 'quality']);
    expect(details.fieldErrors.quality).toEqual([
      'Unknown field "quality"; provider-specific options go inside providerInput',
    ]);
  });

  test.each([
    ['prompt', '', 'Must not be empty'],
    ['prompt', 'a'.repeat(20001), 'Must be at most 20000 characters'],
    ['prompt', 42, 'Must be a string'],
    ['model', 'image-model-5', 'Must be one of image-model-1, image-model-2, image-model-3, image-model-4'],
    ['model', 'video-d3', 'Must be one of image-model-1, image-model-2, image-model-3, image-model-4'],
    ['negativePrompt', 'n'.repeat(2001), 'Must be at most 2000 characters'],
    ['negativePrompt', null, 'Must be a string'],
    ['width', 63, 'Must be at least 64'],
    ['width', 4097, 'Must be at most 4096'],
    ['width', 512.5, 'Must be an integer'],
    ['width', '512', 'Must be a number'],
    ['height', 63, 'Must be at least 64'],
    ['height', 4097, 'Must be at most 4096'],
    ['height', 100.1, 'Must be an integer'],
    ['numOutputs', 0, 'Must be at least 1'],
    ['numOutputs', 11, 'Must be at most 10'],
    ['numOutputs', 1.5, 'Must be an integer'],
    ['numInferenceSteps', 0, 'Must be at least 1'],
    ['numInferenceSteps', 151, 'Must be at most 150'],
    ['numInferenceSteps', 20.5, 'Must be an integer'],
    ['guidanceScale', -0.1, 'Must be at least 0'],
    ['guidanceScale', 100.1, 'Must be at most 100'],
    ['guidanceScale', Number.POSITIVE_INFINITY, 'Must be at most 100'],
    ['guidanceScale', '7', 'Must be a number'],
    ['seed', 42, 'Must be a string'],
    ['aspectRatio', 16, 'Must be a string'],
    ['inputImageUrls', IMAGE_URL, 'Must be an array'],
    ['inputImageUrls', [], 'Must contain at least 1 URL when present'],
    ['inputImageUrls', urls(15), 'Must contain at most 14 URLs'],
    ['providerInput', [], 'Must be a JSON object'],
    ['providerInput', null, 'Must be a JSON object'],
    ['providerInput', 'mockOutcome=fail', 'Must be a JSON object'],
  ])('rejects %s = %j with "%s"', (field, value, message) => {
    // Prepare
    const body = imageBody('image-model-2', { [field]: value });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors[field]).toContain(message);
  });

  test.each([
    ['prompt', 'a'],
    ['negativePrompt', ''],
    ['negativePrompt', 'n'.repeat(2000)],
    ['width', 64],
    ['width', 4096],
    ['height', 64],
    ['height', 4096],
    ['numOutputs', 1],
    ['numOutputs', 10],
    ['numInferenceSteps', 1],
    ['numInferenceSteps', 150],
    ['guidanceScale', 0],
    ['guidanceScale', 100],
    ['guidanceScale', 3.25],
    ['seed', '99999999999999999999999999'],
    ['seed', ''],
    ['providerInput', {}],
  ])('accepts the edge %s = %j', (field, value) => {
    // Prepare
    const body = imageBody('image-model-2', { [field]: value });

    // Act
    const req = validateImageRequest(body);

    // Assert
    expect(req).toHaveProperty(field, value);
  });

  test.each([
    ['ftp://files.example.com/a.png'],
    ['not a url'],
    ['/relative/path.png'],
    ['javascript:alert(1)'],
    ['data:image/png;base64,iVBORw0KGgo='],
  ])('rejects the reference URL %j at its index', (bad) => {
    // Prepare
    const body = imageBody('image-model-2', { inputImageUrls: [IMAGE_URL, IMAGE_URL, IMAGE_URL, bad] });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors).toEqual({
      'inputImageUrls.3': ['Must be an http or https URL, or upload://<uploadId>'],
    });
  });

  test('rejects a non-string reference URL at its index', () => {
    // Prepare
    const body = imageBody('image-model-2', { inputImageUrls: [IMAGE_URL, 7] });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors['inputImageUrls.1']).toEqual(['Must be a string']);
  });

  test('reports several problems at once', () => {
    // Prepare
    const body = imageBody('image-model-4', { prompt: 'p'.repeat(5001), width: 10, aspectRatio: 'auto', extra: 1 });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(Object.keys(details.fieldErrors).sort()).toEqual(['aspectRatio', 'extra', 'prompt', 'width']);
  });
});

describe('validateImageRequest: per-model rules', () => {
  test.each([
    ['image-model-1', 20000],
    ['image-model-2', 20000],
    ['image-model-3', 10000],
    ['image-model-4', 5000],
  ])('%s accepts a %i-character prompt', (model, cap) => {
    // Prepare
    const body = imageBody(model, { prompt: 'p'.repeat(cap) });

    // Act
    const req = validateImageRequest(body);

    // Assert
    expect(req.prompt).toHaveLength(cap);
  });

  test.each([
    ['image-model-1', 20000, 'Must be at most 20000 characters'],
    ['image-model-2', 20000, 'Must be at most 20000 characters'],
    ['image-model-3', 10000, 'Must be at most 10000 characters for image-model-3'],
    ['image-model-4', 5000, 'Must be at most 5000 characters for image-model-4'],
  ])('%s rejects a prompt of %i + 1 characters', (model, cap, message) => {
    // Prepare
    const body = imageBody(model, { prompt: 'p'.repeat(cap + 1) });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors).toEqual({ prompt: [message] });
  });

  test('prompt length counts characters, not UTF-16 units', () => {
    // Prepare
    const body = imageBody('image-model-4', { prompt: '🦊'.repeat(5000) });

    // Act
    const req = validateImageRequest(body);

    // Assert
    expect(req.prompt).toBe(body.prompt);
  });

  test.each([
    ['image-model-1', 4],
    ['image-model-2', 14],
    ['image-model-3', 8],
    ['image-model-4', 10],
  ])('%s accepts %i reference images', (model, cap) => {
    // Prepare
    const body = imageBody(model, { inputImageUrls: urls(cap) });

    // Act
    const req = validateImageRequest(body);

    // Assert
    expect(req.inputImageUrls).toHaveLength(cap);
  });

  test.each([
    ['image-model-1', 4],
    ['image-model-3', 8],
    ['image-model-4', 10],
  ])('%s rejects %i + 1 reference images', (model, cap) => {
    // Prepare
    const body = imageBody(model, { inputImageUrls: urls(cap + 1) });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors).toEqual({ inputImageUrls: [`Must contain at most ${cap} URLs for ${model}`] });
  });

  test('image-model-2 rejects 15 reference images by the schema cap', () => {
    // Prepare
    const body = imageBody('image-model-2', { inputImageUrls: urls(15) });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors).toEqual({ inputImageUrls: ['Must contain at most 14 URLs'] });
  });

  test.each([
    ...['auto', '1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '4:5', '5:4', '21:9'].map((r) => [
      'image-model-1',
      r,
    ]),
    ...['auto', '1:1', '2:3', '3:2', '3:4', '4:3', '4:5', '5:4', '9:16', '16:9', '21:9'].map((r) => [
      'image-model-2',
      r,
    ]),
    ...['1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3', '21:9'].map((r) => ['image-model-3', r]),
    ...['1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3'].map((r) => ['image-model-4', r]),
  ])('%s accepts aspect ratio %s', (model, aspectRatio) => {
    // Prepare
    const body = imageBody(model, { aspectRatio });

    // Act
    const req = validateImageRequest(body);

    // Assert
    expect(req.aspectRatio).toBe(aspectRatio);
  });

  test.each([
    ['image-model-1', '1:2'],
    ['image-model-1', 'AUTO'],
    ['image-model-2', '2:1'],
    ['image-model-3', 'auto'],
    ['image-model-3', '4:5'],
    ['image-model-4', '21:9'],
    ['image-model-4', 'auto'],
  ])('%s rejects aspect ratio %s and lists the allowed ones', (model, aspectRatio) => {
    // Prepare
    const body = imageBody(model, { aspectRatio });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors.aspectRatio).toEqual([
      expect.stringMatching(new RegExp(`^Must be one of .* for ${model}$`)),
    ]);
  });
});

describe('validateVideoRequest: the schema', () => {
  test.each(VIDEO_MODEL_IDS)('accepts the smallest body for %s', (model) => {
    // Prepare
    const body = videoBody(model);

    // Act
    const req = validateVideoRequest(body);

    // Assert
    expect(req).toEqual(body);
  });

  test('accepts a body using every field', () => {
    // Prepare
    const body = videoBody('video-f/1.5-pro', {
      inputMode: 'image_to_video',
      negativePrompt: 'shaky',
      width: 1920,
      height: 1080,
      aspectRatio: '16:9',
      duration: 10,
      fps: 24,
      seed: '7',
      guidanceScale: 50,
      motionStrength: 12.5,
      cameraMotion: 'pan-left',
      inputImageUrls: [IMAGE_URL],
      providerInput: { mockOutcome: 'success', mockDelayMs: 10 },
    });

    // Act
    const req = validateVideoRequest(body);

    // Assert
    expect(req).toEqual(body);
  });

  test('a body that is not an object is a form error', () => {
    // Act
    const details = rejectionOf(() => validateVideoRequest([]));

    // Assert
    expect(details.formErrors).toEqual(['Request body must be a JSON object']);
  });

  test('missing prompt, model and inputMode are required', () => {
    // Act
    const details = rejectionOf(() => validateVideoRequest({}));

    // Assert
    expect(details.fieldErrors).toEqual({ prompt: ['Required'], model: ['Required'], inputMode: ['Required'] });
  });

  test('image-only fields are unknown on the video endpoint', () => {
    // Prepare
    const body = videoBody('video-f/1.5-pro', { numOutputs: 2, numInferenceSteps: 20 });

    // Act
    const details = rejectionOf(() => validateVideoRequest(body));

    // Assert
    expect(Object.keys(details.fieldErrors).sort()).toEqual(['numInferenceSteps', 'numOutputs']);
  });

  test.each([
    ['prompt', '', 'Must not be empty'],
    ['prompt', 'p'.repeat(4001), 'Must be at most 4000 characters'],
    ['model', 'image-model-1', expect.stringMatching(/^Must be one of video-a\/v2-1-standard, /)],
    ['inputMode', 'video_to_video', 'Must be one of text_to_video, image_to_video'],
    ['negativePrompt', 'n'.repeat(2001), 'Must be at most 2000 characters'],
    ['width', 63, 'Must be at least 64'],
    ['width', 4097, 'Must be at most 4096'],
    ['height', 720.5, 'Must be an integer'],
    ['duration', 0.5, 'Must be at least 1'],
    ['duration', 61, 'Must be at most 60'],
    ['duration', '5', 'Must be a number'],
    ['fps', 0, 'Must be at least 1'],
    ['fps', 61, 'Must be at most 60'],
    ['fps', 23.976, 'Must be an integer'],
    ['guidanceScale', -1, 'Must be at least 0'],
    ['guidanceScale', 101, 'Must be at most 100'],
    ['motionStrength', -0.5, 'Must be at least 0'],
    ['motionStrength', 100.5, 'Must be at most 100'],
    ['seed', 1, 'Must be a string'],
    ['cameraMotion', { pan: 1 }, 'Must be a string'],
    ['providerInput', [1], 'Must be a JSON object'],
  ])('rejects %s = %j', (field, value, message) => {
    // Prepare
    const body = videoBody('video-f/1.5-pro', { [field]: value });

    // Act
    const details = rejectionOf(() => validateVideoRequest(body));

    // Assert
    expect(details.fieldErrors[field]).toContainEqual(message);
  });

  test.each([
    ['prompt', 'p'.repeat(4000)],
    ['negativePrompt', 'n'.repeat(2000)],
    ['width', 64],
    ['width', 4096],
    ['height', 64],
    ['height', 4096],
    ['fps', 1],
    ['fps', 60],
    ['guidanceScale', 0],
    ['guidanceScale', 100],
    ['motionStrength', 0],
    ['motionStrength', 100],
    ['cameraMotion', 'zoom-in'],
  ])('accepts the edge %s = %j', (field, value) => {
    // Prepare
    const body = videoBody('video-f/1.5-pro', { [field]: value });

    // Act
    const req = validateVideoRequest(body);

    // Assert
    expect(req).toHaveProperty(field, value);
  });

  test('rejects 6 reference images by the schema cap and a bad URL at its index', () => {
    // Prepare
    const tooMany = videoBody('video-d3', { inputMode: 'image_to_video', inputImageUrls: urls(6) });
    const badUrl = videoBody('video-d3', { inputMode: 'image_to_video', inputImageUrls: [IMAGE_URL, 'file:///etc/x'] });

    // Act
    const tooManyDetails = rejectionOf(() => validateVideoRequest(tooMany));
    const badUrlDetails = rejectionOf(() => validateVideoRequest(badUrl));

    // Assert
    expect(tooManyDetails.fieldErrors).toEqual({ inputImageUrls: ['Must contain at most 5 URLs'] });
    expect(badUrlDetails.fieldErrors).toEqual({
      'inputImageUrls.1': ['Must be an http or https URL, or upload://<uploadId>'],
    });
  });
});

describe('validateVideoRequest: input modes (rules 1-4)', () => {
  const modeTable: [VideoModelId, boolean, boolean][] = [
    ['video-a/v2-1-standard', false, true],
    ['video-a/v2-1-pro', false, true],
    ['video-a/v2-1-master-text-to-video', true, false],
    ['video-b-2-text-to-video', true, false],
    ['video-b-2-pro-text-to-video', true, false],
    ['video-b-2-image-to-video', false, true],
    ['video-c/02-text-to-video-standard', true, false],
    ['video-c/02-text-to-video-pro', true, false],
    ['video-c/02-image-to-video-standard', false, true],
    ['video-c/02-image-to-video-pro', false, true],
    ['video-d3_fast', true, true],
    ['video-d3', true, true],
    ['video-d3_lite', true, true],
    ['video-e/2-6-text-to-video', true, false],
    ['video-e/2-6-image-to-video', false, true],
    ['video-f/1.5-pro', true, true],
  ];

  test('the table covers all sixteen video models', () => {
    // Act
    const ids = modeTable.map(([id]) => id);

    // Assert
    expect(ids).toEqual([...VIDEO_MODEL_IDS]);
  });

  test.each(modeTable)('%s: text_to_video accepted = %s', (model, textOk) => {
    // Prepare
    const body = { prompt: 'waves', model, inputMode: 'text_to_video' };

    // Act
    const act = () => validateVideoRequest(body);

    // Assert
    if (textOk) {
      expect(act()).toEqual(body);
    } else {
      expect(rejectionOf(act).fieldErrors).toEqual({ inputMode: [`Must be image_to_video for ${model}`] });
    }
  });

  test.each(modeTable)('%s: image_to_video with one image accepted = %s', (model, _textOk, imageOk) => {
    // Prepare
    const body = { prompt: 'waves', model, inputMode: 'image_to_video', inputImageUrls: [IMAGE_URL] };

    // Act
    const act = () => validateVideoRequest(body);

    // Assert
    if (imageOk) {
      expect(act()).toEqual(body);
    } else {
      expect(rejectionOf(act).fieldErrors).toEqual({ inputMode: [`Must be text_to_video for ${model}`] });
    }
  });

  test.each(modeTable.filter(([, , imageOk]) => imageOk).map(([id]) => id))(
    '%s: image_to_video without an image is rejected at inputImageUrls',
    (model) => {
      // Prepare
      const body = { prompt: 'waves', model, inputMode: 'image_to_video' };

      // Act
      const details = rejectionOf(() => validateVideoRequest(body));

      // Assert
      expect(details.fieldErrors).toEqual({
        inputImageUrls: ['Required when inputMode is image_to_video: at least 1 image URL'],
      });
    },
  );

  test.each(['video-d3', 'video-f/1.5-pro', 'video-b-2-text-to-video'] as const)(
    '%s: text_to_video with images is rejected at inputImageUrls',
    (model) => {
      // Prepare
      const body = { prompt: 'waves', model, inputMode: 'text_to_video', inputImageUrls: [IMAGE_URL] };

      // Act
      const details = rejectionOf(() => validateVideoRequest(body));

      // Assert
      expect(details.fieldErrors).toEqual({ inputImageUrls: ['Must be omitted when inputMode is text_to_video'] });
    },
  );

  test.each(
    VIDEO_MODEL_IDS.filter((id) => videoModel(id).inputModes.includes('image_to_video')).map(
      (id) => [id, videoModel(id).maxReferenceImages] as const,
    ),
  )('%s accepts %i reference images and rejects one more', (model, cap) => {
    // Prepare
    const atCap = { prompt: 'waves', model, inputMode: 'image_to_video', inputImageUrls: urls(cap) };
    const overCap = { ...atCap, inputImageUrls: urls(cap + 1) };

    // Act
    const accepted = validateVideoRequest(atCap);
    const details = rejectionOf(() => validateVideoRequest(overCap));

    // Assert
    expect(accepted.inputImageUrls).toHaveLength(cap);
    expect(details.fieldErrors).toEqual({
      inputImageUrls: [`Must contain at most ${cap} URL${cap === 1 ? '' : 's'} for ${model}`],
    });
  });
});

describe('validateVideoRequest: durations and aspect ratios per model', () => {
  test.each(VIDEO_MODEL_IDS.flatMap((id) => videoModel(id).durations.map((d) => [id, d] as const)))(
    '%s accepts %i seconds',
    (model, duration) => {
      // Prepare
      const body = videoBody(model, { duration });

      // Act
      const req = validateVideoRequest(body);

      // Assert
      expect(req.duration).toBe(duration);
    },
  );

  test.each<[VideoModelId, number, string]>([
    ['video-a/v2-1-standard', 6, 'Must be one of 5, 10 (seconds) for video-a/v2-1-standard'],
    ['video-a/v2-1-pro', 15, 'Must be one of 5, 10 (seconds) for video-a/v2-1-pro'],
    ['video-a/v2-1-master-text-to-video', 5.5, 'Must be one of 5, 10 (seconds) for video-a/v2-1-master-text-to-video'],
    ['video-b-2-text-to-video', 6, 'Must be one of 5, 10 (seconds) for video-b-2-text-to-video'],
    ['video-b-2-pro-text-to-video', 20, 'Must be one of 5, 10 (seconds) for video-b-2-pro-text-to-video'],
    ['video-b-2-image-to-video', 4, 'Must be one of 5, 10 (seconds) for video-b-2-image-to-video'],
    ['video-c/02-text-to-video-standard', 5, 'Must be one of 6, 10 (seconds) for video-c/02-text-to-video-standard'],
    ['video-c/02-text-to-video-pro', 7, 'Must be one of 6, 10 (seconds) for video-c/02-text-to-video-pro'],
    ['video-c/02-image-to-video-standard', 11, 'Must be one of 6, 10 (seconds) for video-c/02-image-to-video-standard'],
    ['video-c/02-image-to-video-pro', 5, 'Must be one of 6, 10 (seconds) for video-c/02-image-to-video-pro'],
    ['video-d3_fast', 7, 'Must be 8 (seconds) for video-d3_fast'],
    ['video-d3', 9, 'Must be 8 (seconds) for video-d3'],
    ['video-d3_lite', 5, 'Must be 8 (seconds) for video-d3_lite'],
    ['video-e/2-6-text-to-video', 15, 'Must be one of 5, 10 (seconds) for video-e/2-6-text-to-video'],
    ['video-e/2-6-image-to-video', 6, 'Must be one of 5, 10 (seconds) for video-e/2-6-image-to-video'],
    ['video-f/1.5-pro', 11, 'Must be one of 5, 10 (seconds) for video-f/1.5-pro'],
  ])('%s rejects %d seconds', (model, duration, message) => {
    // Prepare
    const body = videoBody(model, { duration });

    // Act
    const details = rejectionOf(() => validateVideoRequest(body));

    // Assert
    expect(details.fieldErrors).toEqual({ duration: [message] });
  });

  test.each(VIDEO_MODEL_IDS.flatMap((id) => videoModel(id).aspectRatios.map((r) => [id, r] as const)))(
    '%s accepts aspect ratio %s',
    (model, aspectRatio) => {
      // Prepare
      const body = videoBody(model, { aspectRatio });

      // Act
      const req = validateVideoRequest(body);

      // Assert
      expect(req.aspectRatio).toBe(aspectRatio);
    },
  );

  test.each<[VideoModelId, string]>([
    ['video-a/v2-1-pro', '4:3'],
    ['video-b-2-text-to-video', '21:9'],
    ['video-c/02-image-to-video-pro', '4:3'],
    ['video-d3', '1:1'],
    ['video-e/2-6-text-to-video', 'auto'],
    ['video-f/1.5-pro', '2:1'],
  ])('%s rejects aspect ratio %s', (model, aspectRatio) => {
    // Prepare
    const body = videoBody(model, { aspectRatio });

    // Act
    const details = rejectionOf(() => validateVideoRequest(body));

    // Assert
    expect(details.fieldErrors.aspectRatio).toEqual([expect.stringMatching(/^Must be one of .* for /)]);
  });
});

describe('bounds that keep a task storable as one DynamoDB item', () => {
  const nested = (depth: number): Record<string, unknown> => {
    let value: Record<string, unknown> = { leaf: true };
    for (let i = 1; i < depth; i++) value = { next: value };
    return value;
  };

  test.each([
    ['image', (extra: Record<string, unknown>) => validateImageRequest(imageBody('image-model-1', extra))],
    ['video', (extra: Record<string, unknown>) => validateVideoRequest(videoBody('video-d3', extra))],
  ])('%s: providerInput 16 levels deep and 32 KB are accepted, 17 levels and 32 KB + 1 are not', (_kind, validate) => {
    // Prepare
    const deepest = nested(PROVIDER_INPUT_MAX_DEPTH);
    const tooDeep = nested(PROVIDER_INPUT_MAX_DEPTH + 1);
    const padding = (bytes: number) => ({ pad: 'x'.repeat(bytes - JSON.stringify({ pad: '' }).length) });

    // Act
    const accepted = [
      validate({ providerInput: deepest }),
      validate({ providerInput: padding(PROVIDER_INPUT_MAX_BYTES) }),
    ];
    const depthError = rejectionOf(() => validate({ providerInput: tooDeep }));
    const sizeError = rejectionOf(() => validate({ providerInput: padding(PROVIDER_INPUT_MAX_BYTES + 1) }));

    // Assert
    expect(accepted).toHaveLength(2);
    expect(depthError.fieldErrors.providerInput).toEqual(['Must be nested at most 16 levels deep']);
    expect(sizeError.fieldErrors.providerInput).toEqual(['Must be at most 32 KB as JSON']);
  });

  test('a providerInput nested thousands of levels deep is a ValidationError, not a crash', () => {
    // Prepare
    const body = imageBody('image-model-1', { providerInput: nested(5000) });

    // Act
    const details = rejectionOf(() => validateImageRequest(body));

    // Assert
    expect(details.fieldErrors.providerInput).toEqual(['Must be nested at most 16 levels deep']);
  });

  test('URLs up to 2048 characters, seed and cameraMotion up to 256', () => {
    // Prepare
    const longUrl = `https://images.example.com/${'a'.repeat(2048 - 'https://images.example.com/'.length)}`;

    // Act
    const accepted = validateImageRequest(
      imageBody('image-model-1', { inputImageUrls: [longUrl], seed: '9'.repeat(256) }),
    );
    const urlError = rejectionOf(() =>
      validateImageRequest(imageBody('image-model-1', { inputImageUrls: [`${longUrl}b`] })),
    );
    const seedError = rejectionOf(() => validateImageRequest(imageBody('image-model-1', { seed: '9'.repeat(257) })));
    const motionError = rejectionOf(() =>
      validateVideoRequest(videoBody('video-d3', { cameraMotion: 'p'.repeat(257) })),
    );

    // Assert
    expect(accepted.inputImageUrls).toEqual([longUrl]);
    expect(urlError.fieldErrors['inputImageUrls.0']).toEqual(['Must be at most 2048 characters']);
    expect(seedError.fieldErrors.seed).toEqual(['Must be at most 256 characters']);
    expect(motionError.fieldErrors.cameraMotion).toEqual(['Must be at most 256 characters']);
  });
});
