/**
 * Upload references (`upload://<uploadId>`) in a submission: each is checked before anything is
 * debited (the caller's own, not expired, its file stored, within the size limit, and its first bytes
 * of the type it declared), and turned into a short-lived signed GET URL only when the task is sent to
 * the provider. The task keeps the caller's references; no signed URL is ever stored.
 */
import { ValidationError } from '../core/errors';
import {
  isUploadReference,
  sniffUploadType,
  UPLOAD_PROVIDER_URL_TTL_SECONDS,
  UPLOAD_SNIFF_BYTES,
  uploadIdOf,
  uploadKey,
} from '../core/uploads';
import type { UploadReader } from '../media/uploads';
import type { StoreContext } from '../store/client';
import { getUpload, isRecordedRequest } from '../store/uploads';

/**
 * What the check at submission needs: the table, the clock and the uploads' first bytes (the submit
 * functions hold no provider client; signing for the provider happens in the dispatcher).
 */
export interface UploadCheckContext {
  store: StoreContext;
  now: () => Date;
  uploads?: Pick<UploadReader, 'head'>;
}

/** One message for a missing, expired and foreign upload: the three cannot be told apart. */
export const UNKNOWN_UPLOAD_MESSAGE = 'Unknown upload: no upload of yours has this id (it may have expired)';

/** The problem with one upload reference, or undefined when a task may use it. */
async function uploadProblem(lc: UploadCheckContext, userId: string, reference: string): Promise<string | undefined> {
  const uploadId = uploadIdOf(reference);
  if (!uploadId) return 'Must be upload://<uploadId> as returned by POST /api/ai/uploads';
  if (!lc.uploads) return 'Uploads are not available on this deployment';
  const record = await getUpload(lc.store, userId, uploadId, lc.now());
  if (!record) return UNKNOWN_UPLOAD_MESSAGE;
  const head = await lc.uploads.head(record.key, UPLOAD_SNIFF_BYTES);
  if (!head) return 'The upload has no file yet: send it with the uploadUrl and uploadFields first';
  if (head.size > record.maxBytes) return `The uploaded file is larger than ${record.maxBytes} bytes`;
  const sniffed = sniffUploadType(head.bytes);
  if (sniffed !== record.contentType) {
    return `The uploaded file is not ${record.contentType} (checked on its bytes: ${sniffed ?? 'not a PNG, JPEG or WebP image'})`;
  }
  return undefined;
}

/**
 * Checks every upload reference of `inputImageUrls`; other entries (https URLs) are left to the rules
 * that already judge them. A refused request whose Idempotency-Key already holds this very request
 * passes: it is a replay, answered with the original task (its uploads may have expired since).
 * @throws ValidationError naming each refused entry (`inputImageUrls.<index>`)
 */
export async function checkUploadReferences(
  lc: UploadCheckContext,
  userId: string,
  urls: readonly string[] | undefined,
  idempotency?: { key: string; requestHash: string },
  providerInput?: Record<string, unknown>,
): Promise<void> {
  // providerInput is merged over the provider request, whose upload references are signed at send:
  // a reference there would reach the provider unchecked, so references belong in inputImageUrls only.
  for (const [name, value] of Object.entries(providerInput ?? {})) {
    if ([value].flat().some((item) => typeof item === 'string' && isUploadReference(item))) {
      throw new ValidationError({
        fieldErrors: { [`providerInput.${name}`]: ['Upload references go in inputImageUrls'] },
        formErrors: [],
      });
    }
  }
  if (!urls?.some(isUploadReference)) return;
  const problems = await Promise.all(
    urls.map((url) => (isUploadReference(url) ? uploadProblem(lc, userId, url) : Promise.resolve(undefined))),
  );
  const fieldErrors: Record<string, string[]> = {};
  problems.forEach((problem, index) => {
    if (problem) fieldErrors[`inputImageUrls.${index}`] = [problem];
  });
  if (Object.keys(fieldErrors).length === 0) return;
  if (idempotency && (await isRecordedRequest(lc.store, userId, idempotency, lc.now()))) return;
  throw new ValidationError({ fieldErrors, formErrors: [] });
}

/**
 * The provider request with every upload reference among its input values (a string, or a list of
 * strings) replaced by a signed GET URL of the owner's upload, valid a few minutes: made at each send,
 * never stored. The key is built from the task's owner, so a reference can only ever sign the owner's file.
 */
export async function withSignedUploads<T extends { input: Record<string, unknown> }>(
  lc: { uploads?: Pick<UploadReader, 'signedUrl'> },
  userId: string,
  request: T,
): Promise<T> {
  const uploads = lc.uploads;
  if (!uploads) return request;
  const sign = async (value: unknown): Promise<unknown> => {
    if (typeof value !== 'string') return value;
    const uploadId = uploadIdOf(value);
    return uploadId ? uploads.signedUrl(uploadKey(userId, uploadId), UPLOAD_PROVIDER_URL_TTL_SECONDS) : value;
  };
  const entries = await Promise.all(
    Object.entries(request.input).map(
      async ([name, value]) =>
        [name, Array.isArray(value) ? await Promise.all(value.map(sign)) : await sign(value)] as const,
    ),
  );
  return { ...request, input: Object.fromEntries(entries) };
}
