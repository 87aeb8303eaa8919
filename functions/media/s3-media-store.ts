/**
 * The S3 media store: results are streamed from the provider into the bucket with a presigned PUT,
 * and handed out as presigned GET URLs (`s3-media-urls.ts`, which the API functions use alone: every
 * copy is made by the media worker or the sweeper with `s3-upload-media-store.ts`, which streams a
 * source without `Content-Length` up to the kind's limit. The 16 MiB cap on such a source below is
 * this store's alone (one PUT needs the length first).
 *
 * It speaks S3 with `fetch` and the SDK's SigV4 signer (`../aws/signer`) rather than
 * `@aws-sdk/client-s3`: the Lambda bundles are measured against a DynamoDB-client-only floor, and two
 * signed requests do not justify the S3 client.
 */

import type { TaskType } from '../core/task';
import { keyWithExtension, mediaResponseHeaders } from './media-types';
import { MediaCopyError, type MediaStore, type StoredMedia } from './port';
import { createS3MediaUrls, type S3MediaUrlsOptions, s3ObjectUrlBuilder, s3Presigner } from './s3-media-urls';
import {
  asCopyError,
  DEFAULT_COPY_TIMEOUT_MS,
  DEFAULT_MAX_BYTES,
  type OpenedSource,
  openSource,
  type ResolveHost,
} from './source';
import { type SourcePolicy, STRICT_SOURCE_POLICY } from './source-policy';

export interface S3MediaStoreOptions extends S3MediaUrlsOptions {
  /** Size limit for every kind; default 50 MB for images, 500 MB for video. */
  maxBytes?: number;
  /** Deadline for one copy (download and upload together); default 120 s. */
  timeoutMs?: number;
  /** Which result URLs may be fetched; default https to public addresses only. */
  sourcePolicy?: SourcePolicy;
  /** Host name resolution, injected by tests; default the system resolver. */
  resolve?: ResolveHost;
  /**
   * Largest source without `Content-Length` that is accepted (it has to be held in memory to give
   * the PUT its length); default 16 MB. Sources that declare their length are streamed whatever size.
   */
  maxUndeclaredBytes?: number;
}

/** Lifetime of the presigned PUT: it only has to outlive the start of the upload. */
const PUT_URL_TTL_SECONDS = 900;
const DEFAULT_MAX_UNDECLARED_BYTES = 16 * 1024 * 1024;

/** Creates the S3 store. Nothing is fetched until the first call. */
export function createS3MediaStore(options: S3MediaStoreOptions): MediaStore {
  const timeoutMs = options.timeoutMs ?? DEFAULT_COPY_TIMEOUT_MS;
  const objectUrl = s3ObjectUrlBuilder(options);
  const presign = s3Presigner(options);
  const urls = createS3MediaUrls(options);

  const sourceOptions = {
    policy: options.sourcePolicy ?? STRICT_SOURCE_POLICY,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  };

  return {
    async copyFromUrl(sourceUrl: string, keyBase: string, kind: TaskType): Promise<StoredMedia> {
      const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES[kind];
      const signal = AbortSignal.timeout(timeoutMs);
      let source: OpenedSource | undefined;
      try {
        source = await openSource(sourceUrl, kind, maxBytes, signal, sourceOptions);
        const key = keyWithExtension(keyBase, source.contentType);
        let body: ReadableStream<Uint8Array> | Uint8Array;
        let length: number;
        if (source.declaredBytes !== undefined) {
          body = source.body;
          length = source.declaredBytes;
        } else {
          // A single PUT needs Content-Length up front (S3 refuses a chunked body without it, and the
          // streaming aws-chunked signature also needs the decoded length). Multipart upload would
          // avoid buffering but costs three or more requests and 5 MB parts; providers send the length
          // in practice, so the rare source without it is buffered, capped well below a video's
          // limit so that memory stays bounded.
          body = await readCapped(
            source.body,
            Math.min(maxBytes, options.maxUndeclaredBytes ?? DEFAULT_MAX_UNDECLARED_BYTES),
          );
          length = body.byteLength;
        }
        // Type and disposition are signed, so the object can only be stored with these headers.
        const stored = storedHeaders(key);
        const putUrl = await presign('PUT', objectUrl(key), PUT_URL_TTL_SECONDS, stored);
        const init: RequestInit & { duplex: 'half' } = {
          method: 'PUT',
          headers: { ...stored, 'content-length': String(length) },
          body,
          signal,
          // Required by fetch for a stream body; the request is sent while the source is still arriving.
          duplex: 'half',
        };
        const response = await fetch(putUrl, init);
        const answer = await response.text().catch(() => '');
        if (!response.ok) {
          // The URL is left out of the message: it carries a signature and, in Lambda, a session token.
          const code = /<Code>([^<]{1,64})<\/Code>/.exec(answer)?.[1] ?? 'no error code';
          throw new MediaCopyError(`S3 PUT of ${key} answered HTTP ${response.status} (${code})`);
        }
        return { key, contentType: source.contentType, bytes: length };
      } catch (error) {
        await source?.body.cancel().catch(() => undefined);
        throw asCopyError(error, `Copy to ${keyBase} failed`, signal);
      }
    },

    urlFor: (key, notAfter) => urls.urlFor(key, notAfter),
  };
}

/** The object metadata S3 stores and serves back: canonical type, download rather than display. */
function storedHeaders(key: string): Record<string, string> {
  const headers = mediaResponseHeaders(key);
  return {
    'content-type': headers['Content-Type'] ?? 'application/octet-stream',
    'content-disposition': headers['Content-Disposition'] ?? 'attachment',
  };
}

async function readCapped(stream: ReadableStream<Uint8Array>, cap: number): Promise<Uint8Array> {
  // openSource's stream enforces the kind's limit; this enforces the smaller in-memory one.
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of stream) {
    length += chunk.byteLength;
    if (length > cap) {
      // Leaving the loop by throwing cancels the stream, which releases the source.
      throw new MediaCopyError(`Source without Content-Length sent more than the ${cap}-byte in-memory limit`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
