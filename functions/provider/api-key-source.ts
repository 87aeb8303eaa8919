/**
 * Where the provider key comes from: the environment locally, AWS Secrets Manager when deployed.
 *
 * Secrets Manager is called with a SigV4-signed `fetch` rather than `@aws-sdk/client-secrets-manager`
 * to keep the Lambda bundles small (they are measured against a DynamoDB-client-only floor).
 */

import { getSecretString } from '../aws/secrets-manager';
import { type Env, PROVIDER_API_KEY, PROVIDER_SECRET_ARN, readEnv } from '../environment/environment';

/** How long a key read from Secrets Manager is reused, so a rotation reaches warm containers. */
export const PROVIDER_KEY_CACHE_MS = 5 * 60 * 1000;

export interface ApiKeySourceOptions {
  /** Injected for tests; defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** Clock for the cache, injected for tests. */
  now?: () => number;
  /**
   * The key or its secret given directly (one upstream of an upstreams list), in place of
   * `PROVIDER_API_KEY` / `PROVIDER_SECRET_ARN`; the environment still gives the region and credentials.
   */
  source?: { apiKey?: string; secretId?: string };
}

/**
 * The provider key source for this process.
 *
 * - `PROVIDER_API_KEY`: the key itself (local stack, tests). Takes precedence.
 * - `PROVIDER_SECRET_ARN`: the secret holding the key, read with `secretsmanager:GetSecretValue` and
 *   cached in memory for 5 minutes; concurrent callers share one read and failures are not cached.
 *   The secret string is either the key itself or a JSON object with an `apiKey` field.
 * - Region from `AWS_REGION` (or `AWS_DEFAULT_REGION`); credentials from `AWS_ACCESS_KEY_ID`,
 *   `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (what Lambda provides); endpoint overridable with
 *   `AWS_ENDPOINT_URL_SECRETS_MANAGER` or `AWS_ENDPOINT_URL` (LocalStack).
 *
 * @throws Error at creation when neither variable is set: a deployment error that should be loud.
 */
export function providerApiKeyFromEnv(env?: Env, options: ApiKeySourceOptions = {}): () => Promise<string> {
  const plain = options.source ? options.source.apiKey : readEnv(PROVIDER_API_KEY, env);
  if (plain) return async () => plain;

  const secretId = options.source ? options.source.secretId : readEnv(PROVIDER_SECRET_ARN, env);
  if (!secretId) throw new Error('Provider key not configured: set PROVIDER_API_KEY or PROVIDER_SECRET_ARN');

  const now = options.now ?? Date.now;
  let cached: { value: string; expiresAt: number } | undefined;
  let inFlight: Promise<string> | undefined;

  return async () => {
    if (cached && now() < cached.expiresAt) return cached.value;
    if (!inFlight) {
      inFlight = readSecret(secretId, env, options.fetch ?? fetch)
        .then((value) => {
          cached = { value, expiresAt: now() + PROVIDER_KEY_CACHE_MS };
          return value;
        })
        .finally(() => {
          inFlight = undefined;
        });
    }
    return inFlight;
  };
}

async function readSecret(secretId: string, env: Env | undefined, doFetch: typeof fetch): Promise<string> {
  return keyFromSecretString(await getSecretString(secretId, env, doFetch));
}

function keyFromSecretString(secretString: string): string {
  const trimmed = secretString.trim();
  if (!trimmed.startsWith('{')) return trimmed;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    // Not JSON after all: the whole string is the key.
    return trimmed;
  }
  if (typeof value === 'object' && value !== null && 'apiKey' in value && typeof value.apiKey === 'string') {
    if (value.apiKey.length > 0) return value.apiKey;
  }
  throw new Error('Provider secret is JSON without a non-empty "apiKey" field');
}
