/**
 * The service secret that signs provider callback URLs: `PROVIDER_CALLBACK_SECRET` itself (the local
 * stack generates one and keeps it in its data directory; tests), or `PROVIDER_CALLBACK_SECRET_ARN`,
 * read from Secrets Manager (deployed) and cached for five minutes, so a rotation reaches warm containers.
 */

import { getSecretString } from '../aws/secrets-manager';
import { callbackSignatureMatches, callbackUrl, upstreamCallbackSecret } from '../core/callback-signature';
import {
  type Env,
  PROVIDER_CALLBACK_BASE_URL,
  PROVIDER_CALLBACK_SECRET,
  PROVIDER_CALLBACK_SECRET_ARN,
  readEnv,
} from '../environment/environment';

const CALLBACK_SECRET_CACHE_MS = 5 * 60 * 1000;
/** Shorter secrets are refused: the signature is only as strong as the secret. */
const MIN_SECRET_LENGTH = 32;

/** Makes and checks the callback URLs of tasks. */
export interface ProviderCallbacks {
  /**
   * The URL the provider calls when the task ends; with `upstream` (an upstreams list), signed with that
   * upstream's own key and naming it (`up=`).
   */
  urlFor(userId: string, taskId: string, upstream?: string): Promise<string>;
  /** Whether `signature` was made by `urlFor` for this task and upstream (constant time). */
  verify(userId: string, taskId: string, signature: string, upstream?: string): Promise<boolean>;
}

function checkedSecret(secret: string): string {
  const value = secret.trim();
  if (value.length < MIN_SECRET_LENGTH) {
    throw new Error(`The provider callback secret must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  return value;
}

/**
 * The callbacks of this process, or undefined when callbacks are off: `PROVIDER_CALLBACK_BASE_URL`
 * (the public origin the provider can reach) unset. Tasks are then found finished by polling only.
 * @throws Error when the base URL is set but no secret is configured: a deployment error that should be loud
 */
export function providerCallbacksFromEnv(
  env?: Env,
  doFetch: typeof fetch = fetch,
  now: () => number = Date.now,
): ProviderCallbacks | undefined {
  const baseUrl = readEnv(PROVIDER_CALLBACK_BASE_URL, env);
  if (!baseUrl) return undefined;
  const plain = readEnv(PROVIDER_CALLBACK_SECRET, env);
  const secretId = readEnv(PROVIDER_CALLBACK_SECRET_ARN, env);
  if (!plain && !secretId) {
    throw new Error(
      'PROVIDER_CALLBACK_BASE_URL is set without PROVIDER_CALLBACK_SECRET or PROVIDER_CALLBACK_SECRET_ARN',
    );
  }
  let cached: { value: string; expiresAt: number } | undefined;
  let inFlight: Promise<string> | undefined;
  const secret = async (): Promise<string> => {
    if (plain) return checkedSecret(plain);
    if (cached && now() < cached.expiresAt) return cached.value;
    inFlight ??= getSecretString(secretId ?? '', env, doFetch)
      .then((value) => {
        const checked = checkedSecret(value);
        cached = { value: checked, expiresAt: now() + CALLBACK_SECRET_CACHE_MS };
        return checked;
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
  const keyOf = async (upstream: string | undefined) =>
    upstream === undefined ? secret() : upstreamCallbackSecret(await secret(), upstream);
  return {
    urlFor: async (userId, taskId, upstream) => callbackUrl(baseUrl, await keyOf(upstream), userId, taskId, upstream),
    verify: async (userId, taskId, signature, upstream) =>
      callbackSignatureMatches(await keyOf(upstream), userId, taskId, signature),
  };
}
