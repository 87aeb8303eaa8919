/**
 * Where `accounts close` removes a closed account's files: the target's result files and uploads, with
 * the wiring the handlers use (functions/runtime/removal-from-env.ts) so the one rule
 * (functions/lifecycle/close-account.ts) deletes the same objects from either front door.
 *
 * - `--aws`: the media bucket's `results/` and `uploads/` prefixes named by MEDIA_BUCKET and
 *   UPLOADS_BUCKET (stack outputs), both required: without them the files would silently stay.
 * - locally: the running start's directories as it recorded them (an in-memory start keeps them in a
 *   temporary directory), else `<DATA_DIR>/media` and `<DATA_DIR>/uploads` as `npm start` lays them out;
 *   the uploads through the local S3 stand-in's own on-disk rules (local/upload-bucket.ts), so the
 *   stack need not run.
 */
import { resolve } from 'node:path';
import { UsageError } from '../../functions/core/errors';
import { MEDIA_BUCKET, readEnv, UPLOADS_BUCKET } from '../../functions/environment/environment';
import type { RemovalContext } from '../../functions/lifecycle/delete-data';
import {
  createFsObjectRemover,
  resultRemoverFromEnv,
  uploadRemoverFromEnv,
} from '../../functions/media/remove-objects';
import { uploadReaderFromEnv } from '../../functions/media/uploads';
import { IN_MEMORY } from '../../local/stack-state';
import { localUploadObjects } from '../../local/upload-bucket';
import type { Target } from './target';

/** What closing removes files with (the table and the clock come from the command). */
export type FileRemoval = Omit<RemovalContext, 'store' | 'now'> & {
  versionOf: (key: string) => Promise<string | undefined>;
};

/** The file removal of the CLI's target (see the module comment). */
export function fileRemoval(aws: boolean, env: NodeJS.ProcessEnv, target: Target): FileRemoval {
  if (aws) {
    const missing = [MEDIA_BUCKET, UPLOADS_BUCKET].filter((name) => !readEnv(name, env)).map((name) => name.name);
    if (missing.length > 0) {
      throw new UsageError(
        `accounts close with --aws needs ${missing.join(' and ')} (the stack's media bucket), to remove the account's files`,
      );
    }
    const reader = uploadReaderFromEnv(env);
    return {
      results: resultRemoverFromEnv(env),
      uploads: uploadRemoverFromEnv(env),
      versionOf: async (key) => (reader ? (await reader.head(key, 1))?.etag : undefined),
    };
  }
  const running = target.running;
  if (running?.dataDir === IN_MEMORY && !(running.state.mediaDir && running.state.uploadsDir)) {
    throw new UsageError('the running in-memory stack does not say where its files are: restart it with this version');
  }
  const dataDir = running?.dataDir ?? (env.DATA_DIR || '.data');
  const uploads = localUploadObjects(running?.state.uploadsDir ?? resolve(dataDir, 'uploads'));
  return {
    results: createFsObjectRemover(running?.state.mediaDir ?? resolve(dataDir, 'media')),
    uploads: { remove: uploads.remove },
    versionOf: uploads.versionOf,
  };
}
