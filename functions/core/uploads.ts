/**
 * Uploads: reference images a caller sends straight to storage (a presigned POST) and then names in
 * `inputImageUrls` as `upload://<uploadId>`. What is allowed, how references look, where the bytes
 * live, and the check of a file's first bytes. Nothing here does I/O.
 */
import * as v from 'valibot';
import { DomainError, ValidationError } from './errors';

/** The types an upload may declare (and must have, judged by its first bytes). */
export const UPLOAD_CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/webp'] as const;
export type UploadContentType = (typeof UPLOAD_CONTENT_TYPES)[number];

/** Default largest upload (UPLOAD_MAX_BYTES): 20 MB. */
export const DEFAULT_UPLOAD_MAX_BYTES = 20 * 1024 * 1024;
/** Default lifetime of an upload (UPLOAD_TTL_SECONDS): 24 hours, then record and file are gone. */
export const DEFAULT_UPLOAD_TTL_SECONDS = 24 * 3600;
/** Default most open uploads per account (MAX_OPEN_UPLOADS): 100, 2 GB at the default size limit. */
export const DEFAULT_MAX_OPEN_UPLOADS = 100;
/** Lifetime of the presigned POST form: the bytes must be sent within it. */
export const UPLOAD_POST_TTL_SECONDS = 900;
/**
 * Shortest lifetime of the signed GET URL the provider receives for an upload at send time. The URL
 * lives as long as the task may still live (an upstream with a queue of its own fetches references
 * late), never less than this: see `providerReferenceTtlSeconds` (lifecycle/uploads.ts).
 */
export const MIN_PROVIDER_REFERENCE_TTL_SECONDS = 900;
/** Bytes read from storage to judge a file's type (the longest signature checked is 12 bytes). */
export const UPLOAD_SNIFF_BYTES = 16;
/** Key prefix of uploads in the media bucket (and the local upload folder). */
export const UPLOADS_PREFIX = 'uploads/';

/** The scheme of the service's own references. */
export const UPLOAD_SCHEME = 'upload://';
const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `upload://<uploadId>`: what a caller puts in `inputImageUrls`. */
export function uploadReference(uploadId: string): string {
  return `${UPLOAD_SCHEME}${uploadId}`;
}

/** True for anything in the upload scheme, well-formed or not (validation then judges the id). */
export function isUploadReference(value: string): boolean {
  return value.startsWith(UPLOAD_SCHEME);
}

/** The upload id of a well-formed reference, else undefined. */
export function uploadIdOf(value: string): string | undefined {
  if (!isUploadReference(value)) return undefined;
  const id = value.slice(UPLOAD_SCHEME.length);
  return UPLOAD_ID.test(id) ? id : undefined;
}

/** Where an upload's bytes live: under the owner, so a key never names another account's file. */
export function uploadKey(userId: string, uploadId: string): string {
  return `${UPLOADS_PREFIX}${encodeURIComponent(userId)}/${uploadId}`;
}

/**
 * Where the version of an upload that a submit checked is kept for its task: a copy made under a
 * condition on the ETag the check read (S3's `x-amz-copy-source-if-match`), so the provider reads the
 * bytes the submit checked, whatever the upload's key holds later (its presigned POST stays usable for
 * its 15 minutes and could replace them). No presigned POST can write here: a POST names its one key
 * exactly (`uploads/<owner>/<uploadId>`), and this key is another (a sibling, not below it: the
 * local stand-in keeps objects as files). One copy per version, so tasks that name the same unchanged
 * upload share it.
 */
export function checkedUploadKey(userId: string, uploadId: string, etag: string): string {
  return `${uploadKey(userId, uploadId)}.checked-${etag.replace(/[^0-9A-Za-z-]/g, '').slice(0, 64)}`;
}

/** The allowed type whose signature `bytes` start with, if any. */
export function sniffUploadType(bytes: Uint8Array): UploadContentType | undefined {
  const startsWith = (signature: readonly number[], at = 0) =>
    signature.every((byte, index) => bytes[at + index] === byte);
  if (startsWith([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith([0xff, 0xd8, 0xff])) return 'image/jpeg';
  // RIFF....WEBP
  if (startsWith([0x52, 0x49, 0x46, 0x46]) && startsWith([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  return undefined;
}

/** What POST /api/ai/uploads takes. */
export interface UploadRequest {
  contentType: UploadContentType;
  size: number;
}

/**
 * Validates the body of POST /api/ai/uploads against the size limit in force.
 * @throws ValidationError naming each bad field
 */
export function validateUploadRequest(body: unknown, maxBytes: number): UploadRequest {
  const schema = v.object(
    {
      contentType: v.picklist(UPLOAD_CONTENT_TYPES, `Must be one of ${UPLOAD_CONTENT_TYPES.join(', ')}`),
      size: v.pipe(
        v.number('Must be a number'),
        v.integer('Must be an integer'),
        v.minValue(1, 'Must be at least 1'),
        v.maxValue(maxBytes, `Must be at most ${maxBytes} bytes`),
      ),
    },
    // What a missing field reads (a body that is not an object is refused below, before parsing).
    'Required',
  );
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError({ fieldErrors: {}, formErrors: ['Request body must be a JSON object'] });
  }
  const result = v.safeParse(schema, body);
  const fieldErrors: Record<string, string[]> = {};
  for (const key of Object.keys(body)) {
    if (key !== 'contentType' && key !== 'size') fieldErrors[key] = [`Unknown field "${key}"`];
  }
  if (result.success && Object.keys(fieldErrors).length === 0) return result.output;
  for (const issue of result.success ? [] : result.issues) {
    const path = v.getDotPath(issue);
    if (path !== null) fieldErrors[path] ??= [issue.message];
  }
  throw new ValidationError({ fieldErrors: Object.fromEntries(Object.entries(fieldErrors)), formErrors: [] });
}

/**
 * 402: an upload needs a positive balance (an upload costs storage; an account that cannot pay for a
 * task has nothing to upload for).
 */
export class UploadNeedsCreditsError extends DomainError {
  override readonly name: string = 'UploadNeedsCreditsError';
  readonly status: number = 402;
  override body(): Record<string, unknown> {
    return { error: this.message, balance: this.balance };
  }
  constructor(readonly balance: number) {
    super('Uploads need a positive balance: add credits first');
  }
}

/** 429: the account holds as many open uploads as it may (`limit`); each ends when it expires. */
export class UploadQuotaError extends DomainError {
  override readonly name: string = 'UploadQuotaError';
  readonly status: number = 429;
  override body(): Record<string, unknown> {
    return { error: this.message, limit: this.limit };
  }
  constructor(readonly limit: number) {
    super(
      `This account already has ${limit} open upload${limit === 1 ? '' : 's'}, the most it may hold; uploads end when they expire`,
    );
  }
}
