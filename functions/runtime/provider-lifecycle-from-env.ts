/**
 * Wires what submitting a task needs (store, provider, timings) from the environment, once per Lambda
 * container. Kept apart from the media wiring (`lifecycle-from-env.ts`) so that the submit functions,
 * which never store results, do not bundle the media code: it would put them over their bundle budget.
 */
import {
  DEFAULT_CALLBACK_READ_INTERVAL_MS,
  DEFAULT_COPY_STALE_MS,
  DEFAULT_LIFECYCLE_CONFIG,
  type LifecycleConfig,
} from '../core/lifecycle';
import type { ProviderLifecycle } from '../lifecycle/lifecycle';
import { createS3UploadReader, uploadsOptionsFromEnv } from '../media/uploads';
import { providerApiKeyFromEnv } from '../provider/api-key-source';
import { providerCallbacksFromEnv } from '../provider/callback-secret';
import { createHttpProvider } from '../provider/http-provider';
import { storeFromEnv } from '../store/from-env';

function seconds(value: string | undefined, fallbackMs: number): number {
  const parsed = Number(value);
  return value !== undefined && Number.isFinite(parsed) && parsed >= 0 ? parsed * 1000 : fallbackMs;
}

/**
 * Lifecycle timings from PROVIDER_REFRESH_INTERVAL_SECONDS, MAX_PENDING_SECONDS,
 * PROVIDER_MAX_SEND_ATTEMPTS, PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS, and RESULT_RETENTION_DAYS (the media bucket's expiry; unset locally,
 * where results are kept).
 * @throws Error when RESULT_RETENTION_DAYS is set but not a positive integer
 */
export function lifecycleConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LifecycleConfig {
  const attempts = Number(env.PROVIDER_MAX_SEND_ATTEMPTS);
  const config: LifecycleConfig = {
    refreshIntervalMs: seconds(env.PROVIDER_REFRESH_INTERVAL_SECONDS, DEFAULT_LIFECYCLE_CONFIG.refreshIntervalMs),
    maxPendingMs: seconds(env.MAX_PENDING_SECONDS, DEFAULT_LIFECYCLE_CONFIG.maxPendingMs),
    maxSendAttempts: Number.isInteger(attempts) && attempts > 0 ? attempts : DEFAULT_LIFECYCLE_CONFIG.maxSendAttempts,
    callbackReadIntervalMs: seconds(env.PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS, DEFAULT_CALLBACK_READ_INTERVAL_MS),
    copyStaleMs: seconds(env.MEDIA_COPY_STALE_SECONDS, DEFAULT_COPY_STALE_MS),
  };
  if (env.RESULT_RETENTION_DAYS !== undefined && env.RESULT_RETENTION_DAYS !== '') {
    const days = Number(env.RESULT_RETENTION_DAYS);
    if (!Number.isInteger(days) || days < 1) throw new Error('RESULT_RETENTION_DAYS must be a positive integer');
    config.resultRetentionDays = days;
  }
  return config;
}

let cached: ProviderLifecycle | undefined;

/** The submit wiring for this process, built on first use. */
export function providerLifecycleFromEnv(env: NodeJS.ProcessEnv = process.env): ProviderLifecycle {
  if (cached) return cached;
  const baseUrl = env.PROVIDER_BASE_URL;
  if (!baseUrl) throw new Error('PROVIDER_BASE_URL is not set');
  const callbacks = providerCallbacksFromEnv(env);
  const uploads = uploadsOptionsFromEnv(env);
  cached = {
    ...(callbacks ? { callbacks } : {}),
    ...(uploads ? { uploads: createS3UploadReader(uploads) } : {}),
    store: storeFromEnv(env),
    provider: createHttpProvider({
      baseUrl,
      apiKey: providerApiKeyFromEnv(env),
      timeoutMs: Number(env.PROVIDER_TIMEOUT_MS) || 5000,
    }),
    config: lifecycleConfigFromEnv(env),
    now: () => new Date(),
  };
  return cached;
}

/** Forgets the wiring (the local stack and tests change the environment between runs). */
export function resetProviderLifecycleFromEnv(): void {
  cached = undefined;
}
