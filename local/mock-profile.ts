/**
 * The mock provider's profile mode: what a real upstream described by a provider profile would refuse.
 * Started with a profile (`startMockProvider({ profile })`), the mock answers createTask with 422 for a
 * model name the profile does not name, an input key the model's mapping does not declare, or a value
 * of the wrong type or outside the model's tokens, so the tests exercise the real mapping end to end.
 * The mock's own controls (`mock*` keys, see mock-provider.ts) are always allowed.
 */

import type { Model } from '../functions/core/catalog';
import {
  type InputShape,
  type ModelMapping,
  mappingsOfProviderName,
  type NumberField,
  type ProviderProfile,
  type TokenField,
} from '../functions/core/profiles/profile';

/** What the mock needs to know about an accepted call. */
export interface ProfiledCall {
  kind: 'image' | 'video';
  /** Images the call asks for (1 when the model has no output count). */
  count: number;
}

type Check = (value: unknown) => string | undefined;

const isString: Check = (v) => (typeof v === 'string' ? undefined : 'must be a string');
const isNumber: Check = (v) => (typeof v === 'number' && Number.isFinite(v) ? undefined : 'must be a number');
const isInteger: Check = (v) => (Number.isInteger(v) ? undefined : 'must be an integer');

/** Plain shape fields and the type the upstream expects for each. */
const PLAIN_CHECKS: Readonly<Record<string, Check>> = {
  prompt: isString,
  negativePrompt: isString,
  width: isInteger,
  height: isInteger,
  seed: isString,
  guidanceScale: isNumber,
  numInferenceSteps: isInteger,
  fps: isInteger,
  motionStrength: isNumber,
  cameraMotion: isString,
};

function tokenCheck(field: TokenField, offered: readonly string[]): Check {
  const allowed = field.values ? Object.values(field.values) : offered;
  return (v) => (typeof v === 'string' && allowed.includes(v) ? undefined : `must be one of ${allowed.join(', ')}`);
}

function numberCheck(field: NumberField, allowed?: readonly number[]): Check {
  return (v) => {
    const ok = field.format === 'string' ? typeof v === 'string' && /^\d+$/.test(v) : Number.isInteger(v);
    if (!ok) return field.format === 'string' ? 'must be a whole number as a string, e.g. "5"' : 'must be an integer';
    if (allowed && !allowed.includes(Number(v))) return `must be one of ${allowed.join(', ')}`;
    return undefined;
  };
}

/** Provider key -> its check, for one model's mapping (and whether the call is the edit model's). */
function keyChecks(model: Model, mapping: ModelMapping, edit: boolean): Map<string, Check> {
  const checks = new Map<string, Check>();
  const shape: InputShape = mapping.input;
  for (const [field, check] of Object.entries(PLAIN_CHECKS)) {
    const key = shape[field as keyof InputShape];
    if (typeof key === 'string') checks.set(key, check);
  }
  if (shape.aspectRatio) checks.set(shape.aspectRatio.key, tokenCheck(shape.aspectRatio, model.aspectRatios));
  const offered =
    model.type === 'video'
      ? model.resolutions
      : model.pricing.kind === 'tiered'
        ? model.pricing.tiers.map((t) => t.tier)
        : [];
  if (shape.resolution) checks.set(shape.resolution.key, tokenCheck(shape.resolution, offered));
  if (shape.outputCount) checks.set(shape.outputCount.key, numberCheck(shape.outputCount));
  if (shape.duration && model.type === 'video') {
    checks.set(shape.duration.key, numberCheck(shape.duration, model.durations));
  }
  // A model with a separate edit model takes no images under its text model name, as upstream.
  if (shape.referenceImages && (edit || mapping.editModel === undefined)) {
    const list = shape.referenceImages.form === 'list';
    checks.set(shape.referenceImages.key, (v) =>
      list
        ? Array.isArray(v) && v.length > 0 && v.every((u) => typeof u === 'string')
          ? undefined
          : 'must be a non-empty list of URLs'
        : typeof v === 'string'
          ? undefined
          : 'must be one URL',
    );
  }
  for (const [key, value] of Object.entries(mapping.defaults ?? {})) {
    checks.set(key, (v) => (typeof v === typeof value ? undefined : `must be a ${typeof value}`));
  }
  return checks;
}

/** Problems of `input` for one candidate mapping; empty when the upstream would take it. */
function problemsFor(
  candidate: { model: Model; mapping: ModelMapping; edit: boolean },
  providerModel: string,
  input: Record<string, unknown>,
): string[] {
  const checks = keyChecks(candidate.model, candidate.mapping, candidate.edit);
  const problems: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (key.startsWith('mock')) continue;
    const check = checks.get(key);
    if (check === undefined) {
      problems.push(`input.${key} is not a parameter of ${providerModel}`);
      continue;
    }
    const problem = check(value);
    if (problem !== undefined) problems.push(`input.${key} ${problem}`);
  }
  if (typeof input[candidate.mapping.input.prompt] !== 'string') {
    problems.push(`input.${candidate.mapping.input.prompt} is required`);
  }
  const images = candidate.mapping.input.referenceImages?.key;
  if (candidate.edit && images !== undefined && input[images] === undefined) {
    problems.push(`input.${images} is required by ${providerModel}`);
  }
  return problems;
}

/**
 * What the upstream described by `profile` makes of a createTask call: the call, or the refusal.
 */
export function checkProfiledCall(
  profile: ProviderProfile,
  providerModel: string,
  input: Record<string, unknown>,
): { ok: true; call: ProfiledCall } | { ok: false; message: string } {
  const candidates = mappingsOfProviderName(profile, providerModel);
  if (candidates.length === 0) return { ok: false, message: `model ${providerModel} does not exist` };
  let first: string[] | undefined;
  for (const candidate of candidates) {
    const problems = problemsFor(candidate, providerModel, input);
    if (problems.length === 0) {
      const count = candidate.mapping.input.outputCount;
      const asked = count === undefined ? 1 : Number(input[count.key] ?? 1);
      return { ok: true, call: { kind: candidate.model.type, count: Math.min(Math.max(asked, 1), 10) } };
    }
    first ??= problems;
  }
  return { ok: false, message: (first ?? []).join('; ') };
}
