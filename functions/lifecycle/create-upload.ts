/**
 * POST /api/ai/uploads: records an upload the caller may make (`USER#<id>` / `UPLOAD#<uploadId>`, with
 * TTL) and answers the presigned POST that stores its bytes straight in storage. No file passes
 * through a Lambda: the POST policy fixes the key, the content type and the size range. An upload
 * needs a positive balance (402) and a place in the account's quota of open uploads (429).
 */
import { randomUUID } from 'node:crypto';
import {
  UPLOAD_POST_TTL_SECONDS,
  UploadNeedsCreditsError,
  type UploadRequest,
  uploadKey,
  uploadReference,
} from '../core/uploads';
import type { UploadPoster } from '../media/uploads';
import { getBalance } from '../store/accounts';
import type { StoreContext } from '../store/client';
import { putCountedUpload } from '../store/upload-quota';

export interface UploadSettings {
  /** Largest file accepted (UPLOAD_MAX_BYTES). */
  maxBytes: number;
  /** How long an upload lives (UPLOAD_TTL_SECONDS); the bucket's lifecycle rule deletes its file. */
  ttlSeconds: number;
  /** The most open uploads per account (MAX_OPEN_UPLOADS). */
  maxOpen: number;
}

/** The 201 body of POST /api/ai/uploads. */
export interface CreatedUpload {
  uploadId: string;
  /** Where to POST the form (multipart/form-data: `uploadFields` first, then the `file`). */
  uploadUrl: string;
  uploadFields: Record<string, string>;
  /** When the upload (and its reference) expires. */
  expiresAt: string;
  /** The reference to put in `inputImageUrls`. */
  url: string;
}

export async function createUpload(
  deps: { store: StoreContext; poster: UploadPoster; settings: UploadSettings; now: Date },
  userId: string,
  request: UploadRequest,
): Promise<CreatedUpload> {
  const uploadId = randomUUID();
  const key = uploadKey(userId, uploadId);
  const expiresAt = new Date(deps.now.getTime() + deps.settings.ttlSeconds * 1000);
  // The form must be sent soon; the upload itself lives on until expiresAt.
  const postExpiresAt = new Date(Math.min(expiresAt.getTime(), deps.now.getTime() + UPLOAD_POST_TTL_SECONDS * 1000));
  // An upload costs storage: only an account that can pay for a task may make one (one Query).
  const balance = await getBalance(deps.store, userId);
  if (balance <= 0) throw new UploadNeedsCreditsError(balance);
  const record = {
    userId,
    uploadId,
    key,
    contentType: request.contentType,
    declaredBytes: request.size,
    maxBytes: deps.settings.maxBytes,
    createdAt: deps.now.toISOString(),
    expiresAt: expiresAt.toISOString(),
  };
  // Counted against the account's quota of open uploads, exactly (store/upload-quota.ts).
  await putCountedUpload(deps.store, record, { maxOpen: deps.settings.maxOpen, now: deps.now });
  const post = await deps.poster.presignPost({
    key,
    contentType: request.contentType,
    maxBytes: deps.settings.maxBytes,
    expiresAt: postExpiresAt,
  });
  return {
    uploadId,
    uploadUrl: post.url,
    uploadFields: post.fields,
    expiresAt: expiresAt.toISOString(),
    url: uploadReference(uploadId),
  };
}
