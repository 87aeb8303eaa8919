/**
 * The provider profile of this process: `PROVIDER_PROFILE_JSON` (a custom profile) or the shipped
 * profile named by `PROVIDER_PROFILE` (default `mock`).
 *
 * Deployed, both are fixed at build time (esbuild `define`, lib/bundle-options.ts): the comparisons
 * below then fold to constants and the profiles not chosen are dropped from the bundle, which keeps the
 * submit functions within their size budget. Both were validated at synth; locally the stack validates
 * before it starts, so here only the name is checked (not the profile again, whose validation code
 * would weigh on the bundles).
 */
import { KIE_PROFILE } from '../core/profiles/kie';
import { MOCK_PROFILE } from '../core/profiles/mock';
import type { ProviderProfile } from '../core/profiles/profile';

let cached: { json: string; profile: ProviderProfile } | undefined;

/**
 * The profile the environment names.
 * @throws Error when `PROVIDER_PROFILE` names no shipped profile (a plain Error: the ProfileError class
 *   would cost the bundle bytes for a message this short)
 */
export function providerProfileFromEnv(): ProviderProfile {
  // Read as `process.env.X` literally, every time: esbuild's define replaces exactly those expressions
  // (build-time variables of the contract, functions/environment/environment.ts).
  const json = process.env.PROVIDER_PROFILE_JSON;
  if (json) {
    if (cached?.json !== json) cached = { json, profile: parseProfile(json) };
    return cached.profile;
  }
  if (process.env.PROVIDER_PROFILE === 'kie') return KIE_PROFILE;
  if (process.env.PROVIDER_PROFILE === 'mock' || !process.env.PROVIDER_PROFILE) return MOCK_PROFILE;
  throw new Error(
    `PROVIDER_PROFILE "${process.env.PROVIDER_PROFILE}" names no shipped profile (mock, kie); a custom profile comes as PROVIDER_PROFILE_JSON`,
  );
}

/** Validated at synth (deployed) or by the local stack before it starts; here it is only read. */
function parseProfile(json: string): ProviderProfile {
  return JSON.parse(json) as ProviderProfile;
}
