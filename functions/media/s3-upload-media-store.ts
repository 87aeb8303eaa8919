/**
 * The media worker's S3 store: each result is streamed from the provider into the bucket with a
 * multipart `Upload` (`@aws-sdk/lib-storage`), which holds at most `queueSize` parts of `partSize`
 * bytes in memory whatever the file's size, with or without a declared length (a 1 GB video copies with
 * the function's memory flat). URLs are made by the request-path store (`urls`), so both sign alike.
 *
 * Only the worker imports this module: the S3 client is far too large for the API functions' budget.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { observeClient } from '../core/aws-call-observer';
import type { TaskType } from '../core/task';
import { keyWithExtension, mediaResponseHeaders } from './media-types';
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

export interface S3UploadMediaStoreOptions {
  bucket: string;
  region: string;
  urlTtlSeconds?: number;
  /** Size limit for every kind; default 50 MB for images, 500 MB for video. */
  maxBytes?: number;
  endpoint?: string;
  forcePathStyle?: boolean;
  /** Deadline for one copy (download and upload together). */
  timeoutMs?: number;
  sourcePolicy?: SourcePolicy;
  resolve?: ResolveHost;
  /** Makes the URLs handed out (the request-path store, so a URL is the same whoever made it). */
  urls: Pick<MediaStore, 'urlFor'>;
  /** Injected by tests (an S3 stand-in); default a client for `region`/`endpoint`. */
  client?: S3Client;
  /** Bytes per part (S3's minimum, 5 MiB, by default) and parts in flight (default 2). */
  partSize?: number;
  queueSize?: number;
}

const MIN_PART_SIZE = 5 * 1024 * 1024;

/** Creates the store; the client is made on the first copy. */
export function createS3UploadMediaStore(options: S3UploadMediaStoreOptions): MediaStore {
  const timeoutMs = options.timeoutMs ?? DEFAULT_COPY_TIMEOUT_MS;
  const sourceOptions = {
    policy: options.sourcePolicy ?? STRICT_SOURCE_POLICY,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  };
  let client = options.client;
  const s3 = () => {
    if (!client) {
      client = new S3Client({
        region: options.region,
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        forcePathStyle: options.forcePathStyle ?? false,
      });
      observeClient('s3', client);
    }
    return client;
  };

  return {
    async copyFromUrl(sourceUrl: string, keyBase: string, kind: TaskType): Promise<StoredMedia> {
      const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES[kind];
      const signal = AbortSignal.timeout(timeoutMs);
      let source: OpenedSource | undefined;
      try {
        source = await openSource(sourceUrl, kind, maxBytes, signal, sourceOptions);
        const key = keyWithExtension(keyBase, source.contentType);
        const headers = mediaResponseHeaders(key);
        const upload = new Upload({
          client: s3(),
          partSize: Math.max(options.partSize ?? MIN_PART_SIZE, MIN_PART_SIZE),
          queueSize: options.queueSize ?? 2,
          // The parts of a failed upload are left to the bucket's rule, which removes incomplete
          // multipart uploads after a day: the functions may only put and get objects (no
          // AbortMultipartUpload), and a denied abort would hide the copy's real error.
          leavePartsOnError: true,
          params: {
            Bucket: options.bucket,
            Key: key,
            Body: source.body,
            ContentType: headers['Content-Type'] ?? 'application/octet-stream',
            ContentDisposition: headers['Content-Disposition'] ?? 'attachment',
          },
        });
        const abort = () => void upload.abort().catch(() => undefined);
        signal.addEventListener('abort', abort, { once: true });
        try {
          await upload.done();
        } finally {
          signal.removeEventListener('abort', abort);
        }
        return { key, contentType: source.contentType, bytes: source.bytesRead() };
      } catch (error) {
        await source?.body.cancel().catch(() => undefined);
        if (error instanceof MediaCopyError) throw error;
        // The SDK's message names the operation and code; the URL (with a signature) is never in it.
        throw asCopyError(error, `Upload to ${keyBase} failed`, signal);
      }
    },

    urlFor: (key, notAfter) => options.urls.urlFor(key, notAfter),
  };
}
