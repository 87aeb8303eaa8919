/**
 * The media types a stored result may have and how a stored key is served: a leaf module, so the
 * request-path functions, which only sign result URLs, need not bundle the copying code of `source.ts`.
 */
import type { TaskType } from '../core/task';

/** The media types a result may have, per kind, with the extension it is stored under. */
export const MEDIA_TYPES: Readonly<Record<TaskType, Readonly<Record<string, string>>>> = {
  image: { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' },
  video: { 'video/mp4': 'mp4', 'video/webm': 'webm', 'video/quicktime': 'mov' },
};

/** The extension a stored result gets for an allowed content type (`png`, `mp4`, ...). */
export function extensionForContentType(contentType: string): string | undefined {
  const type = contentType.toLowerCase();
  return MEDIA_TYPES.image[type] ?? MEDIA_TYPES.video[type];
}

/** The stored key for a result: the base key plus the extension of its (checked) type. */
export function keyWithExtension(keyBase: string, contentType: string): string {
  return `${keyBase}.${extensionForContentType(contentType) ?? 'bin'}`;
}

/** The content type of a stored key, from its extension (what the local gateway serves it as). */
export function contentTypeForKey(key: string): string {
  const extension = /\.([a-z0-9]+)$/i.exec(key)?.[1]?.toLowerCase();
  for (const types of Object.values(MEDIA_TYPES)) {
    for (const [type, ext] of Object.entries(types)) if (ext === extension) return type;
  }
  return 'application/octet-stream';
}

/**
 * Headers every stored result is served with (S3 object metadata and the signed GET's overrides, the
 * local media server): the canonical type, never rendered inline by the service's origin, never
 * re-sniffed by a browser.
 */
export function mediaResponseHeaders(key: string): Record<string, string> {
  return {
    'Content-Type': contentTypeForKey(key),
    'Content-Disposition': 'attachment',
    'X-Content-Type-Options': 'nosniff',
  };
}
