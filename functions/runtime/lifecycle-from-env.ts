/**
 * Wires the lifecycle's parts from the environment, once per Lambda container (or once per local
 * stack process). The deployed stack and `npm start` set the same variables.
 */
import { MAX_PRESIGNED_URL_SECONDS, MAX_TEMPORARY_CREDENTIALS_URL_SECONDS } from '../aws/signer';
import { DEFAULT_LIFECYCLE_CONFIG, type LifecycleConfig } from '../core/lifecycle';
import type { Lifecycle } from '../lifecycle/lifecycle';
import { createFsMediaStore } from '../media/fs-media-store';
import type { MediaStore } from '../media/port';
import { createS3MediaStore } from '../media/s3-media-store';
import { sourcePolicyFromEnv } from '../media/source-policy';
import { providerApiKeyFromEnv } from '../provider/api-key-source';
import { createHttpProvider } from '../provider/http-provider';
import { storeFromEnv } from '../store/from-env';

function seconds(value: string | undefined, fallbackMs: number): number {
  const parsed = Number(value);
  return value !== undefined && Number.isFinite(parsed) && parsed >= 0 ? parsed * 1000 : fallbackMs;
}

/**
 * Lifecycle timings from PROVIDER_REFRESH_INTERVAL_SECONDS, MAX_PENDING_SECONDS,
 * PROVIDER_MAX_SEND_ATTEMPTS, and RESULT_RETENTION_DAYS (the media bucket's expiry; unset locally,
 * where results are kept).
 * @throws Error when RESULT_RETENTION_DAYS is set but not a positive integer
 */
export function lifecycleConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LifecycleConfig {
  const attempts = Number(env.PROVIDER_MAX_SEND_ATTEMPTS);
  const config: LifecycleConfig = {
    refreshIntervalMs: seconds(env.PROVIDER_REFRESH_INTERVAL_SECONDS, DEFAULT_LIFECYCLE_CONFIG.refreshIntervalMs),
    maxPendingMs: seconds(env.MAX_PENDING_SECONDS, DEFAULT_LIFECYCLE_CONFIG.maxPendingMs),
    maxSendAttempts: Number.isInteger(attempts) && attempts > 0 ? attempts : DEFAULT_LIFECYCLE_CONFIG.maxSendAttempts,
  };
  if (env.RESULT_RETENTION_DAYS !== undefined && env.RESULT_RETENTION_DAYS !== '') {
    const days = Number(env.RESULT_RETENTION_DAYS);
    if (!Number.isInteger(days) || days < 1) throw new Error('RESULT_RETENTION_DAYS must be a positive integer');
    config.resultRetentionDays = days;
  }
  return config;
}

/**
 * The signed URL lifetime, MEDIA_URL_TTL_SECONDS (default 3600), checked against the credentials that
 * will sign: with a session token (a Lambda role) at most one hour, since the URL dies with the
 * session; with long-term keys at most SigV4's seven days.
 * @throws Error when the value is not an integer in range: a deployment error that should be loud
 */
export function mediaUrlTtlSecondsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.MEDIA_URL_TTL_SECONDS;
  const ttl = text === undefined || text === '' ? 3600 : Number(text);
  const max = env.AWS_SESSION_TOKEN ? MAX_TEMPORARY_CREDENTIALS_URL_SECONDS : MAX_PRESIGNED_URL_SECONDS;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > max) {
    const why = env.AWS_SESSION_TOKEN ? ' (URLs signed with temporary credentials die with the session)' : '';
    throw new Error(`MEDIA_URL_TTL_SECONDS must be an integer from 1 to ${max}${why}`);
  }
  return ttl;
}

/**
 * A result copy must end inside the API Lambda's 29 s (a GET may do it), leaving time to record the
 * outcome; MEDIA_COPY_TIMEOUT_MS overrides it. A copy cut short fails the task with STORAGE_ERROR.
 */
const DEFAULT_MEDIA_COPY_TIMEOUT_MS = 20_000;

function mediaFromEnv(env: NodeJS.ProcessEnv): MediaStore {
  const timeoutMs = Number(env.MEDIA_COPY_TIMEOUT_MS) || DEFAULT_MEDIA_COPY_TIMEOUT_MS;
  const sourcePolicy = sourcePolicyFromEnv(env);
  if (env.MEDIA_BUCKET) {
    return createS3MediaStore({
      bucket: env.MEDIA_BUCKET,
      region: env.AWS_REGION ?? 'us-east-1',
      urlTtlSeconds: mediaUrlTtlSecondsFromEnv(env),
      endpoint: env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL,
      forcePathStyle: Boolean(env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL),
      timeoutMs,
      sourcePolicy,
    });
  }
  if (env.MEDIA_DIR && env.MEDIA_BASE_URL) {
    return createFsMediaStore({ dir: env.MEDIA_DIR, publicBaseUrl: env.MEDIA_BASE_URL, timeoutMs, sourcePolicy });
  }
  throw new Error('Set MEDIA_BUCKET (AWS) or MEDIA_DIR and MEDIA_BASE_URL (local) for result storage');
}

let cached: Lifecycle | undefined;

/** The lifecycle for this process, built on first use so a cold start pays only for what it uses. */
export function lifecycleFromEnv(env: NodeJS.ProcessEnv = process.env): Lifecycle {
  if (cached) return cached;
  const baseUrl = env.PROVIDER_BASE_URL;
  if (!baseUrl) throw new Error('PROVIDER_BASE_URL is not set');
  cached = {
    store: storeFromEnv(env),
    provider: createHttpProvider({
      baseUrl,
      apiKey: providerApiKeyFromEnv(env),
      timeoutMs: Number(env.PROVIDER_TIMEOUT_MS) || 5000,
    }),
    media: mediaFromEnv(env),
    config: lifecycleConfigFromEnv(env),
    now: () => new Date(),
  };
  return cached;
}

/** Forgets the wiring (the local stack and tests change the environment between runs). */
export function resetLifecycleFromEnv(): void {
  cached = undefined;
}
