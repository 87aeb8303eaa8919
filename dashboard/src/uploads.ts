/**
 * Reference images from the person's own files: what the service accepts, the check of a file's first
 * bytes (the service checks them again before a task may use the upload), and the two upload steps
 * (`POST /api/ai/uploads` with the session, then the presigned POST straight to storage). No DOM here
 * beyond `File`, so a unit test can hold the checks against the service's own.
 */
import { createUpload } from './api';

/** The types `POST /api/ai/uploads` takes. */
export const UPLOAD_TYPES = ['image/png', 'image/jpeg', 'image/webp'] as const;
export type UploadType = (typeof UPLOAD_TYPES)[number];

const TYPE_NAMES: Record<UploadType, string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/webp': 'WebP' };

/** How many first bytes the type check reads. */
export const SNIFF_BYTES = 12;

/** The accepted type the bytes start like (magic numbers), or undefined. */
export function sniffType(bytes: Uint8Array): UploadType | undefined {
  const starts = (values: number[], at = 0) => values.every((value, index) => bytes[at + index] === value);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  // RIFF <size> WEBP
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  return undefined;
}

/** Why a file cannot be a reference image (its declared type and first bytes), or undefined. */
export function fileProblem(declared: string, firstBytes: Uint8Array): string | undefined {
  if (!(UPLOAD_TYPES as readonly string[]).includes(declared)) {
    return `Wrong type${declared ? ` (${declared})` : ''}: PNG, JPEG or WebP images only.`;
  }
  const sniffed = sniffType(firstBytes);
  if (sniffed !== declared) {
    const name = TYPE_NAMES[declared as UploadType];
    return `Wrong type: the file is labelled ${name} but its bytes are ${sniffed ? TYPE_NAMES[sniffed] : 'not a PNG, JPEG or WebP image'}.`;
  }
  return undefined;
}

/** A size for people: bytes, KB or MB. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** A presigned POST refused by storage: its status and S3's error code, if it said one. */
export class StorageRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(`Storage refused the file (HTTP ${status}${code ? `, ${code}` : ''})`);
    this.name = 'StorageRefusedError';
  }
}

/**
 * Uploads a checked file: asks for a presigned POST (session and CSRF header; a 400 is an `ApiError`
 * naming `size` or `contentType`), then sends the fields and the file straight to storage, without the
 * session cookie. Resolves with the `upload://` reference for `inputImageUrls`.
 */
export async function uploadFile(file: File, type: UploadType): Promise<string> {
  const created = await createUpload({ contentType: type, size: file.size });
  const form = new FormData();
  for (const [name, value] of Object.entries(created.uploadFields ?? {})) form.append(name, value);
  form.append('file', file);
  const response = await fetch(created.uploadUrl, { method: 'POST', body: form, credentials: 'omit' });
  if (!response.ok) {
    const text = await response.text().catch(() => '');
    throw new StorageRefusedError(response.status, /<Code>([^<]+)<\/Code>/.exec(text)?.[1]);
  }
  await response.body?.cancel();
  return created.url;
}
