/**
 * The request schemas of both generate endpoints: every constraint of the spec's field and limits tables,
 * then the per-model rules of the catalog (caps, input modes, durations, aspect ratios). `validation.ts`
 * runs them and adds the price guard; the schemas and the request types live here, apart from that
 * runner, so that pricing and the price guard can name the request types without importing the module
 * that imports them (an import cycle).
 *
 * Choices the spec leaves open:
 * - Lengths count Unicode code points (an emoji is one character), not UTF-16 units.
 * - Unknown top-level fields are rejected, each under its own path; `providerInput` is any JSON object
 *   whose billed keys must repeat what was priced (`price-guard.ts`) and whose values must be storable
 *   (`storable.ts`); it is bounded (32 KB as JSON, 16 levels deep), and so are
 *   URLs (2048 characters), `seed` and `cameraMotion` (256): a task is one DynamoDB item (400 KB, 32
 *   levels), and a body that cannot be stored must be the caller's 400, not the service's 500.
 * - `inputImageUrls`, when present, holds at least one URL (an empty list would switch image-model-1 to
 *   edit mode with nothing to edit), and each entry is an absolute http or https URL or an upload
 *   reference `upload://<uploadId>` (whose file is checked at submission, before the debit).
 * - A `text_to_video` request may not carry `inputImageUrls` (they would be silently ignored otherwise).
 * - Model rules run even when unrelated fields are invalid, so one response lists as many problems as
 *   possible; a rule is skipped while a field it reads is itself invalid (one message per problem).
 */
import * as v from 'valibot';
import { findImageModel, findVideoModel, IMAGE_MODEL_IDS, VIDEO_INPUT_MODES, VIDEO_MODEL_IDS } from './catalog';
import { resultRetentionSchema } from './retention';
import { isStorableNumber, STORABLE_NUMBER_MESSAGE } from './storable';
import { isUploadReference, uploadIdOf } from './uploads';

/** A non-null, non-array object: what a JSON object parses to. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An http(s) URL, or one of the service's own upload references (checked at submission, lifecycle/uploads.ts). */
function isHttpUrl(value: string): boolean {
  if (isUploadReference(value)) return uploadIdOf(value) !== undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

// The helpers below are marked side-effect free (`@__NO_SIDE_EFFECTS__`, as valibot marks its own), and
// the schemas of one task type are built in calls marked pure (esbuild does not carry valibot's own
// marks through the `v.` namespace): an unused schema then drops out of a bundle, so submit-image
// carries no video schema or video catalog, and submit-video no image ones (measured in bench bundles).
const text = /* @__NO_SIDE_EFFECTS__ */ (min: number, max: number) =>
  v.pipe(
    v.string('Must be a string'),
    v.minCodePoints(min, min === 1 ? 'Must not be empty' : `Must be at least ${min} characters`),
    v.maxCodePoints(max, `Must be at most ${max} characters`),
  );

const numberIn = /* @__NO_SIDE_EFFECTS__ */ (min: number, max: number) =>
  v.pipe(
    v.number('Must be a number'),
    v.check(isStorableNumber, STORABLE_NUMBER_MESSAGE),
    v.minValue(min, `Must be at least ${min}`),
    v.maxValue(max, `Must be at most ${max}`),
  );

const integerIn = /* @__NO_SIDE_EFFECTS__ */ (min: number, max: number) =>
  v.pipe(
    v.number('Must be a number'),
    v.integer('Must be an integer'),
    v.minValue(min, `Must be at least ${min}`),
    v.maxValue(max, `Must be at most ${max}`),
  );

const imageUrls = /* @__NO_SIDE_EFFECTS__ */ (max: number) =>
  v.pipe(
    v.array(
      v.pipe(
        v.string('Must be a string'),
        v.maxLength(2048, 'Must be at most 2048 characters'),
        v.check(isHttpUrl, 'Must be an http or https URL, or upload://<uploadId>'),
      ),
      'Must be an array',
    ),
    v.minLength(1, 'Must contain at least 1 URL when present'),
    v.maxLength(max, `Must contain at most ${max} URLs`),
  );

export const PROVIDER_INPUT_MAX_BYTES = 32 * 1024;
export const PROVIDER_INPUT_MAX_DEPTH = 16;

/** Nesting depth of a JSON value (a scalar is 0), stopping early once past `limit`. */
function depthOf(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  if (limit < 0) return 1;
  let deepest = 0;
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(child, limit - 1));
    if (deepest > limit) break;
  }
  return deepest + 1;
}

const providerInput = v.pipe(
  v.custom<Record<string, unknown>>(isJsonObject, 'Must be a JSON object'),
  v.check(
    (value) => depthOf(value, PROVIDER_INPUT_MAX_DEPTH) <= PROVIDER_INPUT_MAX_DEPTH,
    `Must be nested at most ${PROVIDER_INPUT_MAX_DEPTH} levels deep`,
  ),
  v.check(
    // Measured only once the depth is known to be sane (reported above), so stringify cannot overflow.
    (value) =>
      depthOf(value, PROVIDER_INPUT_MAX_DEPTH) > PROVIDER_INPUT_MAX_DEPTH ||
      Buffer.byteLength(JSON.stringify(value)) <= PROVIDER_INPUT_MAX_BYTES,
    `Must be at most ${PROVIDER_INPUT_MAX_BYTES / 1024} KB as JSON`,
  ),
);

/**
 * `webhookUrl`: where the finished task is POSTed (signed). Here only its type (and its bound, for the
 * API document); its form and which endpoints are allowed (https, public host names) are one rule,
 * `webhooks/target-policy.ts`, which the submit handler applies with the settings of the deployment.
 */
const webhookUrl = v.pipe(v.string('Must be a string'), v.maxLength(2048, 'Must be at most 2048 characters'));

const shortText = v.pipe(v.string('Must be a string'), v.maxLength(256, 'Must be at most 256 characters'));

export function unknownFieldMessage(key: string): string {
  return `Unknown field "${key}"; provider-specific options go inside providerInput`;
}

/** Messages of the object schema itself: not an object, a missing required field, an unknown field. */
const objectMessage = (issue: v.StrictObjectIssue): string => {
  if (issue.expected === 'never') return unknownFieldMessage(String(issue.input));
  if (issue.expected?.startsWith('"')) return 'Required';
  return 'Must be a JSON object';
};

const oneOf = /* @__NO_SIDE_EFFECTS__ */ (values: readonly (string | number)[]) => values.join(', ');

/** A per-model rule: reads some fields, reports under `target` when the returned message is defined. */
interface ModelRule<T> {
  reads: readonly (keyof T & string)[];
  target: keyof T & string;
  check: (input: T) => string | undefined;
}

/**
 * Runs the per-model rules after the field schemas. A rule is skipped while a field it reads has an issue
 * (including one a previous rule reported), so a field gets the most basic message only: "Must be at most
 * 20000 characters", not that and "... for image-model-1" too.
 */
/* @__NO_SIDE_EFFECTS__ */
function modelRules<T extends Record<string, unknown>>(rules: readonly ModelRule<T>[]) {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    const value: unknown = dataset.value;
    if (!isJsonObject(value)) return;
    const invalid = new Set<string>();
    for (const issue of dataset.issues ?? []) {
      const key = issue.path?.[0]?.key;
      if (typeof key !== 'string') return;
      invalid.add(key);
    }
    // Every field a rule reads passed its own schema, so the value has T's shape where the rule looks.
    const input = value as T;
    for (const rule of rules) {
      if (rule.reads.some((key) => invalid.has(key))) continue;
      const message = rule.check(input);
      if (message === undefined) continue;
      const path: v.ObjectPathItem = {
        type: 'object',
        origin: 'value',
        input,
        key: rule.target,
        value: input[rule.target],
      };
      addIssue({ message, path: [path] });
      invalid.add(rule.target);
    }
  });
}

interface CatalogEntry {
  id: string;
  maxPromptLength: number;
  maxReferenceImages: number;
  aspectRatios: readonly string[];
}

function promptCap(model: CatalogEntry | undefined, prompt: string): string | undefined {
  if (model === undefined || [...prompt].length <= model.maxPromptLength) return undefined;
  return `Must be at most ${model.maxPromptLength} characters for ${model.id}`;
}

function referenceCap(model: CatalogEntry | undefined, urls: readonly string[] | undefined): string | undefined {
  if (model === undefined || urls === undefined || urls.length <= model.maxReferenceImages) return undefined;
  const cap = model.maxReferenceImages;
  return `Must contain at most ${cap} URL${cap === 1 ? '' : 's'} for ${model.id}`;
}

function aspectRatioAllowed(model: CatalogEntry | undefined, aspectRatio: string | undefined): string | undefined {
  if (model === undefined || aspectRatio === undefined || model.aspectRatios.includes(aspectRatio)) return undefined;
  return `Must be one of ${oneOf(model.aspectRatios)} for ${model.id}`;
}

// --- image ---------------------------------------------------------------------------------------------

export const imageObject = /* @__PURE__ */ (() =>
  v.strictObject(
    {
      prompt: text(1, 20000),
      model: v.picklist(IMAGE_MODEL_IDS, `Must be one of ${oneOf(IMAGE_MODEL_IDS)}`),
      negativePrompt: v.optional(text(0, 2000)),
      width: v.optional(integerIn(64, 4096)),
      height: v.optional(integerIn(64, 4096)),
      aspectRatio: v.optional(v.string('Must be a string')),
      numOutputs: v.optional(integerIn(1, 10)),
      seed: v.optional(shortText),
      guidanceScale: v.optional(numberIn(0, 100)),
      numInferenceSteps: v.optional(integerIn(1, 150)),
      inputImageUrls: v.optional(imageUrls(14)),
      providerInput: v.optional(providerInput),
      webhookUrl: v.optional(webhookUrl),
      resultRetention: v.optional(resultRetentionSchema),
    },
    objectMessage,
  ))();
type ImageFields = v.InferOutput<typeof imageObject>;

/** The image request body: the spec's field table plus the image models' rules. */
export const ImageRequestSchema = /* @__PURE__ */ v.pipe(
  imageObject,
  modelRules<ImageFields>([
    {
      reads: ['model', 'prompt'],
      target: 'prompt',
      check: (input) => promptCap(findImageModel(input.model), input.prompt),
    },
    {
      reads: ['model', 'inputImageUrls'],
      target: 'inputImageUrls',
      check: (input) => referenceCap(findImageModel(input.model), input.inputImageUrls),
    },
    {
      reads: ['model', 'aspectRatio'],
      target: 'aspectRatio',
      check: (input) => aspectRatioAllowed(findImageModel(input.model), input.aspectRatio),
    },
  ]),
);

/** A validated image request. */
export type ImageRequest = v.InferOutput<typeof ImageRequestSchema>;

// --- video ---------------------------------------------------------------------------------------------

export const videoObject = /* @__PURE__ */ (() =>
  v.strictObject(
    {
      prompt: text(1, 4000),
      model: v.picklist(VIDEO_MODEL_IDS, `Must be one of ${oneOf(VIDEO_MODEL_IDS)}`),
      inputMode: v.picklist(VIDEO_INPUT_MODES, `Must be one of ${oneOf(VIDEO_INPUT_MODES)}`),
      negativePrompt: v.optional(text(0, 2000)),
      width: v.optional(integerIn(64, 4096)),
      height: v.optional(integerIn(64, 4096)),
      aspectRatio: v.optional(v.string('Must be a string')),
      duration: v.optional(numberIn(1, 60)),
      fps: v.optional(integerIn(1, 60)),
      seed: v.optional(shortText),
      guidanceScale: v.optional(numberIn(0, 100)),
      motionStrength: v.optional(numberIn(0, 100)),
      cameraMotion: v.optional(shortText),
      inputImageUrls: v.optional(imageUrls(5)),
      providerInput: v.optional(providerInput),
      webhookUrl: v.optional(webhookUrl),
      resultRetention: v.optional(resultRetentionSchema),
    },
    objectMessage,
  ))();
type VideoFields = v.InferOutput<typeof videoObject>;

function inputModeAllowed(input: VideoFields): string | undefined {
  const model = findVideoModel(input.model);
  if (model === undefined || model.inputModes.includes(input.inputMode)) return undefined;
  return `Must be ${oneOf(model.inputModes)} for ${model.id}`;
}

function imagesMatchMode(input: VideoFields): string | undefined {
  if (input.inputMode === 'image_to_video' && (input.inputImageUrls ?? []).length === 0) {
    return 'Required when inputMode is image_to_video: at least 1 image URL';
  }
  if (input.inputMode === 'text_to_video' && input.inputImageUrls !== undefined) {
    return 'Must be omitted when inputMode is text_to_video';
  }
  return undefined;
}

function durationAllowed(input: VideoFields): string | undefined {
  const model = findVideoModel(input.model);
  if (model === undefined || input.duration === undefined || model.durations.includes(input.duration)) {
    return undefined;
  }
  const allowed = model.durations.length === 1 ? `${model.durations[0]}` : `one of ${oneOf(model.durations)}`;
  return `Must be ${allowed} (seconds) for ${model.id}`;
}

/** The video request body: the spec's field table plus the video models' rules (input modes 1-4). */
export const VideoRequestSchema = /* @__PURE__ */ v.pipe(
  videoObject,
  modelRules<VideoFields>([
    {
      reads: ['model', 'prompt'],
      target: 'prompt',
      check: (input) => promptCap(findVideoModel(input.model), input.prompt),
    },
    { reads: ['model', 'inputMode'], target: 'inputMode', check: inputModeAllowed },
    { reads: ['inputMode', 'inputImageUrls'], target: 'inputImageUrls', check: imagesMatchMode },
    {
      reads: ['model', 'inputImageUrls'],
      target: 'inputImageUrls',
      check: (input) => referenceCap(findVideoModel(input.model), input.inputImageUrls),
    },
    { reads: ['model', 'duration'], target: 'duration', check: durationAllowed },
    {
      reads: ['model', 'aspectRatio'],
      target: 'aspectRatio',
      check: (input) => aspectRatioAllowed(findVideoModel(input.model), input.aspectRatio),
    },
  ]),
);

/** A validated video request. */
export type VideoRequest = v.InferOutput<typeof VideoRequestSchema>;
