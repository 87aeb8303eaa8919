import {
  IMAGE_MODEL_IDS,
  IMAGE_MODELS,
  IMAGE_TIERS,
  imageModel,
  imageUnitPrice,
  MODELS,
  priceTableMarkdown,
  VIDEO_MODEL_IDS,
  VIDEO_MODELS,
  type VideoModelId,
  videoModel,
  videoPrice,
} from '../../functions/core/catalog';

describe('catalog: the models of the spec', () => {
  test('lists exactly the four image models and the sixteen video models of the spec', () => {
    // Prepare
    const specImageIds = ['image-model-1', 'image-model-2', 'image-model-3', 'image-model-4'];
    const specVideoIds = [
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
    ];

    // Act
    const ids = MODELS.map((m) => m.id);

    // Assert
    expect(IMAGE_MODELS.map((m) => m.id)).toEqual(specImageIds);
    expect(VIDEO_MODELS.map((m) => m.id)).toEqual(specVideoIds);
    expect([...IMAGE_MODEL_IDS]).toEqual(specImageIds);
    expect([...VIDEO_MODEL_IDS]).toEqual(specVideoIds);
    expect(new Set(ids).size).toBe(20);
  });

  test.each([
    ['image-model-1', 4, 20000],
    ['image-model-2', 14, 20000],
    ['image-model-3', 8, 10000],
    ['image-model-4', 10, 5000],
  ] as const)('%s takes up to %i reference images and %i prompt characters', (id, refs, prompt) => {
    // Act
    const model = imageModel(id);

    // Assert
    expect(model.type).toBe('image');
    expect(model.maxReferenceImages).toBe(refs);
    expect(model.maxPromptLength).toBe(prompt);
    expect(model.inputModes).toEqual(['text_to_image', 'image_to_image']);
  });

  test.each([
    ['image-model-1', { '1K': 3, '2K': 3, '4K': 3 }],
    ['image-model-2', { '1K': 4, '2K': 6, '4K': 8 }],
    ['image-model-3', { '1K': undefined, '2K': 12, '4K': 20 }],
    ['image-model-4', { '1K': 3, '2K': 3, '4K': 3 }],
  ] as const)('%s costs the spec price per tier', (id, prices) => {
    // Prepare
    const model = imageModel(id);

    // Act
    const actual = Object.fromEntries(IMAGE_TIERS.map((tier) => [tier, imageUnitPrice(model, tier)]));

    // Assert
    expect(actual).toEqual(prices);
  });

  test('image-model-1 allows exactly the spec aspect ratios and has an edit model name', () => {
    // Act
    const model = imageModel('image-model-1');

    // Assert
    expect(model.aspectRatios).toEqual([
      'auto',
      '1:1',
      '16:9',
      '9:16',
      '4:3',
      '3:4',
      '3:2',
      '2:3',
      '4:5',
      '5:4',
      '21:9',
    ]);
  });

  test.each(VIDEO_MODEL_IDS.map((id) => [id, id.startsWith('video-d3') ? 3 : 1] as const))(
    '%s takes up to %i reference images and 4000 prompt characters',
    (id, refs) => {
      // Act
      const model = videoModel(id);

      // Assert
      expect(model.type).toBe('video');
      expect(model.maxReferenceImages).toBe(refs);
      expect(model.maxPromptLength).toBe(4000);
    },
  );

  test.each<[VideoModelId, string, string[]]>([
    ['video-a/v2-1-standard', 'A', ['image_to_video']],
    ['video-a/v2-1-pro', 'A', ['image_to_video']],
    ['video-a/v2-1-master-text-to-video', 'A', ['text_to_video']],
    ['video-b-2-text-to-video', 'B', ['text_to_video']],
    ['video-b-2-pro-text-to-video', 'B', ['text_to_video']],
    ['video-b-2-image-to-video', 'B', ['image_to_video']],
    ['video-c/02-text-to-video-standard', 'C', ['text_to_video']],
    ['video-c/02-text-to-video-pro', 'C', ['text_to_video']],
    ['video-c/02-image-to-video-standard', 'C', ['image_to_video']],
    ['video-c/02-image-to-video-pro', 'C', ['image_to_video']],
    ['video-d3_fast', 'D', ['text_to_video', 'image_to_video']],
    ['video-d3', 'D', ['text_to_video', 'image_to_video']],
    ['video-d3_lite', 'D', ['text_to_video', 'image_to_video']],
    ['video-e/2-6-text-to-video', 'E', ['text_to_video']],
    ['video-e/2-6-image-to-video', 'E', ['image_to_video']],
    ['video-f/1.5-pro', 'F', ['text_to_video', 'image_to_video']],
  ])('%s is family %s with input modes %j', (id, family, modes) => {
    // Act
    const model = videoModel(id);

    // Assert
    expect(model.family).toBe(family);
    expect(model.inputModes).toEqual(modes);
  });

  test.each([
    ['A', [5, 10]],
    ['B', [5, 10]],
    ['C', [6, 10]],
    ['D', [8]],
    ['E', [5, 10]],
    ['F', [5, 10]],
  ])('family %s offers durations %j, the shortest by default', (family, durations) => {
    // Act
    const models = VIDEO_MODELS.filter((m) => m.family === family);

    // Assert
    expect(models.length).toBeGreaterThan(0);
    for (const model of models) {
      expect(model.durations).toEqual(durations);
      expect(model.defaultDuration).toBe(durations[0]);
    }
  });

  test.each(VIDEO_MODEL_IDS)('%s has exactly one positive price per duration x resolution', (id) => {
    // Prepare
    const model = videoModel(id);

    // Act
    const combos = model.durations.flatMap((d) => model.resolutions.map((r) => `${d}@${r}`));
    const priced = model.prices.map((p) => `${p.duration}@${p.resolution}`);

    // Assert
    expect(priced.sort()).toEqual(combos.sort());
    for (const price of model.prices) expect(price.credits).toBeGreaterThan(0);
  });

  test('family D is flat-rate: one price per model whatever the resolution', () => {
    // Act
    const prices = VIDEO_MODELS.filter((m) => m.family === 'D').map((m) => new Set(m.prices.map((p) => p.credits)));

    // Assert
    expect(prices).toHaveLength(3);
    for (const set of prices) expect(set.size).toBe(1);
  });

  test.each([
    ['video-b-2-text-to-video', 5, '480p', 10, '1080p', 80],
    ['video-e/2-6-image-to-video', 5, '720p', 30, '1080p', 90],
    ['video-f/1.5-pro', 5, '480p', 12, '1080p', 100],
  ] as const)('%s price grows with duration and resolution', (id, d, lowRes, low, highRes, high) => {
    // Prepare
    const model = videoModel(id);

    // Act
    const cheapest = videoPrice(model, d, lowRes);
    const dearest = videoPrice(model, 10, highRes);

    // Assert
    expect(cheapest).toBe(low);
    expect(dearest).toBe(high);
  });

  test('family C pro costs more than standard at every duration', () => {
    // Prepare
    const standard = videoModel('video-c/02-text-to-video-standard');
    const pro = videoModel('video-c/02-text-to-video-pro');

    // Act
    const pairs = [6, 10].map((d) => [videoPrice(standard, d, '720p'), videoPrice(pro, d, '1080p')]);

    // Assert
    expect(pairs).toEqual([
      [15, 30],
      [25, 50],
    ]);
  });

  test('every model has a non-empty aspect ratio list', () => {
    // Act
    const empty = MODELS.filter((m) => m.aspectRatios.length === 0);

    // Assert
    expect(empty).toEqual([]);
  });

  test('the price table names every model', () => {
    // Act
    const markdown = priceTableMarkdown();

    // Assert
    for (const model of MODELS) expect(markdown).toContain(`| ${model.id} |`);
    expect(markdown.startsWith('\n')).toBe(false);
    expect(markdown.endsWith('\n')).toBe(false);
  });

  test('unknown ids are refused by the lookups', () => {
    // Act
    const image = () => imageModel('image-model-9' as never);
    const video = () => videoModel('video-z' as never);

    // Assert
    expect(image).toThrow(RangeError);
    expect(video).toThrow(RangeError);
  });
});
