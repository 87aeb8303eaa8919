/**
 * The S3 media store: results are streamed from the provider into the bucket with a presigned PUT,
 * and handed out as presigned GET URLs. Deployed, the API functions use it to sign URLs only: every
 * copy is made by the media worker or the sweeper with `s3-upload-media-store.ts`, which streams a
 * source without `Content-Length` up to the kind's limit. The 16 MiB cap on such a source below is
 * this store's alone (one PUT needs the length first).
 *
 * It speaks S3 with `fetch` and the SDK's SigV4 signer (`../aws/signer`) rather than
 * `@aws-sdk/client-s3`: the Lambda bundles are measured against a DynamoDB-client-only floor, and two
 * signed requests do not justify the S3 client.
 */

import { type AwsCredentials, credentialsFromEnv, presignUrl, uriEncode } from '../aws/signer';
import type { TaskType } from '../core/task';
import { MediaCopyError, type MediaStore, type StoredMedia } from './port';
import {
  asCopyError,
  DEFAULT_COPY_TIMEOUT_MS,
  DEFAULT_MAX_BYTES,
  keyWithExtension,
  mediaResponseHeaders,
  type OpenedSource,
  openSource,
  type ResolveHost,
} from './source';
import { type SourcePolicy, STRICT_SOURCE_POLICY } from './source-policy';

export interface S3MediaStoreOptions {
  bucket: string;
  region: string;
  /** Lifetime of the GET URLs `urlFor` hands out; default 3600 s. */
  urlTtlSeconds?: number;
  /** Size limit for every kind; default 50 MB for images, 500 MB for video. */
  maxBytes?: number;
  /** Another S3 endpoint (LocalStack, a test server), e.g. `http://127.0.0.1:4566`. */
  endpoint?: string;
  /** Address the bucket in the path (`<endpoint>/<bucket>/<key>`) rather than the host name. */
  forcePathStyle?: boolean;
  /** Default: the Lambda role's credentials from the environment, read per call. */
  credentials?: () => AwsCredentials;
  /** Deadline for one copy (download and upload together); default 120 s. */
  timeoutMs?: number;
  /** Signing clock, injected for tests. */
  now?: () => Date;
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
const DEFAULT_URL_TTL_SECONDS = 3600;
const DEFAULT_MAX_UNDECLARED_BYTES = 16 * 1024 * 1024;

/** Creates the S3 store. Nothing is fetched until the first call. */
export function createS3MediaStore(options: S3MediaStoreOptions): MediaStore {
  const credentials = options.credentials ?? (() => credentialsFromEnv());
  const now = options.now ?? (() => new Date());
  const urlTtlSeconds = options.urlTtlSeconds ?? DEFAULT_URL_TTL_SECONDS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_COPY_TIMEOUT_MS;
  const objectUrl = objectUrlBuilder(options);

  const sourceOptions = {
    policy: options.sourcePolicy ?? STRICT_SOURCE_POLICY,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  };

  function presign(
    method: 'GET' | 'PUT',
    url: URL,
    ttl: number,
    signedHeaders?: Record<string, string>,
  ): Promise<string> {
    return presignUrl({
      method,
      url,
      service: 's3',
      region: options.region,
      credentials: credentials(),
      date: now(),
      expiresInSeconds: ttl,
      ...(signedHeaders ? { signedHeaders } : {}),
    });
  }

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

    async urlFor(key: string, notAfter?: Date): Promise<string> {
      // The response overrides repeat the stored metadata, so objects stored before it was set are
      // served the same way. S3 has no override for X-Content-Type-Options (see docs/design/security.md).
      const url = objectUrl(key);
      url.searchParams.set('response-content-disposition', 'attachment');
      url.searchParams.set(
        'response-content-type',
        mediaResponseHeaders(key)['Content-Type'] ?? 'application/octet-stream',
      );
      const left = notAfter ? Math.floor((notAfter.getTime() - now().getTime()) / 1000) : urlTtlSeconds;
      return presign('GET', url, Math.max(1, Math.min(urlTtlSeconds, left)));
    },
  };
}

/** `https://<bucket>.s3.<region>.amazonaws.com/<key>`, or the path-style/endpoint variants. */
function objectUrlBuilder(options: S3MediaStoreOptions): (key: string) => URL {
  const endpoint = new URL(options.endpoint ?? `https://s3.${options.region}.amazonaws.com`);
  const prefix = endpoint.pathname.replace(/\/+$/, '');
  const bucket = uriEncode(options.bucket);
  return (key) => {
    const path = key.split('/').map(uriEncode).join('/');
    const url = new URL(endpoint);
    if (options.forcePathStyle) {
      url.pathname = `${prefix}/${bucket}/${path}`;
    } else {
      url.hostname = `${options.bucket}.${endpoint.hostname}`;
      url.pathname = `${prefix}/${path}`;
    }
    return url;
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
