/**
 * Signing S3 result URLs: the part of the S3 media store the API functions use (they copy nothing), in
 * its own module so their bundles leave the copying code of `s3-media-store.ts` and `source.ts` out.
 */

import { type AwsCredentials, credentialsFromEnv, presignUrl, uriEncode } from '../aws/signer';
import { mediaResponseHeaders } from './media-types';
import type { MediaUrls } from './port';

export interface S3MediaUrlsOptions {
  bucket: string;
  region: string;
  /** Lifetime of the GET URLs `urlFor` hands out; default 3600 s. */
  urlTtlSeconds?: number;
  /** Another S3 endpoint (LocalStack, a test server), e.g. `http://127.0.0.1:4566`. */
  endpoint?: string;
  /** Address the bucket in the path (`<endpoint>/<bucket>/<key>`) rather than the host name. */
  forcePathStyle?: boolean;
  /** Default: the Lambda role's credentials from the environment, read per call. */
  credentials?: () => AwsCredentials;
  /** Signing clock, injected for tests. */
  now?: () => Date;
}

const DEFAULT_URL_TTL_SECONDS = 3600;

/** A presigner for the bucket's objects: `method` on `url`, valid `ttl` seconds, with `signedHeaders`. */
export type S3Presign = (
  method: 'GET' | 'PUT',
  url: URL,
  ttl: number,
  signedHeaders?: Record<string, string>,
) => Promise<string>;

/** The presigner of `options`' bucket (credentials read at each call). */
export function s3Presigner(options: S3MediaUrlsOptions): S3Presign {
  const credentials = options.credentials ?? (() => credentialsFromEnv());
  const now = options.now ?? (() => new Date());
  return (method, url, ttl, signedHeaders) =>
    presignUrl({
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

/** Creates the URL signer of an S3 bucket. Nothing is fetched, ever: a URL is signed locally. */
export function createS3MediaUrls(options: S3MediaUrlsOptions): MediaUrls {
  const now = options.now ?? (() => new Date());
  const urlTtlSeconds = options.urlTtlSeconds ?? DEFAULT_URL_TTL_SECONDS;
  const objectUrl = s3ObjectUrlBuilder(options);
  const presign = s3Presigner(options);
  return {
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
export function s3ObjectUrlBuilder(
  options: Pick<S3MediaUrlsOptions, 'bucket' | 'region' | 'endpoint' | 'forcePathStyle'>,
): (key: string) => URL {
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
