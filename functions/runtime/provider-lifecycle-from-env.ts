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
import {
  type Env,
  MAX_PENDING_SECONDS,
  MEDIA_COPY_STALE_SECONDS,
  PROVIDER_BASE_URL,
  PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS,
  PROVIDER_MAX_IN_FLIGHT,
  PROVIDER_MAX_SEND_ATTEMPTS,
  PROVIDER_REFRESH_INTERVAL_SECONDS,
  PROVIDER_TIMEOUT_MS,
  RESULT_RETENTION_DAYS,
  readEnv,
} from '../environment/environment';
import type { ProviderLifecycle } from '../lifecycle/lifecycle';
import { providerApiKeyFromEnv } from '../provider/api-key-source';
import { providerCallbacksFromEnv } from '../provider/callback-secret';
import { createHttpProvider } from '../provider/http-provider';
import { storeFromEnv } from '../store/from-env';

function seconds(value: number | undefined, fallbackMs: number): number {
  return value === undefined ? fallbackMs : value * 1000;
}

/**
 * Lifecycle timings from PROVIDER_REFRESH_INTERVAL_SECONDS, MAX_PENDING_SECONDS,
 * PROVIDER_MAX_SEND_ATTEMPTS, PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS, and RESULT_RETENTION_DAYS (the media bucket's expiry; unset locally,
 * where results are kept).
 * @throws Error when RESULT_RETENTION_DAYS is set but not a positive integer
 */
export function lifecycleConfigFromEnv(env?: Env): LifecycleConfig {
  const config: LifecycleConfig = {
    refreshIntervalMs: seconds(
      readEnv(PROVIDER_REFRESH_INTERVAL_SECONDS, env),
      DEFAULT_LIFECYCLE_CONFIG.refreshIntervalMs,
    ),
    maxPendingMs: seconds(readEnv(MAX_PENDING_SECONDS, env), DEFAULT_LIFECYCLE_CONFIG.maxPendingMs),
    maxSendAttempts: readEnv(PROVIDER_MAX_SEND_ATTEMPTS, env) ?? DEFAULT_LIFECYCLE_CONFIG.maxSendAttempts,
    callbackReadIntervalMs: seconds(
      readEnv(PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS, env),
      DEFAULT_CALLBACK_READ_INTERVAL_MS,
    ),
    copyStaleMs: seconds(readEnv(MEDIA_COPY_STALE_SECONDS, env), DEFAULT_COPY_STALE_MS),
  };
  const days = readEnv(RESULT_RETENTION_DAYS, env);
  if (days !== undefined) config.resultRetentionDays = days;
  return config;
}

/**
 * `config` with the cap on tasks in flight (`PROVIDER_MAX_IN_FLIGHT`) when one is set: for the functions
 * that finish tasks and the dispatcher, not in `lifecycleConfigFromEnv`, so the submit functions, which
 * finish none, do not bundle it.
 */
export function withMaxInFlightFromEnv(config: LifecycleConfig, env?: Env): LifecycleConfig {
  const maxInFlight = readEnv(PROVIDER_MAX_IN_FLIGHT, env);
  return maxInFlight === undefined ? config : { ...config, maxInFlight };
}

let cached: ProviderLifecycle | undefined;

/** The submit wiring for this process, built on first use. */
export function providerLifecycleFromEnv(env?: Env): ProviderLifecycle {
  if (cached) return cached;
  const baseUrl = readEnv(PROVIDER_BASE_URL, env);
  if (!baseUrl) throw new Error('PROVIDER_BASE_URL is not set');
  const callbacks = providerCallbacksFromEnv(env);
  cached = {
    ...(callbacks ? { callbacks } : {}),
    store: storeFromEnv(env),
    provider: createHttpProvider({
      baseUrl,
      apiKey: providerApiKeyFromEnv(env),
      timeoutMs: readEnv(PROVIDER_TIMEOUT_MS, env) ?? 5000,
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
