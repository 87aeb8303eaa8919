/**
 * The provider profile of this process: `PROVIDER_PROFILE_JSON` (a custom profile; deployed it is fixed
 * at build time, see lib/generation-function.ts) or the shipped profile named by `PROVIDER_PROFILE`
 * (default `mock`). Validated on first use, which the submit functions make when they load, so a bad
 * profile stops the function at start with a message naming the model and field.
 */
import { DEFAULT_PROFILE_NAME, type ProviderProfile, profileFromJson, shippedProfile } from '../core/profiles';

let cached: { source: string; profile: ProviderProfile } | undefined;

/**
 * The validated profile.
 * @throws ProfileError naming each model and field at fault
 */
export function providerProfileFromEnv(env: NodeJS.ProcessEnv = process.env): ProviderProfile {
  // Read as `process.env.PROVIDER_PROFILE_JSON` literally: esbuild's define replaces that expression.
  const json = env === process.env ? process.env.PROVIDER_PROFILE_JSON : env.PROVIDER_PROFILE_JSON;
  const source = json ? `json:${json}` : `name:${env.PROVIDER_PROFILE || DEFAULT_PROFILE_NAME}`;
  if (cached?.source === source) return cached.profile;
  const profile = json
    ? profileFromJson(json, 'PROVIDER_PROFILE_JSON')
    : shippedProfile(env.PROVIDER_PROFILE || DEFAULT_PROFILE_NAME);
  cached = { source, profile };
  return profile;
}
