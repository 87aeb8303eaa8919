/**
 * Provider profiles: how one upstream names our models and shapes their input. A profile is plain data
 * (TypeScript or JSON), the ONE place that names provider model names and input keys: the provider
 * request builder reads it to build each call, the price guard reads the billed keys from it, and the
 * mock provider refuses what it does not declare, as a real upstream would.
 *
 * `validateProfile` (validate.ts) runs at synth (lib/config.ts) and when the local stack starts, so a
 * bad profile is a message naming the model and the field, never a refused task. The functions only
 * look profiles up (this file): validating again there would cost request-path bundle bytes.
 */

import type { BilledQuantity } from '../billed-quantity';
import { MODELS, type Model } from '../catalog';

/** How a value travels: JSON number or its decimal text (some upstreams want `"5"`, not `5`). */
export type ValueFormat = 'number' | 'string';

/** A request field sent under `key`, its tokens translated by `values` (absent: sent as they are). */
export interface TokenField {
  readonly key: string;
  /** Our token -> the provider's; when given it must cover every token the model offers. */
  readonly values?: Readonly<Record<string, string>>;
}

/** A numeric quantity sent under `key` in `format`. */
export interface NumberField {
  readonly key: string;
  readonly format: ValueFormat;
}

/**
 * Where the reference images go: `list` sends an array, `single` one URL. Video models send only the
 * first reference image either way (the API's rule); image models send all of them as a list.
 */
export interface ReferenceField {
  readonly key: string;
  readonly form: 'list' | 'single';
}

/**
 * The provider input keys for the request fields. A field without a key is not sent (the model does
 * not take it upstream); `prompt` always has one.
 */
export interface InputShape {
  readonly prompt: string;
  readonly negativePrompt?: string;
  readonly width?: string;
  readonly height?: string;
  readonly aspectRatio?: TokenField;
  readonly seed?: string;
  readonly guidanceScale?: string;
  readonly numInferenceSteps?: string;
  readonly fps?: string;
  readonly motionStrength?: string;
  readonly cameraMotion?: string;
  readonly referenceImages?: ReferenceField;
  /** Billed: the number of images. Absent: the model makes one image per task (numOutputs must be 1). */
  readonly outputCount?: NumberField;
  /** Billed: the priced tier (images) or resolution (videos), translated by `values`. */
  readonly resolution?: TokenField;
  /** Billed: the priced duration in seconds (videos). */
  readonly duration?: NumberField;
}

/** One model of our catalog as the upstream knows it. */
export interface ModelMapping {
  /** The provider's model name. */
  readonly model: string;
  /** Image models: the provider's model name when `inputImageUrls` is present (a separate edit model). */
  readonly editModel?: string;
  readonly input: InputShape;
  /** Fixed input values sent with every call of this model (e.g. an output format); the request wins. */
  readonly defaults?: Readonly<Record<string, string | number | boolean>>;
  /**
   * More spellings the upstream reads for a billed quantity, on top of the keys in `input` and the
   * general list of `billed-keys.ts`; the price guard refuses them in `providerInput` unless they
   * repeat the priced value.
   */
  readonly billedAliases?: Readonly<Partial<Record<BilledQuantity, readonly string[]>>>;
  /**
   * Where this mapping comes from (a documentation page), or why it is a guess. Only in JSON profiles;
   * the shipped ones say it in comments, which cost the bundles nothing.
   */
  readonly source?: string;
  /** True when the upstream's documentation did not cover this model and the mapping is a stand-in. */
  readonly flagged?: boolean;
}

export interface ProviderProfile {
  /** Lower-case name chosen by configuration (`providerProfile`, `PROVIDER_PROFILE`). */
  readonly name: string;
  /** What upstream this is (JSON profiles; the shipped ones say it in comments). */
  readonly description?: string;
  /** Every model id of the catalog, and nothing else. */
  readonly models: Readonly<Record<string, ModelMapping>>;
  /**
   * The upstream's declared capacity (docs/design/dispatching.md): `createRateLimit` as
   * `<requests>/<seconds>` (Kie.ai: `20/10`), `maxInFlight` where it caps tasks running at once.
   * Absent: none declared. A deployment overrides it (`providerCreateRateLimit`, `providerMaxInFlight`).
   */
  readonly capacity?: { readonly createRateLimit?: string; readonly maxInFlight?: number };
}

/** A profile that failed validation; the message lists every problem as `model: field: problem`. */
export class ProfileError extends Error {
  override readonly name = 'ProfileError';
  constructor(
    readonly profile: string,
    readonly problems: readonly string[],
  ) {
    super(`Provider profile "${profile}" is invalid:\n  - ${problems.join('\n  - ')}`);
  }
}

/** The mapping of one (validated) model id. */
export function mappingOf(profile: ProviderProfile, modelId: string): ModelMapping {
  const mapping = profile.models[modelId];
  // Cannot happen with a validated profile; the id alone says enough.
  if (mapping === undefined) throw new RangeError(modelId);
  return mapping;
}

/**
 * The catalog models (and kind of call) a provider model name stands for in `profile`; several when the
 * profile maps more than one of our models to the same upstream model.
 */
export function mappingsOfProviderName(
  profile: ProviderProfile,
  providerModel: string,
): { model: Model; mapping: ModelMapping; edit: boolean }[] {
  const found: { model: Model; mapping: ModelMapping; edit: boolean }[] = [];
  for (const model of MODELS) {
    const mapping = profile.models[model.id];
    if (mapping?.model === providerModel) found.push({ model, mapping, edit: false });
    if (mapping?.editModel === providerModel) found.push({ model, mapping, edit: true });
  }
  return found;
}
