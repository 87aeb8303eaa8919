import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MODELS } from '../../functions/core/catalog';
import {
  KIE_PROFILE,
  MOCK_PROFILE,
  ProfileError,
  profileFromJson,
  profileProblems,
  SHIPPED_PROFILES,
  shippedProfile,
  validateProfile,
} from '../../functions/core/profiles';
import { providerProfileFromEnv } from '../../functions/runtime/provider-profile-from-env';
import { IMAGE_URL, imageBody, rejectionOf, urls, videoBody } from './core-fixtures';
import {
  buildImageProviderRequest,
  buildVideoProviderRequest,
  validateImageRequest,
  validateVideoRequest,
} from './mock-profile-rules';

/** A deep copy of the kie profile to break. */
const kieCopy = (): Record<string, unknown> & { models: Record<string, Record<string, unknown>> } =>
  JSON.parse(JSON.stringify(KIE_PROFILE));

describe('shipped profiles', () => {
  test.each(Object.keys(SHIPPED_PROFILES))(
    '%s maps every catalog model and nothing else, without a problem',
    (name) => {
      // Act
      const problems = profileProblems(SHIPPED_PROFILES[name]);

      // Assert
      expect(problems).toEqual([]);
      expect(Object.keys(SHIPPED_PROFILES[name]?.models ?? {}).sort()).toEqual(MODELS.map((m) => m.id).sort());
    },
  );

  test('the kie profile file names its documentation pages, the date read, and flags the stand-ins', () => {
    // Prepare
    const file = readFileSync(join(__dirname, '../../functions/core/profiles/kie.ts'), 'utf8');

    // Act
    const families = new Set(Object.values(KIE_PROFILE.models).map((m) => m.model.split('/')[0] ?? ''));

    // Assert
    expect(file).toContain('read on 2026-11-23');
    for (const family of families) {
      if (family !== 'nano-banana-pro') expect(file).toContain(`docs.kie.ai/market/${family}`);
    }
    expect(file).toMatch(/FLAGGED, family D: Veo 3\.1[\s\S]*only at POST \/api\/v1\/veo\/generate/);
    expect(file).toMatch(/FLAGGED: the page read did not confirm[^\n]*\n\s*'video-f\/1\.5-pro'/);
  });

  test('an unknown profile name is refused with the names there are', () => {
    // Act
    const act = () => shippedProfile('acme');

    // Assert
    expect(act).toThrow(ProfileError);
    expect(act).toThrow(/no shipped profile is called "acme"; use one of mock, kie/);
  });
});

describe('validateProfile names the model and the field', () => {
  test('a missing model, an unknown model and an unknown input field', () => {
    // Prepare
    const broken = kieCopy();
    delete broken.models['image-model-3'];
    broken.models['image-model-9'] = { model: 'x', input: { prompt: 'prompt' } };
    (broken.models['image-model-1']?.input as Record<string, unknown>).colour = 'colour';

    // Act
    const problems = profileProblems(broken);

    // Assert
    expect(problems).toEqual(
      expect.arrayContaining([
        'image-model-3: (mapping): missing; every model of the catalog needs one',
        'image-model-9: (mapping): not a model of the catalog',
        'image-model-1: input.colour: unknown field',
      ]),
    );
  });

  test('a billed quantity without its key, and a token map that misses a token', () => {
    // Prepare
    const broken = kieCopy();
    const video = broken.models['video-b-2-text-to-video']?.input as Record<string, unknown>;
    delete video.duration;
    const image = broken.models['image-model-3']?.input as { resolution: { values: Record<string, string> } };
    delete image.resolution.values['4K'];

    // Act
    const act = () => validateProfile(broken);

    // Assert
    expect(act).toThrow(ProfileError);
    expect(act).toThrow(/video-b-2-text-to-video: input\.duration: required: .* priced by duration \(5, 10 s\)/);
    expect(act).toThrow(/image-model-3: input\.resolution\.values: no provider token for "4K"/);
  });

  test('one key used for two fields, a duration format that is not one, defaults that shadow the request', () => {
    // Prepare
    const broken = kieCopy();
    const mapping = broken.models['video-e/2-6-text-to-video'] as Record<string, unknown> & {
      input: Record<string, unknown>;
    };
    mapping.input.negativePrompt = 'prompt';
    mapping.input.duration = { key: 'duration', format: 'seconds' };
    mapping.defaults = { resolution: '720p' };

    // Act
    const problems = profileProblems(broken);

    // Assert
    expect(problems).toEqual(
      expect.arrayContaining([
        'video-e/2-6-text-to-video: input.negativePrompt: key "prompt" is already used by input.prompt',
        'video-e/2-6-text-to-video: input.duration.format: must be "number" or "string"',
        'video-e/2-6-text-to-video: defaults.resolution: is set from the request (input.resolution)',
      ]),
    );
  });

  test('JSON that is not a profile is a ProfileError, never a TypeError', () => {
    // Act
    const notJson = () => profileFromJson('{', 'my-profile.json');
    const notObject = () => profileFromJson('[1]', 'my-profile.json');

    // Assert
    expect(notJson).toThrow(/Provider profile "my-profile.json" is invalid:\n {2}- \(profile\): not JSON/);
    expect(notObject).toThrow(ProfileError);
  });
});

describe('requests built with the kie profile', () => {
  test('image-model-1 goes to nano-banana, and with references to nano-banana-edit with a list', () => {
    // Prepare
    const text = validateImageRequest(imageBody('image-model-1', { aspectRatio: '16:9' }), KIE_PROFILE);
    const edit = validateImageRequest(imageBody('image-model-1', { inputImageUrls: urls(2) }), KIE_PROFILE);

    // Act
    const textCall = buildImageProviderRequest(text, KIE_PROFILE);
    const editCall = buildImageProviderRequest(edit, KIE_PROFILE);

    // Assert
    expect(textCall).toEqual({
      model: 'google/nano-banana',
      input: { prompt: text.prompt, image_size: '16:9' },
    });
    expect(editCall.model).toBe('google/nano-banana-edit');
    expect(editCall.input.image_urls).toEqual(urls(2));
  });

  test('image-model-3 sends the priced tier in the upstream spelling (4K is "high")', () => {
    // Prepare
    const req = validateImageRequest(imageBody('image-model-3', { width: 3000, height: 2000 }), KIE_PROFILE);

    // Act
    const call = buildImageProviderRequest(req, KIE_PROFILE);

    // Assert
    expect(call.model).toBe('seedream/4.5-text-to-image');
    expect(call.input).toEqual({ prompt: req.prompt, quality: 'high' });
  });

  test('image-model-4 translates aspect ratios and sends the output count under max_images', () => {
    // Prepare
    const req = validateImageRequest(
      imageBody('image-model-4', { aspectRatio: '9:16', numOutputs: 3, inputImageUrls: [IMAGE_URL] }),
      KIE_PROFILE,
    );

    // Act
    const call = buildImageProviderRequest(req, KIE_PROFILE);

    // Assert
    expect(call).toEqual({
      model: 'bytedance/seedream-v4-edit',
      input: { prompt: req.prompt, image_size: 'portrait_16_9', image_urls: [IMAGE_URL], max_images: 3 },
    });
  });

  test('a video duration travels as text where the upstream wants "5", and one image as one URL', () => {
    // Prepare
    const req = validateVideoRequest(
      videoBody('video-a/v2-1-standard', { duration: 10, negativePrompt: 'blur' }),
      KIE_PROFILE,
    );

    // Act
    const call = buildVideoProviderRequest(req, KIE_PROFILE);

    // Assert
    expect(call.model).toBe('kling/v2-1-standard');
    expect(call.input).toEqual({
      prompt: req.prompt,
      negative_prompt: 'blur',
      image_url: req.inputImageUrls?.[0],
      duration: '10',
    });
  });
});

describe('the price guard reads the profile', () => {
  test('numOutputs above 1 is refused where the upstream makes one image per task', () => {
    // Act
    const details = rejectionOf(() => validateImageRequest(imageBody('image-model-2', { numOutputs: 2 }), KIE_PROFILE));

    // Assert
    expect(details.fieldErrors).toEqual({
      numOutputs: ['Must be 1 for image-model-2: its provider (kie) makes one image per task'],
    });
  });

  test('the same request is fine on the mock profile, whose upstream takes an output count', () => {
    // Act
    const req = validateImageRequest(imageBody('image-model-2', { numOutputs: 2 }), MOCK_PROFILE);

    // Assert
    expect(req.numOutputs).toBe(2);
  });

  test('a key the profile bills (max_images) is refused in providerInput unless it repeats numOutputs', () => {
    // Act
    const details = rejectionOf(() =>
      validateImageRequest(
        imageBody('image-model-4', { numOutputs: 2, providerInput: { max_images: 6 } }),
        KIE_PROFILE,
      ),
    );
    const repeated = validateImageRequest(
      imageBody('image-model-4', { numOutputs: 2, providerInput: { max_images: 2 } }),
      KIE_PROFILE,
    );

    // Assert
    expect(details.fieldErrors['providerInput.max_images']).toEqual([
      'Billed by the service: the number of outputs is set by numOutputs; omit it or send exactly 2',
    ]);
    expect(repeated.providerInput).toEqual({ max_images: 2 });
  });

  test('a tier key the profile translates may repeat the priced tier, and is sent in the upstream spelling', () => {
    // Prepare
    const same = validateImageRequest(
      imageBody('image-model-3', { width: 3000, providerInput: { quality: '4K' } }),
      KIE_PROFILE,
    );

    // Act
    const call = buildImageProviderRequest(same, KIE_PROFILE);
    const details = rejectionOf(() =>
      validateImageRequest(imageBody('image-model-3', { width: 3000, providerInput: { quality: '2K' } }), KIE_PROFILE),
    );

    // Assert
    expect(call.input.quality).toBe('high');
    expect(details.fieldErrors['providerInput.quality']).toEqual([
      'Billed by the service: the resolution is priced from providerInput.resolution or width/height; omit it or send exactly "4K"',
    ]);
  });

  test('a key the profile uses for something unbilled (nano-banana image_size, an aspect ratio) is not refused', () => {
    // Act
    const req = validateImageRequest(imageBody('image-model-1', { providerInput: { image_size: '4:3' } }), KIE_PROFILE);

    // Assert
    expect(req.providerInput).toEqual({ image_size: '4:3' });
  });
});

describe('providerProfileFromEnv', () => {
  const saved = { name: process.env.PROVIDER_PROFILE, json: process.env.PROVIDER_PROFILE_JSON };

  afterEach(() => {
    for (const [key, value] of [
      ['PROVIDER_PROFILE', saved.name],
      ['PROVIDER_PROFILE_JSON', saved.json],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  test('PROVIDER_PROFILE names a shipped profile; unset is the mock', () => {
    // Act
    process.env.PROVIDER_PROFILE = 'kie';
    const kie = providerProfileFromEnv();
    delete process.env.PROVIDER_PROFILE;
    const fallback = providerProfileFromEnv();

    // Assert
    expect(kie).toBe(KIE_PROFILE);
    expect(fallback).toBe(MOCK_PROFILE);
  });

  test('an unknown name stops the function with a message saying what it takes', () => {
    // Prepare
    process.env.PROVIDER_PROFILE = 'acme';

    // Act
    const act = () => providerProfileFromEnv();

    // Assert
    expect(act).toThrow(/PROVIDER_PROFILE "acme" names no shipped profile \(mock, kie\)/);
  });

  test('PROVIDER_PROFILE_JSON wins over the name', () => {
    // Prepare
    const custom = { ...JSON.parse(JSON.stringify(KIE_PROFILE)), name: 'custom' };
    process.env.PROVIDER_PROFILE = 'mock';
    process.env.PROVIDER_PROFILE_JSON = JSON.stringify(custom);

    // Act
    const profile = providerProfileFromEnv();

    // Assert
    expect(profile.name).toBe('custom');
    expect(profile.models['image-model-1']?.model).toBe('google/nano-banana');
  });
});

describe('docs/guides/provider.md', () => {
  test('its example profile entries are valid mappings', () => {
    // Prepare
    const guide = readFileSync(join(__dirname, '../../docs/guides/provider.md'), 'utf8');
    const section = guide.slice(guide.indexOf('**Writing a profile for another upstream.**'));
    const example = JSON.parse(section.slice(section.indexOf('```json') + 7, section.indexOf('```\n'))) as {
      models: Record<string, unknown>;
    };
    const profile = { ...kieCopy(), name: 'acme', models: { ...kieCopy().models, ...example.models } };

    // Act
    const problems = profileProblems(profile);

    // Assert
    expect(Object.keys(example.models)).toEqual(['image-model-1', 'video-a/v2-1-standard']);
    expect(problems).toEqual([]);
  });
});
