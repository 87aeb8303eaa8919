/**
 * The request body schemas of the OpenAPI document: the valibot schemas validation runs, converted to
 * JSON Schema, with the field notes JSON Schema keywords cannot carry.
 */
import { toJsonSchema } from '@valibot/to-json-schema';
import type { GenericSchema } from 'valibot';
import { IMAGE_MODELS, VIDEO_MODELS } from '../functions/core/catalog';
import { ImageRequestSchema, VideoRequestSchema } from '../functions/core/validation';
import type { Json } from './openapi-json';

/** Field descriptions the JSON Schema keywords cannot carry (units, defaults, the per-model rules). */
const FIELD_NOTES: Readonly<Record<string, string>> = {
  prompt: "What to generate. At most the model's prompt cap (see GET /api/ai/models), counted in Unicode code points.",
  model: "The model id; GET /api/ai/models lists each model's modes, limits and prices.",
  negativePrompt: 'What to avoid.',
  width: 'Output width in pixels. With `height`, decides the price tier of tiered models.',
  height: 'Output height in pixels.',
  aspectRatio: "One of the model's aspect ratios (GET /api/ai/models).",
  numOutputs: 'Number of images (default 1); the price is per image.',
  seed: 'Seed for reproducible results.',
  guidanceScale: 'How closely to follow the prompt.',
  numInferenceSteps: 'Number of denoising steps.',
  inputImageUrls:
    "Reference images: http or https URLs, your uploads (`upload://<uploadId>`, POST /api/ai/uploads) or inline images (`data:image/png;base64,...`, also image/jpeg and image/webp; at most 4 MiB decoded per request, stored as an upload of yours and replaced by its reference). For images, their presence makes it an image-to-image task; for videos, image_to_video needs at least one and only the first is used by most models. At most the model's reference cap.",
  providerInput:
    'Provider-specific options, passed through (at most 32 KB as JSON, 16 levels deep). Keys that set the output count, size, resolution or duration may only repeat what was priced; `resolution` chooses the price tier (1K/2K/4K for images, 480p/720p/1080p for videos) and must be one the model offers. Numbers must be storable and keys non-empty.',
  inputMode: 'text_to_video or image_to_video; each model takes one or both (GET /api/ai/models).',
  duration: "Video length in seconds: one of the model's durations (default: its shortest).",
  fps: 'Frames per second.',
  motionStrength: 'Strength of motion.',
  cameraMotion: 'Camera motion hint.',
  resultRetention:
    'How long the results are kept, counted from the submission: a whole number of hours or days (`"1h"`, `"12h"`, `"1d"`, `"7d"`), at most the deployment\'s maximum of 30 days (`"30d"`). Afterwards the results are removed as by a DELETE of the task (files, checked upload copies, inline images), no URL is handed out and the task says `resultsExpiredAt`. Default: the bucket\'s own expiry (`resultsExpireAt`).',
  webhookUrl:
    'Where to POST the signed `task.completed` or `task.failed` event when the task ends (see `webhooks` in this document); else the account default, if any. https with a public host name (not an IP address, not a local name); checked at every attempt again, with every address the name resolves to public. Needs a signing secret on the account. Not part of the price.',
};

/** A request schema in JSON Schema 2020-12 (OpenAPI 3.1's dialect), with the notes added. */
function requestSchema(schema: GenericSchema, description: string): Json {
  const converted = toJsonSchema(schema, {
    target: 'draft-2020-12',
    errorMode: 'ignore',
    // JSON Schema string lengths count code points, exactly what minCodePoints/maxCodePoints count.
    overrideAction: ({ valibotAction, jsonSchema }) => {
      const action = valibotAction as { type: string; requirement?: unknown };
      if (action.type === 'min_code_points') return { ...jsonSchema, minLength: action.requirement as number };
      if (action.type === 'max_code_points') return { ...jsonSchema, maxLength: action.requirement as number };
      return undefined;
    },
  }) as Json;
  delete converted.$schema;
  const properties = (converted.properties ?? {}) as Record<string, Json>;
  for (const [name, property] of Object.entries(properties)) {
    const note = FIELD_NOTES[name];
    if (note) property.description = note;
  }
  const providerInput = properties.providerInput;
  if (providerInput) Object.assign(providerInput, { type: 'object', additionalProperties: true });
  return { ...converted, description };
}

/** The submit bodies' schemas: `ImageRequest` and `VideoRequest`. */
export function requestSchemas(): Json {
  return {
    ImageRequest: requestSchema(
      ImageRequestSchema,
      `Body of POST /api/ai/image/generate. Models: ${IMAGE_MODELS.map((m) => m.id).join(', ')}.`,
    ),
    VideoRequest: requestSchema(
      VideoRequestSchema,
      `Body of POST /api/ai/video/generate. Models: ${VIDEO_MODELS.map((m) => m.id).join(', ')}.`,
    ),
  };
}
