/**
 * The media worker's wiring: the lifecycle of the API functions, with results written by the worker's
 * own store on S3 (a multipart `Upload` of `@aws-sdk/lib-storage`, memory bounded whatever the size).
 * The API functions never import this module, so the S3 client stays out of their bundles.
 */
import {
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_S3,
  AWS_REGION,
  type Env,
  MEDIA_BUCKET,
  MEDIA_COPY_TIMEOUT_MS,
  PROVIDER_BASE_URL,
  readEnv,
} from '../environment/environment';
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
export function lifecycleWithoutProvider(env?: Env): Lifecycle {
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
export function workerLifecycleFromEnv(env?: Env): Lifecycle {
  if (cached) return cached;
  const base = readEnv(PROVIDER_BASE_URL, env) ? lifecycleFromEnv(env) : lifecycleWithoutProvider(env);
  const bucket = readEnv(MEDIA_BUCKET, env);
  if (!bucket) {
    cached = base;
    return cached;
  }
  const endpoint = readEnv(AWS_ENDPOINT_URL_S3, env) ?? readEnv(AWS_ENDPOINT_URL, env);
  cached = {
    ...base,
    media: createS3UploadMediaStore({
      bucket,
      region: readEnv(AWS_REGION, env) ?? 'us-east-1',
      urlTtlSeconds: mediaUrlTtlSecondsFromEnv(env),
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
