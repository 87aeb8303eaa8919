/**
 * The caller's address behind the dashboard's CloudFront distribution. There, API Gateway's `sourceIp`
 * is a CloudFront edge server, so allowlists and audit entries would see CloudFront instead of the
 * customer. The distribution therefore sends two headers to the API: `X-Viewer-Address`, written by a
 * CloudFront Function from the viewer's address (overwriting anything the viewer sent), and
 * `X-Origin-Verify`, an origin custom header holding a secret only CloudFront and the authorizer know
 * (Secrets Manager). The viewer address is believed only next to the right secret, compared in
 * constant time; any other request (a direct call to the API, a forged header) is judged on `sourceIp`.
 *
 * The authorizer resolves the address once and hands it to the handlers in its context (`callerIp`),
 * which callers cannot set; so only the authorizer and sign-in read the secret.
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { getSecretString } from '../aws/secrets-manager';
import { type Env, ORIGIN_VERIFY_SECRET_ARN, readEnv } from '../environment/environment';

/** Written by the distribution's viewer-request function; trusted only with {@link ORIGIN_VERIFY_HEADER}. */
export const VIEWER_ADDRESS_HEADER = 'x-viewer-address';
/** The origin custom header the distribution adds; its value is the origin-verify secret. */
export const ORIGIN_VERIFY_HEADER = 'x-origin-verify';

type Headers = Readonly<Record<string, string | undefined>> | null | undefined;

function header(headers: Headers, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers ?? {})) if (key.toLowerCase() === name) return value;
  return undefined;
}

function sameSecret(given: string, secret: string): boolean {
  // Hashing first gives equal lengths, so the comparison time says nothing about the secret.
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(secret));
}

/**
 * The address to judge and record a request by: the viewer address CloudFront vouched for, else API
 * Gateway's `sourceIp`. `originSecret` undefined (no distribution, the local stack) means `sourceIp`.
 */
export function callerAddress(sourceIp: string | undefined, headers: Headers, originSecret: string | undefined) {
  if (!originSecret) return sourceIp;
  const verify = header(headers, ORIGIN_VERIFY_HEADER);
  const viewer = header(headers, VIEWER_ADDRESS_HEADER)?.trim();
  if (verify === undefined || viewer === undefined || !sameSecret(verify, originSecret)) return sourceIp;
  return isIP(viewer) ? viewer : sourceIp;
}

/** How long a warm function keeps the secret before reading it again (a rotation is seen within this). */
const SECRET_CACHE_MS = 5 * 60_000;

/**
 * The origin-verify secret from `ORIGIN_VERIFY_SECRET_ARN`, read at most every five minutes; undefined
 * where there is no distribution (the variable is unset).
 */
export function originSecretFromEnv(
  env?: Env,
  read: (secretId: string) => Promise<string> = (secretId) => getSecretString(secretId, env),
): () => Promise<string | undefined> {
  const secretId = readEnv(ORIGIN_VERIFY_SECRET_ARN, env);
  let cached: { value: string; until: number } | undefined;
  return async () => {
    if (!secretId) return undefined;
    if (cached && cached.until > Date.now()) return cached.value;
    const value = await read(secretId);
    cached = { value, until: Date.now() + SECRET_CACHE_MS };
    return value;
  };
}
