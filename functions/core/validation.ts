/**
 * Request validation for both generate endpoints: every constraint of the spec's field and limits tables
 * (the schema), then the per-model rules of the catalog (caps, input modes, durations, aspect ratios).
 *
 * Choices the spec leaves open:
 * - Lengths count Unicode code points (an emoji is one character), not UTF-16 units.
 * - Unknown top-level fields are rejected, each under its own path; `providerInput` is any JSON object
 *   whose billed keys must repeat what was priced (`price-guard.ts`) and whose values must be storable
 *   (`storable.ts`); it is bounded (32 KB as JSON, 16 levels deep), and so are
 *   URLs (2048 characters), `seed` and `cameraMotion` (256): a task is one DynamoDB item (400 KB, 32
 *   levels), and a body that cannot be stored must be the caller's 400, not the service's 500.
 * - `inputImageUrls`, when present, holds at least one URL (an empty list would switch image-model-1 to
 *   edit mode with nothing to edit), and each entry is an absolute http or https URL.
 * - A `text_to_video` request may not carry `inputImageUrls` (they would be silently ignored otherwise).
 * - Model rules run even when unrelated fields are invalid, so one response lists as many problems as
 *   possible; a rule is skipped while a field it reads is itself invalid (one message per problem).
 */

import * as v from 'valibot';
import { type ValidationDetails, ValidationError } from './errors';
import { guardImagePrice, guardVideoPrice } from './price-guard';
import type { ProviderProfile } from './profiles/profile';
import {
  type ImageRequest,
  ImageRequestSchema,
  imageObject,
  isJsonObject,
  unknownFieldMessage,
  type VideoRequest,
  VideoRequestSchema,
  videoObject,
} from './request-schemas';
import { storageProblems } from './storable';

export {
  type ImageRequest,
  ImageRequestSchema,
  PROVIDER_INPUT_MAX_BYTES,
  PROVIDER_INPUT_MAX_DEPTH,
  type VideoRequest,
  VideoRequestSchema,
} from './request-schemas';

// --- running -------------------------------------------------------------------------------------------

function detailsOf(
  issues: readonly v.BaseIssue<unknown>[],
  body: Record<string, unknown>,
  known: object,
  unstorable: readonly [string, string][],
) {
  const fieldErrors = new Map<string, string[]>();
  const formErrors: string[] = [];
  const add = (path: string, message: string) => {
    const messages = fieldErrors.get(path) ?? [];
    if (!messages.includes(message)) messages.push(message);
    fieldErrors.set(path, messages);
  };
  for (const issue of issues) {
    const path = v.getDotPath(issue);
    if (path !== null) add(path, issue.message);
    else if (!formErrors.includes(issue.message)) formErrors.push(issue.message);
  }
  for (const [path, message] of unstorable) add(path, message);
  // The strict object stops at the first unknown field; name them all.
  for (const key of Object.keys(body)) {
    if (!Object.hasOwn(known, key)) add(key, unknownFieldMessage(key));
  }
  // fromEntries defines own properties, so even a "__proto__" field is reported as data.
  const details: ValidationDetails = { fieldErrors: Object.fromEntries(fieldErrors), formErrors };
  return details;
}

function validate<TSchema extends v.GenericSchema>(
  schema: TSchema,
  known: object,
  body: unknown,
): v.InferOutput<TSchema> {
  if (!isJsonObject(body)) {
    throw new ValidationError({ fieldErrors: {}, formErrors: ['Request body must be a JSON object'] });
  }
  const result = v.safeParse(schema, body);
  // providerInput is not looked into by the schema, but it is stored with the task: values DynamoDB
  // cannot hold are the caller's 400, reported next to everything else.
  const unstorable = isJsonObject(body.providerInput) ? storageProblems(body.providerInput, 'providerInput') : [];
  if (result.success && unstorable.length === 0) return result.output;
  throw new ValidationError(detailsOf(result.success ? [] : result.issues, body, known, unstorable));
}

/**
 * Validates an image request body.
 * @throws ValidationError (and nothing else, whatever `body` is) with the problems by dotted field path
 */
export function validateImageRequest(body: unknown, profile: ProviderProfile): ImageRequest {
  const request = validate(ImageRequestSchema, imageObject.entries, body);
  guardImagePrice(request, profile);
  return request;
}

/**
 * Validates a video request body.
 * @throws ValidationError (and nothing else, whatever `body` is) with the problems by dotted field path
 */
export function validateVideoRequest(body: unknown, profile: ProviderProfile): VideoRequest {
  const request = validate(VideoRequestSchema, videoObject.entries, body);
  guardVideoPrice(request, profile);
  return request;
}
