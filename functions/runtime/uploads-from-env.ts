/**
 * The uploads function's wiring from the environment: the settings (UPLOAD_MAX_BYTES, UPLOAD_TTL_SECONDS)
 * and the presigned-POST maker (UPLOADS_BUCKET, UPLOADS_S3_ENDPOINT locally).
 */
import { DEFAULT_UPLOAD_MAX_BYTES, DEFAULT_UPLOAD_TTL_SECONDS } from '../core/uploads';
import type { UploadSettings } from '../lifecycle/create-upload';
import { createS3UploadPoster, type UploadPoster, uploadsOptionsFromEnv } from '../media/uploads';

function positiveInteger(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`${name} must be a positive integer`);
  return parsed;
}

/** @throws Error when a setting is set but not a positive integer (a deployment error: loud). */
export function uploadSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): UploadSettings {
  return {
    maxBytes: positiveInteger(env.UPLOAD_MAX_BYTES, DEFAULT_UPLOAD_MAX_BYTES, 'UPLOAD_MAX_BYTES'),
    ttlSeconds: positiveInteger(env.UPLOAD_TTL_SECONDS, DEFAULT_UPLOAD_TTL_SECONDS, 'UPLOAD_TTL_SECONDS'),
  };
}

/** @throws Error when UPLOADS_BUCKET is not set */
export function uploadPosterFromEnv(env: NodeJS.ProcessEnv = process.env): UploadPoster {
  const options = uploadsOptionsFromEnv(env);
  if (!options) throw new Error('UPLOADS_BUCKET is not set');
  return createS3UploadPoster(options);
}
