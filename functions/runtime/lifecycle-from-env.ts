/**
 * Wires the lifecycle's parts from the environment, once per Lambda container (or once per local
 * stack process). The deployed stack and `npm start` set the same variables.
 */
import { DEFAULT_LIFECYCLE_CONFIG, type LifecycleConfig } from '../core/lifecycle';
import type { Lifecycle } from '../lifecycle/lifecycle';
import { createFsMediaStore } from '../media/fs-media-store';
import type { MediaStore } from '../media/port';
import { createS3MediaStore } from '../media/s3-media-store';
import { providerApiKeyFromEnv } from '../provider/api-key-source';
import { createHttpProvider } from '../provider/http-provider';
import { storeFromEnv } from '../store/from-env';

function seconds(value: string | undefined, fallbackMs: number): number {
  const parsed = Number(value);
  return value !== undefined && Number.isFinite(parsed) && parsed >= 0 ? parsed * 1000 : fallbackMs;
}

/** Lifecycle timings from PROVIDER_REFRESH_INTERVAL_SECONDS, MAX_PENDING_SECONDS, PROVIDER_MAX_SEND_ATTEMPTS. */
export function lifecycleConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LifecycleConfig {
  const attempts = Number(env.PROVIDER_MAX_SEND_ATTEMPTS);
  return {
    refreshIntervalMs: seconds(env.PROVIDER_REFRESH_INTERVAL_SECONDS, DEFAULT_LIFECYCLE_CONFIG.refreshIntervalMs),
    maxPendingMs: seconds(env.MAX_PENDING_SECONDS, DEFAULT_LIFECYCLE_CONFIG.maxPendingMs),
    maxSendAttempts: Number.isInteger(attempts) && attempts > 0 ? attempts : DEFAULT_LIFECYCLE_CONFIG.maxSendAttempts,
  };
}

/**
 * A result copy must end inside the API Lambda's 29 s (a GET may do it), leaving time to record the
 * outcome; MEDIA_COPY_TIMEOUT_MS overrides it. A copy cut short fails the task with STORAGE_ERROR.
 */
const DEFAULT_MEDIA_COPY_TIMEOUT_MS = 20_000;

function mediaFromEnv(env: NodeJS.ProcessEnv): MediaStore {
  const timeoutMs = Number(env.MEDIA_COPY_TIMEOUT_MS) || DEFAULT_MEDIA_COPY_TIMEOUT_MS;
  if (env.MEDIA_BUCKET) {
    return createS3MediaStore({
      bucket: env.MEDIA_BUCKET,
      region: env.AWS_REGION ?? 'us-east-1',
      urlTtlSeconds: Number(env.MEDIA_URL_TTL_SECONDS) || 3600,
      endpoint: env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL,
      forcePathStyle: Boolean(env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL),
      timeoutMs,
    });
  }
  if (env.MEDIA_DIR && env.MEDIA_BASE_URL) {
    return createFsMediaStore({ dir: env.MEDIA_DIR, publicBaseUrl: env.MEDIA_BASE_URL, timeoutMs });
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
