/**
 * Inline reference images: `data:image/png;base64,...` (also image/jpeg, image/webp) entries of
 * `inputImageUrls`. Each is decoded and checked like an upload (its bytes are of the type it declares,
 * within the size limits) before anything is debited, then stored as an upload of the caller and
 * replaced by its `upload://` reference, so the task, the check and the send see only references.
 *
 * A request body is bounded before it reaches the service: deployed, Lambda takes at most 6 MB
 * (6,291,456 bytes) per synchronous invocation, the whole event included (API Gateway's own limit is
 * 10 MB), and base64 grows the bytes by a third. So inline images may total at most
 * `INLINE_IMAGES_MAX_BYTES` (4 MiB decoded, about 5.6 MB of base64) per request, checked here so the
 * local stack answers as the deployed one; larger files go through `POST /api/ai/uploads`.
 */
import { randomUUID } from 'node:crypto';
import { ValidationError } from '../core/errors';
import {
  checkedUploadKey,
  sniffUploadType,
  UPLOAD_CONTENT_TYPES,
  type UploadContentType,
  uploadKey,
  uploadReference,
} from '../core/uploads';
import type { UploadReader } from '../media/uploads';
import type { StoreContext } from '../store/client';
import { deleteUpload, isRecordedRequest, putUpload } from '../store/uploads';

/** The most inline image bytes (decoded) one request may carry: what a 6 MB Lambda payload leaves room for. */
export const INLINE_IMAGES_MAX_BYTES = 4 * 1024 * 1024;

/** An inline image taken out of the request, to store under `uploadId` once the request is valid. */
export interface InlineImage {
  /** Its index in `inputImageUrls`. */
  index: number;
  uploadId: string;
  contentType: UploadContentType;
  bytes: Uint8Array;
}

const DATA_URI = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/is;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** True for a `data:` entry (any case). */
export function isDataUri(value: unknown): value is string {
  return typeof value === 'string' && /^data:/i.test(value);
}

/** The image of one `data:` entry, or the problem with it. */
function decode(value: string, maxBytes: number): { contentType: UploadContentType; bytes: Uint8Array } | string {
  const match = DATA_URI.exec(value);
  const type = match?.[1]?.toLowerCase() ?? '';
  const parameters = (match?.[2] ?? '').toLowerCase().split(';');
  if (!match || !parameters.includes('base64')) {
    return 'Must be data:<type>;base64,<data> with type image/png, image/jpeg or image/webp';
  }
  if (!(UPLOAD_CONTENT_TYPES as readonly string[]).includes(type)) {
    return `Inline images must be image/png, image/jpeg or image/webp, not ${type || 'untyped'}`;
  }
  const data = (match[3] ?? '').replace(/\s+/g, '');
  if (data.length % 4 !== 0 || !BASE64.test(data)) return 'The inline image is not valid base64';
  if (data.length === 0) return 'The inline image is empty';
  // Checked on the text's length before decoding anything large.
  const size = (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
  if (size > maxBytes) {
    return `The inline image is larger than ${maxBytes} bytes: send it with POST /api/ai/uploads`;
  }
  const bytes = Buffer.from(data, 'base64');
  const sniffed = sniffUploadType(bytes);
  if (sniffed !== type) {
    return `The inline image is not ${type} (checked on its bytes: ${sniffed ?? 'not a PNG, JPEG or WebP image'})`;
  }
  return { contentType: type as UploadContentType, bytes };
}

/**
 * Takes the inline images out of a request body: each becomes `upload://<new id>` (so the request's
 * rules judge a reference), and is returned to be stored once the request is valid.
 * @param maxBytes the largest upload (UPLOAD_MAX_BYTES); inline images are further bounded in total
 * @throws ValidationError naming each refused entry (`inputImageUrls.<index>`)
 */
export function takeInlineImages(body: unknown, maxBytes: number): { body: unknown; images: InlineImage[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { body, images: [] };
  const urls = (body as { inputImageUrls?: unknown }).inputImageUrls;
  if (!Array.isArray(urls) || !urls.some(isDataUri)) return { body, images: [] };
  const fieldErrors: Record<string, string[]> = {};
  const images: InlineImage[] = [];
  let total = 0;
  const replaced = urls.map((value: unknown, index) => {
    if (!isDataUri(value)) return value;
    const decoded = decode(value, Math.min(maxBytes, INLINE_IMAGES_MAX_BYTES));
    if (typeof decoded === 'string') {
      fieldErrors[`inputImageUrls.${index}`] = [decoded];
      return value;
    }
    total += decoded.bytes.byteLength;
    if (total > INLINE_IMAGES_MAX_BYTES) {
      fieldErrors[`inputImageUrls.${index}`] = [
        `Inline images may total at most ${INLINE_IMAGES_MAX_BYTES} bytes per request: send larger ones with POST /api/ai/uploads`,
      ];
      return value;
    }
    const uploadId = randomUUID();
    images.push({ index, uploadId, ...decoded });
    return uploadReference(uploadId);
  });
  if (Object.keys(fieldErrors).length > 0) throw new ValidationError({ fieldErrors, formErrors: [] });
  return { body: { ...body, inputImageUrls: replaced }, images };
}

/**
 * Stores the inline images as uploads of the caller (the file, then its record, which expires like any
 * upload). Not for an Idempotency-Key replay of this very request: it answers the original task, whose
 * uploads exist (the references made now resolve to nothing, and the replay passes the check as any
 * replay does).
 */
export async function storeInlineImages(
  ctx: { store: StoreContext; now: () => Date; uploads?: Pick<UploadReader, 'put'> },
  input: {
    userId: string;
    images: readonly InlineImage[];
    ttlSeconds: number;
    maxBytes: number;
    idempotency?: { key: string; requestHash: string };
  },
): Promise<void> {
  if (input.images.length === 0) return;
  const uploads = ctx.uploads;
  if (!uploads) {
    throw new ValidationError({
      fieldErrors: Object.fromEntries(
        input.images.map((image) => [
          `inputImageUrls.${image.index}`,
          ['Uploads are not available on this deployment'],
        ]),
      ),
      formErrors: [],
    });
  }
  const now = ctx.now();
  if (input.idempotency && (await isRecordedRequest(ctx.store, input.userId, input.idempotency, now))) return;
  await Promise.all(
    input.images.map(async (image) => {
      const key = uploadKey(input.userId, image.uploadId);
      await uploads.put(key, image.bytes, image.contentType);
      await putUpload(ctx.store, {
        userId: input.userId,
        uploadId: image.uploadId,
        key,
        contentType: image.contentType,
        declaredBytes: image.bytes.byteLength,
        maxBytes: input.maxBytes,
        createdAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + input.ttlSeconds * 1000).toISOString(),
      });
    }),
  );
}

/**
 * Removes what `storeInlineImages` stored for a submit that was then refused (402, 429, a bad
 * reference, busy): each image's record, its file and the copy its check kept (`versions`, by upload
 * id), so a refused submit leaves nothing stored. Inline images exist only for an accepted task.
 */
export async function removeInlineImages(
  ctx: { store: StoreContext; uploads?: Pick<UploadReader, 'remove'> },
  input: { userId: string; images: readonly InlineImage[]; versions?: Record<string, string> },
): Promise<void> {
  const { uploads } = ctx;
  if (!uploads) return;
  await Promise.all(
    input.images.map(async ({ uploadId }) => {
      // The record first: from then on no submit can name the image, whatever the storage says.
      await deleteUpload(ctx.store, input.userId, uploadId);
      const version = input.versions?.[uploadId];
      await uploads.remove(uploadKey(input.userId, uploadId));
      if (version) await uploads.remove(checkedUploadKey(input.userId, uploadId, version));
    }),
  );
}
