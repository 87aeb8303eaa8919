/**
 * Removing stored objects: a deleted task's results, the checked copies of its uploads and its inline
 * images, a deleted upload, a closed account's files. Deployed, the results and the uploads are two
 * prefixes of the media bucket and each key is one signed S3 `DELETE` (DeleteObject, which answers 204
 * whether or not the key exists, so a repeated removal is harmless); locally the results are files
 * under MEDIA_DIR and the uploads live in the local gateway's S3 stand-in (local/upload-bucket.ts),
 * which takes the same signed `DELETE`.
 *
 * One DeleteObject per key rather than the batch DeleteObjects: a task has at most a handful of
 * objects, and the batch call needs a Content-MD5 of an XML body for no gain at that size.
 */
import { rm } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { credentialsFromEnv, presignUrl, uriEncode } from '../aws/signer';
import {
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_S3,
  AWS_REGION,
  type Env,
  MEDIA_BUCKET,
  MEDIA_DIR,
  readEnv,
} from '../environment/environment';
import { type S3UploadsOptions, uploadsOptionsFromEnv } from './uploads';

/** Removes objects by key; a key that is not there is not an error. */
export interface ObjectRemover {
  /** @throws Error when storage refuses or fails (the caller answers 5xx and may be retried) */
  remove(keys: readonly string[]): Promise<void>;
}

/** Signed DeleteObject calls against one bucket (S3, LocalStack or the local stand-in). */
export function createS3ObjectRemover(options: S3UploadsOptions): ObjectRemover {
  const credentials = options.credentials ?? (() => credentialsFromEnv());
  const now = options.now ?? (() => new Date());
  const objectUrl = (key: string): URL => {
    const path = key.split('/').map(uriEncode).join('/');
    if (options.endpoint) {
      const url = new URL(options.endpoint);
      url.pathname = `${url.pathname.replace(/\/+$/, '')}/${uriEncode(options.bucket)}/${path}`;
      return url;
    }
    return new URL(`https://${options.bucket}.s3.${options.region}.amazonaws.com/${path}`);
  };
  const removeOne = async (key: string): Promise<void> => {
    const url = await presignUrl({
      method: 'DELETE',
      url: objectUrl(key),
      service: 's3',
      region: options.region,
      credentials: credentials(),
      date: now(),
      expiresInSeconds: 60,
    });
    const response = await fetch(url, { method: 'DELETE', signal: AbortSignal.timeout(10_000) });
    await response.body?.cancel();
    // 404: S3 answers 204 for a missing key, other stores may say so; either way it is gone.
    if (!response.ok && response.status !== 404) throw new Error(`DELETE of ${key} answered HTTP ${response.status}`);
  };
  return {
    async remove(keys) {
      await Promise.all([...new Set(keys)].map(removeOne));
    },
  };
}

/** Files under `dir` (the local stack's results); a key leaving `dir` is refused. */
export function createFsObjectRemover(dir: string): ObjectRemover {
  const root = resolve(dir);
  return {
    async remove(keys) {
      await Promise.all(
        keys.map(async (key) => {
          const file = resolve(root, ...key.split('/'));
          if (!file.startsWith(root + sep)) throw new Error(`Refused to remove a key outside the media directory`);
          await rm(file, { force: true });
        }),
      );
    },
  };
}

/** Removes nothing: a deployment without that storage (no uploads bucket) has nothing there. */
const NOTHING_STORED: ObjectRemover = { remove: async () => undefined };

/** The remover of result files this environment names: the media bucket deployed, MEDIA_DIR locally. */
export function resultRemoverFromEnv(env?: Env): ObjectRemover {
  const bucket = readEnv(MEDIA_BUCKET, env);
  if (bucket) {
    const endpoint = readEnv(AWS_ENDPOINT_URL_S3, env) ?? readEnv(AWS_ENDPOINT_URL, env);
    return createS3ObjectRemover({ bucket, region: readEnv(AWS_REGION, env) ?? 'us-east-1', endpoint });
  }
  const dir = readEnv(MEDIA_DIR, env);
  return dir ? createFsObjectRemover(dir) : NOTHING_STORED;
}

/** The remover of uploads this environment names (UPLOADS_BUCKET), or one with nothing to remove. */
export function uploadRemoverFromEnv(env?: Env): ObjectRemover {
  const options = uploadsOptionsFromEnv(env);
  return options ? createS3ObjectRemover(options) : NOTHING_STORED;
}
