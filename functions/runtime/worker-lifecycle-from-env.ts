/**
 * The media worker's wiring: the lifecycle of the API functions, with results written by the worker's
 * own store on S3 (a multipart `Upload` of `@aws-sdk/lib-storage`, memory bounded whatever the size).
 * The API functions never import this module, so the S3 client stays out of their bundles.
 */
import type { Lifecycle } from '../lifecycle/lifecycle';
import { createS3UploadMediaStore } from '../media/s3-upload-media-store';
import { sourcePolicyFromEnv } from '../media/source-policy';
import type { GenerationProvider } from '../provider/port';
import { storeFromEnv } from '../store/from-env';
import {
  lifecycleConfigFromEnv,
  lifecycleFromEnv,
  mediaFromEnv,
  mediaUrlTtlSecondsFromEnv,
} from './lifecycle-from-env';

/**
 * The media worker never talks to the provider, so it is deployed without its URL or key (least
 * privilege); should a code path ever try, it fails loudly instead of calling anything.
 */
const NO_PROVIDER: GenerationProvider = {
  createTask: () => Promise.reject(new Error('the media worker has no provider access')),
  getTask: () => Promise.reject(new Error('the media worker has no provider access')),
};

/** The lifecycle without provider settings (the media and webhook workers' environments have none). */
export function lifecycleWithoutProvider(env: NodeJS.ProcessEnv): Lifecycle {
  return {
    store: storeFromEnv(env),
    provider: NO_PROVIDER,
    config: lifecycleConfigFromEnv(env),
    now: () => new Date(),
    media: mediaFromEnv(env),
  };
}

/** Off the request path a copy may take long: the worker's own deadline, MEDIA_COPY_TIMEOUT_MS overrides it. */
const WORKER_COPY_TIMEOUT_MS = 600_000;

let cached: Lifecycle | undefined;

/** The worker's lifecycle for this process, built on first use. */
export function workerLifecycleFromEnv(env: NodeJS.ProcessEnv = process.env): Lifecycle {
  if (cached) return cached;
  const base = env.PROVIDER_BASE_URL ? lifecycleFromEnv(env) : lifecycleWithoutProvider(env);
  if (!env.MEDIA_BUCKET) {
    cached = base;
    return cached;
  }
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  cached = {
    ...base,
    media: createS3UploadMediaStore({
      bucket: env.MEDIA_BUCKET,
      region: env.AWS_REGION ?? 'us-east-1',
      urlTtlSeconds: mediaUrlTtlSecondsFromEnv(env),
      ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
      timeoutMs: Number(env.MEDIA_COPY_TIMEOUT_MS) || WORKER_COPY_TIMEOUT_MS,
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
