/**
 * Fetching a result file from the provider, with the checks both media adapters share: a deadline,
 * a 2xx status, a content type of the task's kind, and a size limit (declared and actual).
 */
import type { TaskType } from '../core/task';
import { MediaCopyError } from './port';

/** Default size limits per kind; a generated image is a few MB, a short clip tens of MB. */
export const DEFAULT_MAX_BYTES: Readonly<Record<TaskType, number>> = {
  image: 50 * 1024 * 1024,
  video: 500 * 1024 * 1024,
};

/** Default deadline for one copy (source download and upload together). */
export const DEFAULT_COPY_TIMEOUT_MS = 120_000;

export interface OpenedSource {
  /** The media type without parameters, lowercased (`image/png`). */
  contentType: string;
  /** The declared `Content-Length`, when the source sent a valid one. */
  declaredBytes: number | undefined;
  /** The body, erroring with `MediaCopyError` as soon as it passes the limit or the declared length. */
  body: ReadableStream<Uint8Array>;
  /** Bytes that went through `body` so far. */
  bytesRead(): number;
}

/**
 * Requests `sourceUrl` and checks status, type and declared size before any byte is stored.
 * @throws MediaCopyError on any failure; the response body is released.
 */
export async function openSource(
  sourceUrl: string,
  kind: TaskType,
  maxBytes: number,
  signal: AbortSignal,
): Promise<OpenedSource> {
  const where = describeUrl(sourceUrl);
  let response: Response;
  try {
    // identity: a compressed transfer would make Content-Length describe other bytes than the body.
    response = await fetch(sourceUrl, { signal, redirect: 'follow', headers: { 'accept-encoding': 'identity' } });
  } catch (error) {
    throw new MediaCopyError(
      signal.aborted ? `Source ${where} did not answer in time` : `Source ${where} unreachable`,
      { cause: error },
    );
  }
  const release = () => response.body?.cancel().catch(() => undefined);

  if (!response.ok) {
    await release();
    throw new MediaCopyError(`Source ${where} answered HTTP ${response.status}`);
  }
  const contentType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (!contentType.startsWith(`${kind}/`)) {
    await release();
    throw new MediaCopyError(`Source ${where} has content type "${contentType}", expected ${kind}/*`);
  }
  const declaredBytes = parseLength(response.headers.get('content-length'));
  if (declaredBytes !== undefined && declaredBytes > maxBytes) {
    await release();
    throw new MediaCopyError(`Source ${where} declares ${declaredBytes} bytes, over the ${maxBytes}-byte limit`);
  }
  if (!response.body) throw new MediaCopyError(`Source ${where} has no body`);

  let read = 0;
  const limit = declaredBytes ?? maxBytes;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      read += chunk.byteLength;
      if (read > limit) {
        controller.error(
          new MediaCopyError(
            declaredBytes === undefined
              ? `Source ${where} sent more than the ${maxBytes}-byte limit`
              : `Source ${where} sent more than its declared ${declaredBytes} bytes`,
          ),
        );
        return;
      }
      controller.enqueue(chunk);
    },
    flush(controller) {
      if (declaredBytes !== undefined && read !== declaredBytes) {
        controller.error(new MediaCopyError(`Source ${where} ended after ${read} of ${declaredBytes} bytes`));
      }
    },
  });
  return {
    contentType,
    declaredBytes,
    body: response.body.pipeThrough(counter),
    bytesRead: () => read,
  };
}

/** Normalises any failure of a copy into a `MediaCopyError`, keeping the first meaningful cause. */
export function asCopyError(error: unknown, fallback: string, signal: AbortSignal): MediaCopyError {
  if (error instanceof MediaCopyError) return error;
  const inner = findCopyError(error);
  if (inner) return inner;
  if (signal.aborted) return new MediaCopyError(`${fallback}: timed out`, { cause: error });
  return new MediaCopyError(fallback, { cause: error });
}

function findCopyError(error: unknown): MediaCopyError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof MediaCopyError) return current;
    current = current.cause;
  }
  return undefined;
}

/** The extension a stored result gets for a content type (`png`, `mp4`, ...). */
export function extensionForContentType(contentType: string): string | undefined {
  return EXTENSIONS[contentType.toLowerCase()];
}

/** The stored key for a result: the base key plus the extension of what the source actually sent. */
export function keyWithExtension(keyBase: string, contentType: string): string {
  return `${keyBase}.${extensionForContentType(contentType) ?? 'bin'}`;
}

/** The content type of a stored key, from its extension (what the local gateway serves it as). */
export function contentTypeForKey(key: string): string {
  const extension = /\.([a-z0-9]+)$/i.exec(key)?.[1]?.toLowerCase();
  for (const [type, ext] of Object.entries(EXTENSIONS)) if (ext === extension) return type;
  return 'application/octet-stream';
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/quicktime': 'mov',
};

function parseLength(header: string | null): number | undefined {
  if (header === null || !/^\d+$/.test(header.trim())) return undefined;
  const value = Number(header.trim());
  return Number.isSafeInteger(value) ? value : undefined;
}

/** Origin and path only: provider result URLs may carry access tokens in their query. */
function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
