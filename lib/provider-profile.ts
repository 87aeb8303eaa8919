/**
 * Resolving a provider profile setting (`providerProfile` at synth, `PROVIDER_PROFILE` for the local
 * stack): a shipped profile's name, or the path of a JSON profile for another upstream. Kept apart from
 * lib/config.ts so the local stack can use it without loading the CDK.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ProfileError, type ProviderProfile, profileFromJson, shippedProfile } from '../functions/core/profiles';

/** A validated provider profile and, for a custom one, its JSON text (handed to the functions). */
export interface ResolvedProfile {
  profile: ProviderProfile;
  /** Set for a JSON profile: deployed, the functions get it at build time (`PROVIDER_PROFILE_JSON`). */
  json?: string;
}

/** A profile setting that names no valid profile; the message starts with the setting's name. */
export class ProfileSettingError extends Error {
  override readonly name = 'ProfileSettingError';
}

/**
 * The profile `value` names: a shipped one, or a JSON file (relative to `cwd`) when it ends in `.json`.
 * @throws ProfileSettingError naming the setting, and the model and field of every problem
 */
export function resolveProfileSetting(value: string, cwd: string, setting: string): ResolvedProfile {
  try {
    if (!value.endsWith('.json')) return { profile: shippedProfile(value) };
    const file = path.resolve(cwd, value);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      throw new ProfileSettingError(`${setting}: cannot read ${file}: ${(error as Error).message}`);
    }
    const profile = profileFromJson(text, value);
    // Compact, so the bundles carry no whitespace.
    return { profile, json: JSON.stringify(profile) };
  } catch (error) {
    if (error instanceof ProfileError) throw new ProfileSettingError(`${setting}: ${error.message}`);
    throw error;
  }
}
