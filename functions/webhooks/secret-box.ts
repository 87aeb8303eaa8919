/**
 * Per-account webhook signing secrets, kept encrypted. Signing needs the secret itself, so a hash
 * (as for API keys) cannot be stored; instead each secret is sealed with AES-256-GCM under a service
 * key, with the account id as additional data (a sealed secret copied onto another account does not
 * open). The table, its backups and its stream only ever hold the sealed form.
 *
 * The service key follows the provider callback secret (`provider/callback-secret.ts`): deployed, a
 * generated Secrets Manager secret (`WEBHOOK_SECRETS_KEY_ARN`) that only the webhook worker and the
 * operator read (cached five minutes); locally `WEBHOOK_SECRETS_KEY` itself, which `npm start`
 * generates once into its data directory. Why not KMS per secret: the same code then runs locally
 * and deployed (there is no KMS locally), and the worker needs one `GetSecretValue` per five minutes
 * instead of one `Decrypt` per attempt. The AES key is derived from the secret's text with HKDF, so
 * any long random string (as Secrets Manager generates) works.
 */

import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { getSecretString } from '../aws/secrets-manager';
import { type Env, readEnv, WEBHOOK_SECRETS_KEY, WEBHOOK_SECRETS_KEY_ARN } from '../environment/environment';

const KEY_CACHE_MS = 5 * 60 * 1000;
/** Shorter service keys are refused: the sealing is only as strong as the key. */
const MIN_KEY_LENGTH = 32;
/** The sealed form's version tag: a new key scheme would be `v2`, read next to `v1`. */
const VERSION = 'v1';

/** Seals and opens account secrets. */
export interface SecretBox {
  /** The sealed form of `secret` for `userId` (`v1.<iv>.<ciphertext>.<tag>`, base64url parts). */
  seal(userId: string, secret: string): Promise<string>;
  /**
   * The secret sealed for `userId`.
   * @throws Error when it was sealed for another account, under another key, or altered
   */
  open(userId: string, sealed: string): Promise<string>;
}

function aesKey(serviceKey: string): Buffer {
  const text = serviceKey.trim();
  if (text.length < MIN_KEY_LENGTH) {
    throw new Error(`The webhook secrets key must be at least ${MIN_KEY_LENGTH} characters`);
  }
  return Buffer.from(hkdfSync('sha256', text, '', 'generation-service webhook secrets v1', 32));
}

function additionalData(userId: string): Buffer {
  return Buffer.from(`webhook-secret\n${userId}`);
}

/** A box over a key source (tests and the CLI pass a fixed key). */
export function createSecretBox(serviceKey: () => Promise<string>): SecretBox {
  return {
    async seal(userId, secret) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', aesKey(await serviceKey()), iv);
      cipher.setAAD(additionalData(userId));
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return [VERSION, iv, sealed, cipher.getAuthTag()]
        .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
        .join('.');
    },
    async open(userId, sealed) {
      const [version, iv, data, tag] = sealed.split('.');
      if (version !== VERSION || !iv || !data || !tag) throw new Error('Not a sealed webhook secret');
      const decipher = createDecipheriv('aes-256-gcm', aesKey(await serviceKey()), Buffer.from(iv, 'base64url'));
      decipher.setAAD(additionalData(userId));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * The box of this process: `WEBHOOK_SECRETS_KEY` itself, or the Secrets Manager secret
 * `WEBHOOK_SECRETS_KEY_ARN`; undefined when neither is set (webhooks are then off).
 */
export function secretBoxFromEnv(
  env?: Env,
  doFetch: typeof fetch = fetch,
  now: () => number = Date.now,
): SecretBox | undefined {
  const plain = readEnv(WEBHOOK_SECRETS_KEY, env);
  const secretId = readEnv(WEBHOOK_SECRETS_KEY_ARN, env);
  if (plain) return createSecretBox(async () => plain);
  if (!secretId) return undefined;
  let cached: { value: string; expiresAt: number } | undefined;
  let inFlight: Promise<string> | undefined;
  return createSecretBox(async () => {
    if (cached && now() < cached.expiresAt) return cached.value;
    inFlight ??= getSecretString(secretId, env, doFetch)
      .then((value) => {
        cached = { value, expiresAt: now() + KEY_CACHE_MS };
        return value;
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  });
}
