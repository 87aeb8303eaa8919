/**
 * Wires the lifecycle's parts from the environment, once per Lambda container (or once per local
 * stack process). The deployed stack and `npm start` set the same variables.
 */

import { MAX_PRESIGNED_URL_SECONDS, MAX_TEMPORARY_CREDENTIALS_URL_SECONDS } from '../aws/signer';
import type { LifecycleConfig } from '../core/lifecycle';
import {
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_S3,
  AWS_REGION,
  AWS_SESSION_TOKEN,
  type Env,
  MEDIA_BASE_URL,
  MEDIA_BUCKET,
  MEDIA_DIR,
  MEDIA_URL_TTL_SECONDS,
  PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS,
  readEnv,
} from '../environment/environment';
import type { Lifecycle } from '../lifecycle/lifecycle';
import { createFsMediaUrls } from '../media/fs-media-urls';
import type { MediaUrls } from '../media/port';
import { createS3MediaUrls } from '../media/s3-media-urls';
import {
  providerLifecycleFromEnv,
  resetProviderLifecycleFromEnv,
  withMaxInFlightFromEnv,
} from './provider-lifecycle-from-env';
import { upstreamsFromEnv } from './upstreams-from-env';

export { lifecycleConfigFromEnv } from './provider-lifecycle-from-env';

/**
 * The signed URL lifetime, MEDIA_URL_TTL_SECONDS (default 3600), checked against the credentials that
 * will sign: with a session token (a Lambda role) at most one hour, since the URL dies with the
 * session; with long-term keys at most SigV4's seven days.
 * @throws Error when the value is not an integer in range: a deployment error that should be loud
 */
export function mediaUrlTtlSecondsFromEnv(env?: Env): number {
  const ttl = readEnv(MEDIA_URL_TTL_SECONDS, env) ?? 3600;
  const temporary = readEnv(AWS_SESSION_TOKEN, env) !== undefined;
  const max = temporary ? MAX_TEMPORARY_CREDENTIALS_URL_SECONDS : MAX_PRESIGNED_URL_SECONDS;
  if (ttl > max) {
    const why = temporary ? ' (URLs signed with temporary credentials die with the session)' : '';
    throw new Error(`MEDIA_URL_TTL_SECONDS must be an integer from 1 to ${max}${why}`);
  }
  return ttl;
}

/** Where this environment stores results (S3 deployed, the filesystem locally), or why it names none. */
export type MediaSettings =
  | { kind: 's3'; bucket: string; region: string; urlTtlSeconds: number; endpoint: string | undefined }
  | { kind: 'fs'; dir: string; publicBaseUrl: string };

/**
 * The result storage this environment names: MEDIA_BUCKET (AWS), or MEDIA_DIR and MEDIA_BASE_URL (local).
 * @throws Error when neither is set: a deployment error that should be loud
 */
export function mediaSettingsFromEnv(env?: Env): MediaSettings {
  const bucket = readEnv(MEDIA_BUCKET, env);
  if (bucket) {
    return {
      kind: 's3',
      bucket,
      region: readEnv(AWS_REGION, env) ?? 'us-east-1',
      urlTtlSeconds: mediaUrlTtlSecondsFromEnv(env),
      endpoint: readEnv(AWS_ENDPOINT_URL_S3, env) ?? readEnv(AWS_ENDPOINT_URL, env),
    };
  }
  const dir = readEnv(MEDIA_DIR, env);
  const publicBaseUrl = readEnv(MEDIA_BASE_URL, env);
  if (dir && publicBaseUrl) return { kind: 'fs', dir, publicBaseUrl };
  throw new Error('Set MEDIA_BUCKET (AWS) or MEDIA_DIR and MEDIA_BASE_URL (local) for result storage');
}

/**
 * The result URLs of this environment's media store: all the API functions need, as they copy nothing
 * (the media worker and the sweeper do, worker-lifecycle-from-env.ts), so their bundles leave the copying
 * code out.
 */
export function mediaUrlsFromEnv(env?: Env): MediaUrls {
  const settings = mediaSettingsFromEnv(env);
  if (settings.kind === 'fs') return createFsMediaUrls(settings);
  const { endpoint, ...rest } = settings;
  return createS3MediaUrls({ ...rest, endpoint, forcePathStyle: Boolean(endpoint) });
}

/**
 * `config` with the limit on an unknown create outcome (`PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS`) when
 * set: read by the functions that refresh tasks (GET, the sweeper, the callback), not in
 * `lifecycleConfigFromEnv`, so the submit functions, which refresh none, do not bundle it.
 */
export function withUnknownOutcomeLimitFromEnv(config: LifecycleConfig, env?: Env): LifecycleConfig {
  const seconds = readEnv(PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS, env);
  return seconds === undefined ? config : { ...config, unknownOutcomeLimitMs: seconds * 1000 };
}

let cached: Lifecycle | undefined;

/**
 * The whole lifecycle for this process (the submit wiring plus result URLs), built on first use so a
 * cold start pays only for what it uses.
 */
export function lifecycleFromEnv(env?: Env): Lifecycle {
  if (cached) return cached;
  const base = providerLifecycleFromEnv(env);
  const config = withUnknownOutcomeLimitFromEnv(withMaxInFlightFromEnv(base.config, env), env);
  const upstreams = upstreamsFromEnv(env);
  cached = { ...base, config, media: mediaUrlsFromEnv(env), ...(upstreams ? { upstreams } : {}) };
  return cached;
}

/** Forgets the wiring (the local stack and tests change the environment between runs). */
export function resetLifecycleFromEnv(): void {
  cached = undefined;
  resetProviderLifecycleFromEnv();
}
