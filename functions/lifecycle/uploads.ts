/**
 * Upload references (`upload://<uploadId>`) in a submission: each is checked before anything is
 * debited (the caller's own, not expired, its file stored, within the size limit, and its first bytes
 * of the type it declared), the version checked is copied where no upload form can write
 * (`checkedUploadKey`), and a signed GET URL of that copy is made only when the task is sent to the
 * provider. The task keeps the caller's references and the versions checked; no signed URL is stored.
 */
import { ValidationError } from '../core/errors';
import type { TaskRecord } from '../core/task';
import {
  checkedUploadKey,
  isUploadReference,
  MIN_PROVIDER_REFERENCE_TTL_SECONDS,
  sniffUploadType,
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
  uploads?: Pick<UploadReader, 'head' | 'copyIfUnchanged'>;
}

/** The versions (ETags) of the uploads a submit checked and kept for its task, by upload id. */
export type UploadVersions = Record<string, string>;

/** The message of an upload replaced between its check and its copy (by its still valid upload form). */
export const CHANGED_UPLOAD_MESSAGE = 'The upload changed while this request was checked: send the request again';

/** One message for a missing, expired and foreign upload: the three cannot be told apart. */
export const UNKNOWN_UPLOAD_MESSAGE = 'Unknown upload: no upload of yours has this id (it may have expired)';

/** One upload reference judged: the problem with it, or the version a task may use. */
type UploadVerdict = { problem: string } | { uploadId: string; key: string; etag: string };

/** The problem with one upload reference, or the version (ETag) checked when a task may use it. */
async function judgeUpload(lc: UploadCheckContext, userId: string, reference: string): Promise<UploadVerdict> {
  const uploadId = uploadIdOf(reference);
  if (!uploadId) return { problem: 'Must be upload://<uploadId> as returned by POST /api/ai/uploads' };
  if (!lc.uploads) return { problem: 'Uploads are not available on this deployment' };
  const record = await getUpload(lc.store, userId, uploadId, lc.now());
  if (!record) return { problem: UNKNOWN_UPLOAD_MESSAGE };
  const head = await lc.uploads.head(record.key, UPLOAD_SNIFF_BYTES);
  if (!head) return { problem: 'The upload has no file yet: send it with the uploadUrl and uploadFields first' };
  if (head.size > record.maxBytes) return { problem: `The uploaded file is larger than ${record.maxBytes} bytes` };
  const sniffed = sniffUploadType(head.bytes);
  if (sniffed !== record.contentType) {
    return {
      problem: `The uploaded file is not ${record.contentType} (checked on its bytes: ${sniffed ?? 'not a PNG, JPEG or WebP image'})`,
    };
  }
  // S3 names every object's version; storage that does not cannot promise the bytes checked.
  if (!head.etag) throw new Error(`Upload storage sent no ETag for ${record.key}`);
  return { uploadId, key: record.key, etag: head.etag };
}

/**
 * Checks every upload reference of `inputImageUrls`, then copies the version of each that was checked
 * to its `checkedUploadKey` under a condition on that version, so the provider reads those bytes and no
 * later ones; other entries (https URLs) are left to the rules that already judge them. A refused
 * request whose Idempotency-Key already holds this very request passes: it is a replay, answered with
 * the original task (its uploads may have expired since), and keeps nothing.
 * @returns the versions kept, by upload id, for the task to record (empty without upload references)
 * @throws ValidationError naming each refused entry (`inputImageUrls.<index>`)
 */
export async function checkUploadReferences(
  lc: UploadCheckContext,
  userId: string,
  urls: readonly string[] | undefined,
  idempotency?: { key: string; requestHash: string },
  providerInput?: Record<string, unknown>,
): Promise<UploadVersions> {
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
  if (!urls?.some(isUploadReference)) return {};
  const verdicts = await Promise.all(
    urls.map((url) => (isUploadReference(url) ? judgeUpload(lc, userId, url) : Promise.resolve(undefined))),
  );
  const fieldErrors: Record<string, string[]> = {};
  verdicts.forEach((verdict, index) => {
    if (verdict && 'problem' in verdict) fieldErrors[`inputImageUrls.${index}`] = [verdict.problem];
  });
  if (Object.keys(fieldErrors).length > 0) {
    if (idempotency && (await isRecordedRequest(lc.store, userId, idempotency, lc.now()))) return {};
    throw new ValidationError({ fieldErrors, formErrors: [] });
  }
  const uploads = lc.uploads;
  const versions: UploadVersions = {};
  const copies = verdicts.map(async (verdict, index) => {
    if (!uploads || !verdict || 'problem' in verdict) return;
    const outcome = await uploads.copyIfUnchanged({
      from: verdict.key,
      to: checkedUploadKey(userId, verdict.uploadId, verdict.etag),
      etag: verdict.etag,
    });
    if (outcome === 'changed') fieldErrors[`inputImageUrls.${index}`] = [CHANGED_UPLOAD_MESSAGE];
    else versions[verdict.uploadId] = verdict.etag;
  });
  await Promise.all(copies);
  if (Object.keys(fieldErrors).length > 0) throw new ValidationError({ fieldErrors, formErrors: [] });
  return versions;
}

/**
 * How long the provider's signed URL of a reference lives: as long as the task may still live (its
 * `maxPendingMs` from acceptance, when the sweeper ends it), so an upstream that queues the task and
 * fetches its references late still can; never less than {@link MIN_PROVIDER_REFERENCE_TTL_SECONDS},
 * and never more than the signing credentials allow (one hour with a Lambda role's session).
 */
export function providerReferenceTtlSeconds(
  task: Pick<TaskRecord, 'createdAt'>,
  input: { now: Date; maxPendingMs: number; maxUrlTtlSeconds: number },
): number {
  const lifeLeftSeconds = Math.ceil((Date.parse(task.createdAt) + input.maxPendingMs - input.now.getTime()) / 1000);
  // A minute more than the task's life: the sweeper ends a task a little after its deadline.
  const wanted = Math.max(MIN_PROVIDER_REFERENCE_TTL_SECONDS, lifeLeftSeconds + 60);
  return Math.min(wanted, input.maxUrlTtlSeconds);
}

/**
 * The provider request with every upload reference among its input values (a string, or a list of
 * strings) replaced by a signed GET URL of the owner's upload: of the version the submit checked
 * (`task.request.uploadVersions`; tasks accepted before versions were kept name the upload itself),
 * valid for `ttlSeconds`. Made at each send, never stored. The key is built from the task's owner, so a
 * reference can only ever sign the owner's file.
 */
export async function withSignedUploads<T extends { input: Record<string, unknown> }>(
  lc: { uploads?: Pick<UploadReader, 'signedUrl'> },
  task: Pick<TaskRecord, 'userId' | 'request'>,
  request: T,
  ttlSeconds: number,
): Promise<T> {
  const uploads = lc.uploads;
  if (!uploads) return request;
  const versions = (task.request.uploadVersions ?? {}) as Partial<UploadVersions>;
  const sign = async (value: unknown): Promise<unknown> => {
    if (typeof value !== 'string') return value;
    const uploadId = uploadIdOf(value);
    if (!uploadId) return value;
    const version = versions[uploadId];
    const key =
      typeof version === 'string' ? checkedUploadKey(task.userId, uploadId, version) : uploadKey(task.userId, uploadId);
    return uploads.signedUrl(key, ttlSeconds);
  };
  const entries = await Promise.all(
    Object.entries(request.input).map(
      async ([name, value]) =>
        [name, Array.isArray(value) ? await Promise.all(value.map(sign)) : await sign(value)] as const,
    ),
  );
  return { ...request, input: Object.fromEntries(entries) };
}
