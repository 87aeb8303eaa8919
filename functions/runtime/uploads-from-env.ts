/**
 * The uploads function's wiring from the environment: the settings (UPLOAD_MAX_BYTES, UPLOAD_TTL_SECONDS,
 * MAX_OPEN_UPLOADS)
 * and the presigned-POST maker (UPLOADS_BUCKET, UPLOADS_S3_ENDPOINT locally).
 */
import { DEFAULT_MAX_OPEN_UPLOADS, DEFAULT_UPLOAD_MAX_BYTES, DEFAULT_UPLOAD_TTL_SECONDS } from '../core/uploads';
import { type Env, MAX_OPEN_UPLOADS, readEnv, UPLOAD_MAX_BYTES, UPLOAD_TTL_SECONDS } from '../environment/environment';
import type { UploadSettings } from '../lifecycle/create-upload';
import { createS3UploadPoster, type UploadPoster, uploadsOptionsFromEnv } from '../media/uploads';

/** @throws Error when a setting is set but not a positive integer (a deployment error: loud). */
export function uploadSettingsFromEnv(env?: Env): UploadSettings {
  return {
    maxBytes: readEnv(UPLOAD_MAX_BYTES, env) ?? DEFAULT_UPLOAD_MAX_BYTES,
    ttlSeconds: readEnv(UPLOAD_TTL_SECONDS, env) ?? DEFAULT_UPLOAD_TTL_SECONDS,
    maxOpen: readEnv(MAX_OPEN_UPLOADS, env) ?? DEFAULT_MAX_OPEN_UPLOADS,
  };
}

/** @throws Error when UPLOADS_BUCKET is not set */
export function uploadPosterFromEnv(env?: Env): UploadPoster {
  const options = uploadsOptionsFromEnv(env);
  if (!options) throw new Error('UPLOADS_BUCKET is not set');
  return createS3UploadPoster(options);
}
