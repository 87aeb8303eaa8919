/**
 * The shipped provider profiles, by name (`providerProfile` in cdk.json, `PROVIDER_PROFILE` locally).
 * Another upstream's profile is a JSON file of the same shape, named by its path instead
 * (docs/guides/provider.md).
 */

import { KIE_PROFILE } from './kie';
import { MOCK_PROFILE } from './mock';
import { ProfileError, type ProviderProfile } from './profile';
import { validateProfile } from './validate';

/** Profiles bundled with the functions. */
export const SHIPPED_PROFILES: Readonly<Record<string, ProviderProfile>> = {
  [MOCK_PROFILE.name]: MOCK_PROFILE,
  [KIE_PROFILE.name]: KIE_PROFILE,
};

/** The local default. */
export const DEFAULT_PROFILE_NAME = MOCK_PROFILE.name;

/**
 * The shipped profile called `name`, validated.
 * @throws ProfileError when there is no such profile or it is invalid
 */
export function shippedProfile(name: string): ProviderProfile {
  const profile = Object.hasOwn(SHIPPED_PROFILES, name) ? SHIPPED_PROFILES[name] : undefined;
  if (profile === undefined) {
    throw new ProfileError(name, [
      `(profile): no shipped profile is called "${name}"; use one of ${Object.keys(SHIPPED_PROFILES).join(', ')} or the path of a JSON profile`,
    ]);
  }
  return validateProfile(profile);
}

/**
 * A profile from JSON text (a custom profile for another upstream), validated.
 * @throws ProfileError when the text is not JSON or not a valid profile
 */
export function profileFromJson(text: string, origin: string): ProviderProfile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ProfileError(origin, [`(profile): not JSON (${(error as Error).message})`]);
  }
  return validateProfile(raw);
}

export { KIE_PROFILE } from './kie';
export { MOCK_PROFILE } from './mock';
export * from './profile';
export * from './validate';
