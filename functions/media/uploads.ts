/**
 * Upload storage: where callers' reference images land (a presigned POST straight from the caller, or
 * a presigned PUT by the submit for an inline `data:` image), how the submit reads their first bytes,
 * and the short-lived GET URL the provider receives. One S3
 * implementation, deployed against the media bucket's `uploads/` prefix and locally against the local
 * gateway's S3 stand-in (local/upload-bucket.ts), which checks the same policy and signatures.
 *
 * It speaks S3 with `fetch` and the SDK's SigV4 signer, like s3-media-store.ts: the submit functions
 * read uploads and must stay within their bundle budget, which the S3 client would break.
 */
import {
  type AwsCredentials,
  credentialsFromEnv,
  MAX_PRESIGNED_URL_SECONDS,
  MAX_TEMPORARY_CREDENTIALS_URL_SECONDS,
  type PresignedPost,
  presignPost,
  presignUrl,
  uriEncode,
} from '../aws/signer';
import type { UploadContentType } from '../core/uploads';
import {
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_S3,
  AWS_REGION,
  type Env,
  readEnv,
  UPLOADS_BUCKET,
  UPLOADS_S3_ENDPOINT,
} from '../environment/environment';

/** The first bytes of a stored upload and its size. */
export interface UploadHead {
  bytes: Uint8Array;
  size: number;
  /** The object's ETag as S3 sent it (quotes included): the version these bytes are of. */
  etag?: string;
}

/** What a conditional copy found: the source still was the version named, or it was not (or is gone). */
export type CopyOutcome = 'copied' | 'changed';

/** What the submit and the send to the provider need. */
export interface UploadReader {
  /** The first `length` bytes and the total size, or undefined when nothing is stored at `key`. */
  head(key: string, length: number): Promise<UploadHead | undefined>;
  /** A signed GET URL of the object, valid `ttlSeconds` (at most {@link UploadReader.maxUrlTtlSeconds}). */
  signedUrl(key: string, ttlSeconds: number): Promise<string>;
  /**
   * The longest lifetime a signed URL can really have with these credentials: a URL signed with a
   * session token (a Lambda role) dies with the session, so one hour; with long-term keys SigV4's 7 days.
   */
  maxUrlTtlSeconds(): number;
  /** Stores `bytes` at `key` (a presigned PUT): the submit's inline `data:` images. */
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** Deletes `key` (a presigned DELETE; nothing there is no error): the inline images of a refused submit. */
  remove(key: string): Promise<void>;
  /**
   * Copies `from` to `to` in the bucket only while `from` is still the version `etag` names (S3's
   * CopyObject with `x-amz-copy-source-if-match`): `changed` when it is not, or is gone.
   */
  copyIfUnchanged(input: { from: string; to: string; etag: string }): Promise<CopyOutcome>;
}

/** What the uploads function needs. */
export interface UploadPoster {
  /** A presigned POST that stores exactly one object at `key`, of `contentType`, 1 to `maxBytes` bytes. */
  presignPost(input: {
    key: string;
    contentType: UploadContentType;
    maxBytes: number;
    expiresAt: Date;
  }): Promise<PresignedPost>;
}

export interface S3UploadsOptions {
  bucket: string;
  region: string;
  /** Another S3 endpoint (the local gateway, LocalStack); the bucket is then addressed in the path. */
  endpoint?: string;
  /** Default: the Lambda role's credentials from the environment, read per call. */
  credentials?: () => AwsCredentials;
  now?: () => Date;
}

function bucketUrl(options: S3UploadsOptions): URL {
  if (options.endpoint) {
    const url = new URL(options.endpoint);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/${uriEncode(options.bucket)}/`;
    return url;
  }
  return new URL(`https://${options.bucket}.s3.${options.region}.amazonaws.com/`);
}

function objectUrl(options: S3UploadsOptions, key: string): URL {
  const url = bucketUrl(options);
  url.pathname = `${url.pathname}${key.split('/').map(uriEncode).join('/')}`;
  return url;
}

/** Reads uploads (ranged GET) and signs GET URLs to them. */
export function createS3UploadReader(options: S3UploadsOptions): UploadReader {
  const credentials = options.credentials ?? (() => credentialsFromEnv());
  const now = options.now ?? (() => new Date());
  const sign = (key: string, ttl: number) =>
    presignUrl({
      method: 'GET',
      url: objectUrl(options, key),
      service: 's3',
      region: options.region,
      credentials: credentials(),
      date: now(),
      expiresInSeconds: ttl,
    });
  /** A presigned PUT or DELETE of `key`; anything but 2xx (or a DELETE's 404) is a 5xx, never the caller's 400. */
  const write = async (method: 'PUT' | 'DELETE', key: string, headers?: Record<string, string>, body?: Uint8Array) => {
    const url = await presignUrl({
      method,
      url: objectUrl(options, key),
      service: 's3',
      region: options.region,
      credentials: credentials(),
      date: now(),
      expiresInSeconds: 60,
    });
    const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(10_000) });
    await response.body?.cancel();
    if (!response.ok && !(method === 'DELETE' && response.status === 404)) {
      throw new Error(`${method} of ${key} answered HTTP ${response.status}`);
    }
  };
  return {
    async head(key, length) {
      const response = await fetch(await sign(key, 60), {
        headers: { range: `bytes=0-${length - 1}` },
        signal: AbortSignal.timeout(5000),
      });
      if (response.status === 404 || response.status === 403) {
        // 403: the role may not list the bucket, so S3 says AccessDenied for a missing key.
        await response.body?.cancel();
        return undefined;
      }
      if (response.status === 416) return { bytes: new Uint8Array(), size: 0 };
      if (!response.ok) {
        await response.body?.cancel();
        // Not the caller's fault: a 5xx (the error handler's 500), never a 400.
        throw new Error(`Ranged GET of ${key} answered HTTP ${response.status}`);
      }
      const bytes = new Uint8Array(await response.arrayBuffer()).subarray(0, length);
      const range = /\/(\d+)$/.exec(response.headers.get('content-range') ?? '');
      const size = range?.[1] ? Number(range[1]) : Number(response.headers.get('content-length') ?? bytes.byteLength);
      const etag = response.headers.get('etag');
      return { bytes, size, ...(etag ? { etag } : {}) };
    },
    signedUrl: sign,
    maxUrlTtlSeconds: () =>
      credentials().sessionToken === undefined ? MAX_PRESIGNED_URL_SECONDS : MAX_TEMPORARY_CREDENTIALS_URL_SECONDS,
    async copyIfUnchanged(input) {
      const copyHeaders = {
        'x-amz-copy-source': `/${uriEncode(options.bucket)}/${input.from.split('/').map(uriEncode).join('/')}`,
        'x-amz-copy-source-if-match': input.etag,
      };
      // The copy headers are signed (and kept as headers, not hoisted into the query), so the URL
      // copies this source under this condition and nothing else.
      const url = await presignUrl({
        method: 'PUT',
        url: objectUrl(options, input.to),
        service: 's3',
        region: options.region,
        credentials: credentials(),
        date: now(),
        expiresInSeconds: 60,
        signedHeaders: copyHeaders,
      });
      const response = await fetch(url, {
        method: 'PUT',
        headers: copyHeaders,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      // 412: the source is another version now; 404: it is gone. Either way not the bytes checked.
      if (response.status === 412 || response.status === 404) return 'changed';
      // CopyObject can fail after answering 200, with the error in the body (S3's CopyObject docs).
      if (!response.ok || text.includes('<Error>')) {
        throw new Error(`Copy of ${input.from} answered HTTP ${response.status}`);
      }
      return 'copied';
    },
    put: (key, bytes, contentType) => write('PUT', key, { 'content-type': contentType }, bytes),
    remove: (key) => write('DELETE', key),
  };
}

/** Makes the presigned POSTs of the uploads function. */
export function createS3UploadPoster(options: S3UploadsOptions): UploadPoster {
  const credentials = options.credentials ?? (() => credentialsFromEnv());
  const now = options.now ?? (() => new Date());
  return {
    presignPost(input) {
      return presignPost({
        url: bucketUrl(options).toString(),
        region: options.region,
        credentials: credentials(),
        date: now(),
        expiresAt: input.expiresAt,
        fields: { key: input.key, 'Content-Type': input.contentType },
        conditions: [{ bucket: options.bucket }, ['content-length-range', 1, input.maxBytes]],
      });
    },
  };
}

/**
 * The upload storage this environment names: UPLOADS_BUCKET (deployed: the media bucket) with
 * UPLOADS_S3_ENDPOINT locally (the local gateway's stand-in) or LocalStack's S3 endpoint; undefined
 * when uploads are not set up.
 */
export function uploadsOptionsFromEnv(env?: Env): S3UploadsOptions | undefined {
  const bucket = readEnv(UPLOADS_BUCKET, env);
  if (!bucket) return undefined;
  // LocalStack deployments name their S3 endpoint as the media store reads it.
  const endpoint =
    readEnv(UPLOADS_S3_ENDPOINT, env) ?? readEnv(AWS_ENDPOINT_URL_S3, env) ?? readEnv(AWS_ENDPOINT_URL, env);
  return { bucket, region: readEnv(AWS_REGION, env) ?? 'us-east-1', ...(endpoint ? { endpoint } : {}) };
}

/** The upload reader of this environment (UPLOADS_BUCKET), or undefined when uploads are not set up. */
export function uploadReaderFromEnv(env?: Env): UploadReader | undefined {
  const options = uploadsOptionsFromEnv(env);
  return options ? createS3UploadReader(options) : undefined;
}
