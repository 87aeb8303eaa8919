/**
 * The media worker's wiring: the lifecycle of the API functions, with results written by the worker's
 * own store on S3 (a multipart `Upload` of `@aws-sdk/lib-storage`, memory bounded whatever the size).
 * The API functions never import this module, so the S3 client stays out of their bundles.
 */
import { type Env, MEDIA_COPY_TIMEOUT_MS, PROVIDER_BASE_URL, readEnv } from '../environment/environment';
import type { CopyingLifecycle, Lifecycle } from '../lifecycle/lifecycle';
import { createFsMediaStore } from '../media/fs-media-store';
import type { MediaStore } from '../media/port';
import { createS3MediaStore } from '../media/s3-media-store';
import { createS3UploadMediaStore } from '../media/s3-upload-media-store';
import { sourcePolicyFromEnv } from '../media/source-policy';
import type { GenerationProvider } from '../provider/port';
import { storeFromEnv } from '../store/from-env';
import { lifecycleConfigFromEnv, lifecycleFromEnv, mediaSettingsFromEnv, mediaUrlsFromEnv } from './lifecycle-from-env';
import { withMaxInFlightFromEnv } from './provider-lifecycle-from-env';

/**
 * The media worker never talks to the provider, so it is deployed without its URL or key (least
 * privilege); should a code path ever try, it fails loudly instead of calling anything.
 */
const NO_PROVIDER: GenerationProvider = {
  createTask: () => Promise.reject(new Error('the media worker has no provider access')),
  getTask: () => Promise.reject(new Error('the media worker has no provider access')),
};

/**
 * The deadline of one result copy by the fetch-based stores (MEDIA_COPY_TIMEOUT_MS overrides it): the
 * sweeper's stale-copy fallback copies within its two minutes (the media worker on S3 has its own,
 * longer one below). A copy cut short is retried, then fails the task with STORAGE_ERROR.
 */
const DEFAULT_MEDIA_COPY_TIMEOUT_MS = 20_000;

/**
 * The copying media store this environment names (S3 deployed, the filesystem locally): only the
 * functions that copy results build it, so the API functions' bundles leave its code out.
 */
export function mediaFromEnv(env?: Env): MediaStore {
  const timeoutMs = readEnv(MEDIA_COPY_TIMEOUT_MS, env) ?? DEFAULT_MEDIA_COPY_TIMEOUT_MS;
  const sourcePolicy = sourcePolicyFromEnv(env);
  const settings = mediaSettingsFromEnv(env);
  if (settings.kind === 'fs') return createFsMediaStore({ ...settings, timeoutMs, sourcePolicy });
  const { endpoint, ...rest } = settings;
  return createS3MediaStore({ ...rest, endpoint, forcePathStyle: Boolean(endpoint), timeoutMs, sourcePolicy });
}

/** The lifecycle without provider settings (the media and webhook workers' environments have none). */
export function lifecycleWithoutProvider(env?: Env): Lifecycle {
  return {
    store: storeFromEnv(env),
    provider: NO_PROVIDER,
    config: withMaxInFlightFromEnv(lifecycleConfigFromEnv(env), env),
    now: () => new Date(),
    media: mediaUrlsFromEnv(env),
  };
}

/** Off the request path a copy may take long: the worker's own deadline, MEDIA_COPY_TIMEOUT_MS overrides it. */
const WORKER_COPY_TIMEOUT_MS = 600_000;

let cached: CopyingLifecycle | undefined;

/** The worker's lifecycle for this process, built on first use. */
export function workerLifecycleFromEnv(env?: Env): CopyingLifecycle {
  if (cached) return cached;
  const base = readEnv(PROVIDER_BASE_URL, env) ? lifecycleFromEnv(env) : lifecycleWithoutProvider(env);
  const settings = mediaSettingsFromEnv(env);
  if (settings.kind === 'fs') {
    cached = { ...base, media: mediaFromEnv(env) };
    return cached;
  }
  const { bucket, region, urlTtlSeconds, endpoint } = settings;
  cached = {
    ...base,
    media: createS3UploadMediaStore({
      bucket,
      region,
      urlTtlSeconds,
      ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
      timeoutMs: readEnv(MEDIA_COPY_TIMEOUT_MS, env) ?? WORKER_COPY_TIMEOUT_MS,
      sourcePolicy: sourcePolicyFromEnv(env),
      urls: base.media,
    }),
  };
  return cached;
}

/** Forgets the wiring (tests change the environment between runs). */
export function resetWorkerLifecycleFromEnv(): void {
  cached = undefined;
}
