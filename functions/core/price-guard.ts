/**
 * The price guard: what is generated is what is priced. `providerInput` reaches the provider merged over
 * the service's own input, so a billed key in it (see `billed-keys.ts`: output count, size, resolution,
 * duration, at any depth and in any spelling) could buy more than was paid for. The guard refuses every
 * billed key whose value differs from the one the service priced and sends itself, and every
 * `providerInput.resolution` that is not a resolution the model offers (it is never read as the
 * cheapest tier), and a resolution that contradicts `width`/`height`.
 *
 * It runs after the field and model rules (it needs a valid request to know the price), so its problems
 * are reported once the rest of the body is valid. The billed keys come from `billed-keys.ts` joined
 * with the provider profile's own (`billedKeyIndex`), and a model whose upstream makes one image per
 * task on this profile (no `outputCount` key) accepts only `numOutputs: 1`.
 */

import { billedKeyIndex, normalizeInputKey } from './billed-keys';
import type { BilledQuantity } from './billed-quantity';
import { imageModel, imageTiersOf, videoModel } from './catalog';
import { type ValidationDetails, ValidationError } from './errors';
import {
  imageTierOfSize,
  requestedImageTier,
  requestedVideoResolution,
  resolveImageTier,
  resolveVideoDuration,
  resolveVideoResolution,
  videoResolutionOfSize,
} from './pricing';
import { mappingOf, type ProviderProfile } from './profiles/profile';
import type { ImageRequest, VideoRequest } from './request-schemas';

/**
 * The value the service prices and sends for each billed quantity (`undefined`: the service sends
 * none). Tokens are ours (`4K`), also where the profile sends the upstream's spelling (`"high"`): the
 * request builder sets that after the merge anyway.
 */
type PricedValues = Readonly<Record<BilledQuantity, number | string | undefined>>;

/** How each quantity is set in the request, for the messages. */
const SET_BY: Readonly<Record<BilledQuantity, string>> = {
  outputCount: 'the number of outputs is set by numOutputs',
  width: 'the width is set by the top-level width field',
  height: 'the height is set by the top-level height field',
  resolution: 'the resolution is priced from providerInput.resolution or width/height',
  duration: 'the duration is set by the top-level duration field',
  size: 'the output size is set by width/height and the resolution',
};

function matchesPriced(value: unknown, priced: PricedValues[BilledQuantity]): boolean {
  if (priced === undefined) return false;
  if (typeof priced === 'string') return typeof value === 'string' && value.toLowerCase() === priced.toLowerCase();
  return value === priced || (typeof value === 'string' && value === String(priced));
}

function refusal(quantity: BilledQuantity, priced: PricedValues[BilledQuantity]): string {
  const allowed = priced === undefined ? 'omit it' : `omit it or send exactly ${JSON.stringify(priced)}`;
  return `Billed by the service: ${SET_BY[quantity]}; ${allowed}`;
}

/** Every billed key anywhere in `value` whose value differs from the priced one, by dotted path. */
function billedKeyProblems(
  value: unknown,
  path: string,
  index: ReadonlyMap<string, BilledQuantity>,
  priced: PricedValues,
  add: (path: string, message: string) => void,
): void {
  if (typeof value !== 'object' || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    const childPath = `${path}.${key}`;
    const quantity = Array.isArray(value) ? undefined : index.get(normalizeInputKey(key));
    if (quantity !== undefined && !matchesPriced(child, priced[quantity]))
      add(childPath, refusal(quantity, priced[quantity]));
    else billedKeyProblems(child, childPath, index, priced, add);
  }
}

/** Problems of `providerInput.resolution` itself: an unknown token, or one that contradicts width/height. */
function resolutionProblem(
  token: unknown,
  offered: readonly string[],
  modelId: string,
  requested: string | undefined,
  ofSize: string | undefined,
): string | undefined {
  if (token === undefined) return undefined;
  if (requested === undefined) return `Must be one of ${offered.join(', ')} for ${modelId}`;
  if (ofSize !== undefined && ofSize !== requested) {
    return `Conflicts with width/height, which call for ${ofSize}; omit one or make them agree`;
  }
  return undefined;
}

function check(
  providerInput: Record<string, unknown> | undefined,
  index: ReadonlyMap<string, BilledQuantity>,
  priced: PricedValues,
  resolution: string | undefined,
  outputs?: string,
): void {
  const fieldErrors: Record<string, string[]> = {};
  const add = (path: string, message: string) => {
    fieldErrors[path] = [...(fieldErrors[path] ?? []), message];
  };
  if (outputs !== undefined) add('numOutputs', outputs);
  if (resolution !== undefined) add('providerInput.resolution', resolution);
  billedKeyProblems(providerInput ?? {}, 'providerInput', index, priced, (path, message) => {
    // The resolution token's own problem is the clearer message; the generic one would repeat it.
    if (resolution === undefined || path !== 'providerInput.resolution') add(path, message);
  });
  if (Object.keys(fieldErrors).length > 0) {
    const details: ValidationDetails = { fieldErrors, formErrors: [] };
    throw new ValidationError(details);
  }
}

/**
 * Refuses an image request whose `providerInput` sets a billed quantity to anything but what was priced.
 * @throws ValidationError naming each offending `providerInput` path
 */
export function guardImagePrice(req: ImageRequest, profile: ProviderProfile): void {
  const model = imageModel(req.model);
  const mapping = mappingOf(profile, model.id);
  const token = req.providerInput?.resolution;
  const resolution = resolutionProblem(
    token,
    imageTiersOf(model),
    model.id,
    requestedImageTier(req),
    token === undefined ? undefined : imageTierOfSize(req),
  );
  const tier = resolveImageTier(req);
  const priced: PricedValues = {
    outputCount: req.numOutputs ?? 1,
    width: req.width,
    height: req.height,
    resolution: tier,
    duration: undefined,
    size: undefined,
  };
  const outputs =
    (req.numOutputs ?? 1) > 1 && mapping.input.outputCount === undefined
      ? `Must be 1 for ${model.id}: its provider (${profile.name}) makes one image per task`
      : undefined;
  check(req.providerInput, billedKeyIndex(model, mapping), priced, resolution, outputs);
}

/**
 * Refuses a video request whose `providerInput` sets a billed quantity to anything but what was priced.
 * @throws ValidationError naming each offending `providerInput` path
 */
export function guardVideoPrice(req: VideoRequest, profile: ProviderProfile): void {
  const model = videoModel(req.model);
  const mapping = mappingOf(profile, model.id);
  const token = req.providerInput?.resolution;
  const resolution = resolutionProblem(
    token,
    model.resolutions,
    model.id,
    requestedVideoResolution(req),
    token === undefined ? undefined : videoResolutionOfSize(req),
  );
  const priced: PricedValues = {
    outputCount: 1,
    width: req.width,
    height: req.height,
    resolution: resolveVideoResolution(req),
    duration: resolveVideoDuration(req),
    size: undefined,
  };
  check(req.providerInput, billedKeyIndex(model, mapping), priced, resolution);
}
