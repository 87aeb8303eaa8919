import fc from 'fast-check';
import { billedKeyIndex, normalizeInputKey } from '../../functions/core/billed-keys';
import {
  IMAGE_MODEL_IDS,
  IMAGE_MODELS,
  type ImageModel,
  VIDEO_MODEL_IDS,
  VIDEO_MODELS,
  type VideoInputMode,
  type VideoModel,
} from '../../functions/core/catalog';
import { ValidationError } from '../../functions/core/errors';
import { priceImage, priceVideo } from '../../functions/core/pricing';
import { isStorableNumber, storageProblems } from '../../functions/core/storable';
import { atScale } from '../support/scale';
import { rejectionOf, urls } from './core-fixtures';
import {
  buildImageProviderRequest,
  buildVideoProviderRequest,
  validateImageRequest,
  validateVideoRequest,
} from './mock-profile-rules';

/** Runs of the heavier properties: 300 in `npm test`, 3,000 in `npm run test:stress`. */
const PROPERTY_RUNS = atScale(300, 3000);

type Body = Record<string, unknown>;

const IMAGE_FIELDS = [
  'prompt',
  'model',
  'negativePrompt',
  'width',
  'height',
  'aspectRatio',
  'numOutputs',
  'seed',
  'guidanceScale',
  'numInferenceSteps',
  'inputImageUrls',
  'providerInput',
];
const VIDEO_FIELDS = [
  'prompt',
  'model',
  'inputMode',
  'negativePrompt',
  'width',
  'height',
  'aspectRatio',
  'duration',
  'fps',
  'seed',
  'guidanceScale',
  'motionStrength',
  'cameraMotion',
  'inputImageUrls',
  'providerInput',
];

// --- valid requests ------------------------------------------------------------------------------------

const prompt = (max: number) =>
  fc
    .oneof(fc.string({ minLength: 1, maxLength: 200 }), fc.string({ minLength: 1, maxLength: 50, unit: 'grapheme' }))
    .filter((s) => [...s].length <= max);
const side = fc.integer({ min: 64, max: 4096 });
const percent = fc.double({ min: 0, max: 100, noNaN: true }).filter(isStorableNumber);
const webUrls = (max: number) => fc.array(fc.webUrl(), { minLength: 1, maxLength: max });
/** Every object key at any depth of a JSON value. */
const keysOf = (value: unknown): string[] =>
  typeof value !== 'object' || value === null
    ? []
    : Object.entries(value).flatMap(([key, child]) => [...(Array.isArray(value) ? [] : [key]), ...keysOf(child)]);
const BILLED = new Set([
  ...billedKeyIndex(IMAGE_MODELS[0] as ImageModel).keys(),
  ...billedKeyIndex(VIDEO_MODELS[0] as VideoModel).keys(),
]);
/** Provider options: no billed key (the price guard's business) and nothing a task item cannot hold. */
const providerInput = fc
  .dictionary(fc.string(), fc.jsonValue(), { maxKeys: 5 })
  .filter(
    (input) =>
      storageProblems(input, 'providerInput').length === 0 &&
      !keysOf(input).some((key) => BILLED.has(normalizeInputKey(key))),
  );

const validImageFor = (model: ImageModel): fc.Arbitrary<Body> =>
  fc.record(
    {
      prompt: prompt(model.maxPromptLength),
      model: fc.constant(model.id),
      negativePrompt: fc.string({ maxLength: 100 }),
      width: side,
      height: side,
      aspectRatio: fc.constantFrom(...model.aspectRatios),
      numOutputs: fc.integer({ min: 1, max: 10 }),
      seed: fc.string(),
      guidanceScale: percent,
      numInferenceSteps: fc.integer({ min: 1, max: 150 }),
      inputImageUrls: webUrls(model.maxReferenceImages),
      providerInput,
    },
    { requiredKeys: ['prompt', 'model'] },
  );

const validVideoFor = (model: VideoModel, mode: VideoInputMode): fc.Arbitrary<Body> =>
  fc
    .tuple(
      fc.record(
        {
          negativePrompt: fc.string({ maxLength: 100 }),
          width: side,
          height: side,
          aspectRatio: fc.constantFrom(...model.aspectRatios),
          duration: fc.constantFrom(...model.durations),
          fps: fc.integer({ min: 1, max: 60 }),
          seed: fc.string(),
          guidanceScale: percent,
          motionStrength: percent,
          cameraMotion: fc.string(),
          providerInput,
        },
        { requiredKeys: [] },
      ),
      prompt(model.maxPromptLength),
      webUrls(model.maxReferenceImages),
    )
    .map(([optional, text, images]) => ({
      ...optional,
      prompt: text,
      model: model.id,
      inputMode: mode,
      ...(mode === 'image_to_video' ? { inputImageUrls: images } : {}),
    }));

const anyImageModel = fc.constantFrom(...IMAGE_MODELS);
const anyVideoModel = fc.constantFrom(...VIDEO_MODELS);
const validImage = anyImageModel.chain(validImageFor);
const validVideo = anyVideoModel.chain((model) =>
  fc.constantFrom(...model.inputModes).chain((mode) => validVideoFor(model, mode)),
);

describe('generated valid requests', () => {
  test('every valid image request is accepted unchanged, priced above zero and buildable', () => {
    fc.assert(
      fc.property(validImage, (body) => {
        // Act
        const req = validateImageRequest(body);
        const credits = priceImage(req);
        const call = buildImageProviderRequest(req);

        // Assert
        expect(req).toEqual(body);
        expect(Number.isInteger(credits)).toBe(true);
        expect(credits).toBeGreaterThan(0);
        expect(call.input.prompt).toBe(body.prompt);
      }),
    );
  });

  test('every valid video request is accepted unchanged, priced above zero and buildable', () => {
    fc.assert(
      fc.property(validVideo, (body) => {
        // Act
        const req = validateVideoRequest(body);
        const credits = priceVideo(req);
        const call = buildVideoProviderRequest(req);

        // Assert
        expect(req).toEqual(body);
        expect(credits).toBeGreaterThan(0);
        expect(call.input.prompt).toBe(body.prompt);
      }),
    );
  });
});

// --- invalid requests ----------------------------------------------------------------------------------

/** A change that makes a valid body invalid, and the path the error must be reported under. */
interface Breakage {
  patch: Body;
  remove?: string;
  path: string;
}

const breaks = (path: string, value: fc.Arbitrary<unknown>): fc.Arbitrary<Breakage> =>
  value.map((v) => ({ patch: { [path]: v }, path }));
const nonInteger = (min: number, max: number) => fc.integer({ min, max: max - 1 }).map((n) => n + 0.5);
const badSide = fc.oneof(fc.integer({ max: 63 }), fc.integer({ min: 4097 }), nonInteger(64, 4096), fc.string());
const badPercent = fc.oneof(
  fc.double({ max: -0.001, noNaN: true }),
  fc.double({ min: 100.001, noNaN: true }),
  fc.string(),
);
const notAString = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }));
const badUrl = fc.oneof(
  fc.constantFrom('ftp://files.example.com/a.png', 'not a url', 'mailto:a@example.com', '/relative.png', 'file:///x'),
  fc.integer(),
);
const unknownKey = (known: readonly string[]) =>
  fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !known.includes(k) && k !== '__proto__');
const missing = (field: string): fc.Arbitrary<Breakage> => fc.constant({ patch: {}, remove: field, path: field });
const urlAt = (count: number) =>
  fc.tuple(fc.integer({ min: 0, max: count - 1 }), badUrl).map(([index, bad]) => ({
    patch: { inputImageUrls: urls(count).map((u, i) => (i === index ? bad : u)) },
    path: `inputImageUrls.${index}`,
  }));

const imageBreakages = (model: ImageModel): fc.Arbitrary<Breakage> =>
  fc.oneof(
    missing('prompt'),
    missing('model'),
    breaks('prompt', fc.constant('')),
    breaks(
      'prompt',
      fc.integer({ min: 1, max: 20 }).map((k) => 'p'.repeat(model.maxPromptLength + k)),
    ),
    breaks(
      'model',
      fc.string().filter((s) => !(IMAGE_MODEL_IDS as readonly string[]).includes(s)),
    ),
    breaks(
      'negativePrompt',
      fc.integer({ min: 2001, max: 2100 }).map((n) => 'n'.repeat(n)),
    ),
    breaks('width', badSide),
    breaks('height', badSide),
    breaks(
      'aspectRatio',
      fc.string().filter((s) => !model.aspectRatios.includes(s)),
    ),
    breaks('numOutputs', fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 11 }), nonInteger(1, 10))),
    breaks('numInferenceSteps', fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 151 }), nonInteger(1, 150))),
    breaks('guidanceScale', badPercent),
    breaks('seed', notAString),
    breaks('inputImageUrls', fc.integer({ min: model.maxReferenceImages + 1, max: 20 }).map(urls)),
    breaks('inputImageUrls', fc.constant([])),
    urlAt(model.maxReferenceImages),
    breaks('providerInput', fc.oneof(fc.array(fc.jsonValue(), { maxLength: 3 }), fc.string(), fc.constant(null))),
    unknownKey(IMAGE_FIELDS).map((key) => ({ patch: { [key]: 1 }, path: key })),
  );

const videoBreakages = (model: VideoModel, mode: VideoInputMode): fc.Arbitrary<Breakage> => {
  const other: VideoInputMode = mode === 'text_to_video' ? 'image_to_video' : 'text_to_video';
  const options: fc.Arbitrary<Breakage>[] = [
    missing('prompt'),
    missing('model'),
    missing('inputMode'),
    breaks(
      'prompt',
      fc.integer({ min: 1, max: 20 }).map((k) => 'p'.repeat(model.maxPromptLength + k)),
    ),
    breaks(
      'model',
      fc.string().filter((s) => !(VIDEO_MODEL_IDS as readonly string[]).includes(s)),
    ),
    breaks(
      'inputMode',
      fc.string().filter((s) => s !== 'text_to_video' && s !== 'image_to_video'),
    ),
    breaks('width', badSide),
    breaks('height', badSide),
    breaks(
      'aspectRatio',
      fc.string().filter((s) => !model.aspectRatios.includes(s)),
    ),
    breaks(
      'duration',
      fc
        .oneof(fc.integer({ min: 1, max: 60 }), fc.double({ min: -100, max: 100, noNaN: true }), fc.string())
        .filter((d) => !model.durations.includes(d as number)),
    ),
    breaks('fps', fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 61 }), nonInteger(1, 60))),
    breaks('guidanceScale', badPercent),
    breaks('motionStrength', badPercent),
    breaks('cameraMotion', notAString),
    breaks('seed', notAString),
    unknownKey(VIDEO_FIELDS).map((key) => ({ patch: { [key]: 1 }, path: key })),
  ];
  if (mode === 'image_to_video') {
    options.push(
      missing('inputImageUrls'),
      breaks('inputImageUrls', fc.integer({ min: model.maxReferenceImages + 1, max: 8 }).map(urls)),
      urlAt(model.maxReferenceImages),
    );
  } else {
    options.push(breaks('inputImageUrls', fc.constant(urls(1))));
  }
  if (!model.inputModes.includes(other)) {
    const images = other === 'image_to_video' ? { inputImageUrls: urls(1) } : { inputImageUrls: undefined };
    options.push(fc.constant({ patch: { inputMode: other, ...images }, path: 'inputMode' }));
  }
  return fc.oneof(...options);
};

function applyBreakage(body: Body, breakage: Breakage): Body {
  const broken: Body = { ...body, ...breakage.patch };
  if (breakage.remove !== undefined) delete broken[breakage.remove];
  for (const [key, value] of Object.entries(broken)) if (value === undefined) delete broken[key];
  return broken;
}

describe('generated invalid requests', () => {
  test('an image request broken in one place is rejected with that path named', () => {
    const cases = anyImageModel.chain((model) => fc.tuple(validImageFor(model), imageBreakages(model)));
    fc.assert(
      fc.property(cases, ([body, breakage]) => {
        // Prepare
        const broken = applyBreakage(body, breakage);

        // Act
        const details = rejectionOf(() => validateImageRequest(broken));

        // Assert
        expect(Object.keys(details.fieldErrors)).toContain(breakage.path);
        expect(details.fieldErrors[breakage.path]?.length).toBeGreaterThan(0);
      }),
    );
  });

  test('a video request broken in one place is rejected with that path named', () => {
    const cases = anyVideoModel.chain((model) =>
      fc
        .constantFrom(...model.inputModes)
        .chain((mode) => fc.tuple(validVideoFor(model, mode), videoBreakages(model, mode))),
    );
    fc.assert(
      fc.property(cases, ([body, breakage]) => {
        // Prepare
        const broken = applyBreakage(body, breakage);

        // Act
        const details = rejectionOf(() => validateVideoRequest(broken));

        // Assert
        expect(Object.keys(details.fieldErrors)).toContain(breakage.path);
      }),
    );
  });
});

// --- arbitrary input -----------------------------------------------------------------------------------

/** 'accepted', 'rejected' (a ValidationError), or whatever else was thrown. */
function outcomeOf(act: () => unknown): unknown {
  try {
    act();
    return 'accepted';
  } catch (error) {
    return error instanceof ValidationError ? 'rejected' : error;
  }
}

/** Objects that use the real field names with arbitrary JSON values, so the model rules get exercised. */
const nearlyValid = (fields: readonly string[], models: readonly string[]) =>
  fc
    .tuple(
      fc.dictionary(fc.constantFrom(...fields, 'extra'), fc.jsonValue({ maxDepth: 2 })),
      fc.constantFrom(...models),
      fc.string({ minLength: 1, maxLength: 20 }),
    )
    .map(([fields, model, text]) => ({ prompt: text, model, ...fields }));

describe('the validators never throw anything but ValidationError', () => {
  test.each([
    ['image', validateImageRequest],
    ['video', validateVideoRequest],
  ] as const)('%s: on arbitrary JSON values', (_name, validate) => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => {
        // Act
        const outcome = outcomeOf(() => validate(body));

        // Assert
        expect(['accepted', 'rejected']).toContain(outcome);
      }),
    );
  });

  test.each([
    ['image', validateImageRequest],
    ['video', validateVideoRequest],
  ] as const)('%s: on arbitrary JavaScript values', (_name, validate) => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withObjectString: true }), (body) => {
        // Act
        const outcome = outcomeOf(() => validate(body));

        // Assert
        expect(['accepted', 'rejected']).toContain(outcome);
      }),
    );
  });

  test('image: on near-valid bodies, and whatever passes can be priced and built', () => {
    fc.assert(
      fc.property(nearlyValid(IMAGE_FIELDS, [...IMAGE_MODEL_IDS, 'image-model-9']), (body) => {
        // Act
        const outcome = outcomeOf(() => {
          const req = validateImageRequest(body);
          if (!(priceImage(req) > 0)) throw new Error('priced at zero');
          buildImageProviderRequest(req);
        });

        // Assert
        expect(['accepted', 'rejected']).toContain(outcome);
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });

  test('video: on near-valid bodies, and whatever passes can be priced and built', () => {
    fc.assert(
      fc.property(nearlyValid(VIDEO_FIELDS, [...VIDEO_MODEL_IDS, 'video-z']), (body) => {
        // Act
        const outcome = outcomeOf(() => {
          const req = validateVideoRequest(body);
          if (!(priceVideo(req) > 0)) throw new Error('priced at zero');
          buildVideoProviderRequest(req);
        });

        // Assert
        expect(['accepted', 'rejected']).toContain(outcome);
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });
});
