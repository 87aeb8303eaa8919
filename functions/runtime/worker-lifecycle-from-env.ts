/**
 * The media worker's wiring: the lifecycle of the API functions, with results written by the worker's
 * own store on S3 (a multipart `Upload` of `@aws-sdk/lib-storage`, memory bounded whatever the size).
 * The API functions never import this module, so the S3 client stays out of their bundles.
 */
import type { Lifecycle } from '../lifecycle/lifecycle';
import { createS3UploadMediaStore } from '../media/s3-upload-media-store';
import { sourcePolicyFromEnv } from '../media/source-policy';
import { lifecycleFromEnv, mediaUrlTtlSecondsFromEnv } from './lifecycle-from-env';

/** Off the request path a copy may take long: the worker's own deadline, MEDIA_COPY_TIMEOUT_MS overrides it. */
const WORKER_COPY_TIMEOUT_MS = 600_000;

let cached: Lifecycle | undefined;

/** The worker's lifecycle for this process, built on first use. */
export function workerLifecycleFromEnv(env: NodeJS.ProcessEnv = process.env): Lifecycle {
  if (cached) return cached;
  const base = lifecycleFromEnv(env);
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
