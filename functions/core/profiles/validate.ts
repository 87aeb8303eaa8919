/**
 * Validation of provider profiles: every catalog model mapped, nothing unknown, every billed key
 * declared, every token translated, each problem named by model and field. Run at synth and when the
 * local stack starts (and on every JSON profile); not bundled into the functions.
 */

import type { BilledQuantity } from '../billed-quantity';
import { MODELS, type Model } from '../catalog';
import { parseCreateRateLimit, parseMaxInFlight } from '../provider-capacity';
import { type InputShape, ProfileError, type ProviderProfile } from './profile';

const SHAPE_FIELDS: readonly (keyof InputShape)[] = [
  'prompt',
  'negativePrompt',
  'width',
  'height',
  'aspectRatio',
  'seed',
  'guidanceScale',
  'numInferenceSteps',
  'fps',
  'motionStrength',
  'cameraMotion',
  'referenceImages',
  'outputCount',
  'resolution',
  'duration',
];
const PLAIN_FIELDS = new Set<keyof InputShape>([
  'prompt',
  'negativePrompt',
  'width',
  'height',
  'seed',
  'guidanceScale',
  'numInferenceSteps',
  'fps',
  'motionStrength',
  'cameraMotion',
]);
const TOKEN_FIELDS = new Set<keyof InputShape>(['aspectRatio', 'resolution']);
const NUMBER_FIELDS = new Set<keyof InputShape>(['outputCount', 'duration']);
const VIDEO_ONLY = new Set<keyof InputShape>(['fps', 'motionStrength', 'cameraMotion', 'duration']);
const IMAGE_ONLY = new Set<keyof InputShape>(['numInferenceSteps', 'outputCount']);
const MAPPING_FIELDS = new Set(['model', 'editModel', 'input', 'defaults', 'billedAliases', 'source', 'flagged']);
const QUANTITIES: readonly BilledQuantity[] = ['outputCount', 'width', 'height', 'resolution', 'duration', 'size'];
const KEY = /^[A-Za-z0-9_.-]{1,64}$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isName(value: unknown): value is string {
  return typeof value === 'string' && /^\S{1,128}$/.test(value);
}

/** The tokens a model offers for a token field (what `values` must cover). */
function offeredTokens(model: Model, field: 'aspectRatio' | 'resolution'): readonly string[] {
  if (field === 'aspectRatio') return model.aspectRatios;
  if (model.type === 'video') return model.resolutions;
  return model.pricing.kind === 'tiered' ? model.pricing.tiers.map((t) => t.tier) : [];
}

/** Problems of one model's mapping, each prefixed with `<model id>: <field>`. */
function mappingProblems(model: Model, raw: unknown): string[] {
  const problems: string[] = [];
  const at = (field: string, problem: string) => problems.push(`${model.id}: ${field}: ${problem}`);
  if (!isRecord(raw)) {
    at('(mapping)', 'must be an object with model and input');
    return problems;
  }
  for (const field of Object.keys(raw)) if (!MAPPING_FIELDS.has(field)) at(field, 'unknown field');
  if (!isName(raw.model)) at('model', 'must be the provider model name (1-128 characters, no spaces)');
  if (raw.editModel !== undefined && (model.type !== 'image' || !isName(raw.editModel))) {
    at('editModel', model.type === 'image' ? 'must be a provider model name' : 'only image models have one');
  }
  if (raw.source !== undefined && typeof raw.source !== 'string') at('source', 'must be text');
  if (raw.flagged !== undefined && typeof raw.flagged !== 'boolean') at('flagged', 'must be true or false');

  const keys = new Map<string, string>();
  const claim = (key: string, field: string) => {
    const other = keys.get(key);
    if (other !== undefined) at(field, `key "${key}" is already used by ${other}`);
    keys.set(key, field);
  };
  const input = raw.input;
  if (!isRecord(input)) {
    at('input', 'must be an object naming the provider input keys');
    return problems;
  }
  for (const [name, value] of Object.entries(input)) {
    const field = name as keyof InputShape;
    const path = `input.${name}`;
    if (!SHAPE_FIELDS.includes(field)) {
      at(path, 'unknown field');
      continue;
    }
    if ((model.type === 'image' && VIDEO_ONLY.has(field)) || (model.type === 'video' && IMAGE_ONLY.has(field))) {
      at(path, `not a field of ${model.type} requests`);
      continue;
    }
    if (PLAIN_FIELDS.has(field)) {
      if (typeof value !== 'string' || !KEY.test(value)) at(path, 'must be a provider input key');
      else claim(value, path);
      continue;
    }
    if (!isRecord(value) || typeof value.key !== 'string' || !KEY.test(value.key)) {
      at(`${path}.key`, 'must be a provider input key');
      continue;
    }
    claim(value.key, path);
    const extra = Object.keys(value).filter(
      (k) =>
        k !== 'key' &&
        !(TOKEN_FIELDS.has(field) && k === 'values') &&
        !(NUMBER_FIELDS.has(field) && k === 'format') &&
        !(field === 'referenceImages' && k === 'form'),
    );
    for (const k of extra) at(`${path}.${k}`, 'unknown field');
    if (NUMBER_FIELDS.has(field) && value.format !== 'number' && value.format !== 'string') {
      at(`${path}.format`, 'must be "number" or "string"');
    }
    if (field === 'referenceImages' && value.form !== 'list' && value.form !== 'single') {
      at(`${path}.form`, 'must be "list" or "single"');
    }
    if (TOKEN_FIELDS.has(field) && value.values !== undefined) {
      if (!isRecord(value.values)) {
        at(`${path}.values`, 'must map our tokens to the provider tokens');
        continue;
      }
      const offered = offeredTokens(model, field as 'aspectRatio' | 'resolution');
      for (const token of offered) {
        if (typeof value.values[token] !== 'string' || value.values[token] === '') {
          at(`${path}.values`, `no provider token for "${token}"`);
        }
      }
      for (const token of Object.keys(value.values)) {
        if (!offered.includes(token)) at(`${path}.values.${token}`, `${model.id} does not offer "${token}"`);
      }
    }
  }
  if (typeof input.prompt !== 'string') at('input.prompt', 'required: the key the prompt goes under');
  billedDeclarationProblems(model, input as unknown as InputShape, at);

  if (raw.defaults !== undefined) {
    if (!isRecord(raw.defaults)) at('defaults', 'must be an object of fixed input values');
    else {
      for (const [key, value] of Object.entries(raw.defaults)) {
        if (!KEY.test(key)) at(`defaults.${key}`, 'not a provider input key');
        else if (!['string', 'number', 'boolean'].includes(typeof value)) at(`defaults.${key}`, 'must be a scalar');
        else if (keys.has(key)) at(`defaults.${key}`, `is set from the request (${keys.get(key)})`);
      }
    }
  }
  if (raw.billedAliases !== undefined) {
    if (!isRecord(raw.billedAliases)) at('billedAliases', 'must map billed quantities to key lists');
    else {
      for (const [quantity, aliases] of Object.entries(raw.billedAliases)) {
        if (!QUANTITIES.includes(quantity as BilledQuantity)) at(`billedAliases.${quantity}`, 'unknown quantity');
        else if (!Array.isArray(aliases) || !aliases.every((a) => typeof a === 'string' && KEY.test(a))) {
          at(`billedAliases.${quantity}`, 'must be a list of provider input keys');
        }
      }
    }
  }
  return problems;
}

/**
 * Every quantity the model is priced by, where the price can differ, must have its key: otherwise the
 * upstream would pick its own default and the caller would get something other than what was paid for.
 */
function billedDeclarationProblems(model: Model, input: InputShape, at: (field: string, problem: string) => void) {
  const declared = (field: unknown) => isRecord(field) && typeof field.key === 'string';
  if (model.type === 'image') {
    const tiers = model.pricing.kind === 'tiered' ? model.pricing.tiers.length : 1;
    if (tiers > 1 && !declared(input.resolution)) {
      at(
        'input.resolution',
        `required: ${model.id} is priced by tier (${offeredTokens(model, 'resolution').join(', ')})`,
      );
    }
    return;
  }
  if (model.durations.length > 1 && !declared(input.duration)) {
    at('input.duration', `required: ${model.id} is priced by duration (${model.durations.join(', ')} s)`);
  }
  if (model.resolutions.length > 1 && !declared(input.resolution)) {
    at('input.resolution', `required: ${model.id} is priced by resolution (${model.resolutions.join(', ')})`);
  }
}

/** Problems of a profile's `capacity` (absent is fine). */
function capacityProblems(raw: unknown): string[] {
  if (raw === undefined) return [];
  if (!isRecord(raw)) return ['(profile): capacity: must be { createRateLimit?, maxInFlight? }'];
  const problems: string[] = [];
  for (const field of Object.keys(raw)) {
    if (field !== 'createRateLimit' && field !== 'maxInFlight')
      problems.push(`(profile): capacity.${field}: unknown field`);
  }
  const check = (parse: () => unknown) => {
    try {
      parse();
    } catch (error) {
      problems.push(`(profile): ${(error as Error).message}`);
    }
  };
  if (raw.createRateLimit !== undefined) {
    check(() => parseCreateRateLimit(String(raw.createRateLimit), 'capacity.createRateLimit'));
  }
  if (raw.maxInFlight !== undefined) {
    check(() => parseMaxInFlight(String(raw.maxInFlight), 'capacity.maxInFlight'));
  }
  return problems;
}

/**
 * Every problem of `raw` as a profile: every catalog model mapped, nothing unknown, every billed key
 * declared, every token translated. Empty when it is a valid profile.
 */
export function profileProblems(raw: unknown): string[] {
  if (!isRecord(raw)) return ['(profile): must be an object with name, description and models'];
  const problems: string[] = [];
  for (const field of Object.keys(raw)) {
    if (!['name', 'description', 'models', 'capacity'].includes(field)) {
      problems.push(`(profile): ${field}: unknown field`);
    }
  }
  problems.push(...capacityProblems(raw.capacity));
  if (typeof raw.name !== 'string' || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(raw.name)) {
    problems.push('(profile): name: must be 1-40 lower-case letters, digits and dashes');
  }
  if (raw.description !== undefined && typeof raw.description !== 'string') {
    problems.push('(profile): description: must be text');
  }
  if (!isRecord(raw.models)) return [...problems, '(profile): models: must map every model id to its mapping'];
  for (const model of MODELS) {
    const mapping = raw.models[model.id];
    if (mapping === undefined) problems.push(`${model.id}: (mapping): missing; every model of the catalog needs one`);
    else problems.push(...mappingProblems(model, mapping));
  }
  for (const id of Object.keys(raw.models)) {
    if (!MODELS.some((m) => m.id === id)) problems.push(`${id}: (mapping): not a model of the catalog`);
  }
  return problems;
}

/**
 * `raw` as a profile.
 * @throws ProfileError naming each model and field at fault
 */
export function validateProfile(raw: unknown): ProviderProfile {
  const problems = profileProblems(raw);
  if (problems.length > 0) {
    const name = isRecord(raw) && typeof raw.name === 'string' ? raw.name : '(unnamed)';
    throw new ProfileError(name, problems);
  }
  return raw as unknown as ProviderProfile;
}
