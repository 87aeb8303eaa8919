/**
 * The filesystem media store of the local stack: results are copied under a directory and served by
 * the local gateway at `/media/<key>`.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';
import type { TaskType } from '../core/task';
import { createFsMediaUrls, type FsMediaUrlsOptions, MEDIA_URL_PREFIX } from './fs-media-urls';
import { keyWithExtension } from './media-types';
import { MediaCopyError, type MediaStore, type StoredMedia } from './port';
import {
  asCopyError,
  DEFAULT_COPY_TIMEOUT_MS,
  DEFAULT_MAX_BYTES,
  type OpenedSource,
  openSource,
  type ResolveHost,
} from './source';
import { type SourcePolicy, STRICT_SOURCE_POLICY } from './source-policy';

export { MEDIA_URL_PREFIX } from './fs-media-urls';
/** What the local gateway serves a stored key with: its type, as a download, never sniffed. */
export { contentTypeForKey, mediaResponseHeaders } from './media-types';

export interface FsMediaStoreOptions extends FsMediaUrlsOptions {
  /** Directory holding the files (created on demand). */
  dir: string;
  /** Size limit for every kind; default 50 MB for images, 500 MB for video. */
  maxBytes?: number;
  /** Deadline for one copy; default 120 s. */
  timeoutMs?: number;
  /** Which result URLs may be fetched; default https to public addresses only. */
  sourcePolicy?: SourcePolicy;
  /** Host name resolution, injected by tests; default the system resolver. */
  resolve?: ResolveHost;
}

/** Creates the filesystem store. */
export function createFsMediaStore(options: FsMediaStoreOptions): MediaStore {
  const root = resolve(options.dir);
  const timeoutMs = options.timeoutMs ?? DEFAULT_COPY_TIMEOUT_MS;
  const sourceOptions = {
    policy: options.sourcePolicy ?? STRICT_SOURCE_POLICY,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  };

  return {
    async copyFromUrl(sourceUrl: string, keyBase: string, kind: TaskType): Promise<StoredMedia> {
      const base = keyPath(root, keyBase);
      if (!base) throw new MediaCopyError(`Invalid media key "${keyBase}"`);
      const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES[kind];
      const signal = AbortSignal.timeout(timeoutMs);
      // A dot-file in the same directory: the rename is atomic and the gateway never serves dot-files.
      const temp = join(dirname(base), `.${basename(base)}.${randomUUID()}.part`);
      let source: OpenedSource | undefined;
      try {
        source = await openSource(sourceUrl, kind, maxBytes, signal, sourceOptions);
        // The extension follows the checked type, so the file is served with its real type.
        const key = keyWithExtension(keyBase, source.contentType);
        const target = keyPath(root, key);
        if (!target) throw new MediaCopyError(`Invalid media key "${key}"`);
        await mkdir(dirname(target), { recursive: true });
        await pipeline(
          Readable.fromWeb(source.body as NodeWebReadableStream<Uint8Array>, { signal }),
          createWriteStream(temp, { flags: 'wx' }),
        );
        await rename(temp, target);
        return { key, contentType: source.contentType, bytes: source.bytesRead() };
      } catch (error) {
        // Releases the source connection when the failure came before the pipeline owned the body.
        await source?.body.cancel().catch(() => undefined);
        await rm(temp, { force: true });
        throw asCopyError(error, `Copy to ${keyBase} failed`, signal);
      }
    },

    urlFor: createFsMediaUrls(options).urlFor,
  };
}

/**
 * Maps a request path (`/media/<encoded key>`, as `urlFor` builds it) to the file under `dir`, or
 * `undefined` when the path is not a media path or would leave `dir` (`..`, encoded separators,
 * absolute segments, NUL bytes) or names a dot-file (temporary files of unfinished copies).
 * It does not check that the file exists.
 */
export function resolveMediaPath(dir: string, urlPath: string): string | undefined {
  const path = urlPath.split(/[?#]/, 1)[0] ?? '';
  if (!path.startsWith(MEDIA_URL_PREFIX)) return undefined;
  const segments: string[] = [];
  for (const raw of path.slice(MEDIA_URL_PREFIX.length).split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    segments.push(segment);
  }
  return keyPath(resolve(dir), segments.join('/'), segments);
}

/** The file of a key under `root`, or undefined when the key is not a safe relative path. */
function keyPath(root: string, key: string, segments: string[] = key.split('/')): string | undefined {
  if (key.length === 0 || segments.length === 0) return undefined;
  for (const segment of segments) {
    if (segment.length === 0 || segment.startsWith('.')) return undefined;
    if (/[\\/\0]/.test(segment) || segment.includes(':')) return undefined;
  }
  const target = resolve(root, ...segments);
  return target.startsWith(root + sep) ? target : undefined;
}
