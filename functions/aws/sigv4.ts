/**
 * A small AWS Signature Version 4 signer (header signing and presigned URLs) on node:crypto.
 *
 * It exists so that the Lambdas can call S3 and Secrets Manager with plain `fetch` instead of pulling
 * in `@aws-sdk/client-s3` and `@aws-sdk/client-secrets-manager`, whose bundles dwarf the handlers.
 * It is checked against AWS's published vectors in `test/unit/sigv4.test.ts`.
 *
 * Scope: single-chunk signing only (no aws-chunked streaming signatures, no SigV4a).
 */
import { createHash, createHmac } from 'node:crypto';

/** AWS credentials; `sessionToken` is present for temporary (role) credentials, as in Lambda. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The payload hash S3 accepts when the body is not part of the signature (presigned URLs, streams). */
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

const ALGORITHM = 'AWS4-HMAC-SHA256';

/** What both signing forms share. */
export interface SigningScope {
  /** Signing service name: `s3`, `secretsmanager`, ... */
  service: string;
  region: string;
  credentials: AwsCredentials;
  /** Signing time; defaults to now. */
  date?: Date;
}

export interface SignRequestInput extends SigningScope {
  method: string;
  url: URL | string;
  /** Headers to send and sign; `host` and `x-amz-date` are added. */
  headers?: Record<string, string>;
  /** The body, hashed into the signature (ignored when `payloadHash` is given). */
  body?: string | Uint8Array;
  /** A precomputed payload hash, or `UNSIGNED-PAYLOAD` (S3 only). */
  payloadHash?: string;
}

export interface PresignUrlInput extends SigningScope {
  method: string;
  url: URL | string;
  /** Lifetime in seconds (1 to 604800). */
  expiresInSeconds: number;
  /** Headers the eventual request must carry with these exact values (e.g. `content-type`). */
  signedHeaders?: Record<string, string>;
}

/** `sha256` of UTF-8 text or bytes, as lowercase hex. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `YYYYMMDDTHHMMSSZ`, the form SigV4 uses for `X-Amz-Date`. */
export function amzDate(date: Date): string {
  return date.toISOString().replace(/[:-]|\.\d{3}/g, '');
}

/**
 * Signs a request in the `Authorization` header.
 * @returns the headers to send: the given ones plus `host`, `x-amz-date`, `x-amz-security-token`
 *   (with temporary credentials) and `authorization`.
 */
export function signRequest(input: SignRequestInput): Record<string, string> {
  const url = toUrl(input.url);
  const time = amzDate(input.date ?? new Date());
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {})) headers[name.toLowerCase()] = value;
  headers.host = url.host;
  headers['x-amz-date'] = time;
  if (input.credentials.sessionToken) headers['x-amz-security-token'] = input.credentials.sessionToken;

  const payloadHash = input.payloadHash ?? sha256Hex(input.body ?? '');
  const { signature, signedHeaders, scope } = computeSignature({
    ...input,
    time,
    canonicalUri: canonicalPath(url, input.service),
    canonicalQuery: canonicalQueryString(url.searchParams),
    headers,
    payloadHash,
  });
  headers.authorization = `${ALGORITHM} Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return headers;
}

/**
 * Builds a presigned URL (query-string authentication) with an unsigned payload, as S3 expects.
 * The session token goes into the query and is signed, which is what S3 requires.
 */
export function presignUrl(input: PresignUrlInput): string {
  const url = toUrl(input.url);
  if (!Number.isInteger(input.expiresInSeconds) || input.expiresInSeconds < 1 || input.expiresInSeconds > 604800) {
    throw new RangeError('expiresInSeconds must be an integer from 1 to 604800');
  }
  const time = amzDate(input.date ?? new Date());
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.signedHeaders ?? {})) headers[name.toLowerCase()] = value;
  headers.host = url.host;

  const scope = credentialScope(time, input.region, input.service);
  const query = new URLSearchParams(url.searchParams);
  query.set('X-Amz-Algorithm', ALGORITHM);
  query.set('X-Amz-Credential', `${input.credentials.accessKeyId}/${scope}`);
  query.set('X-Amz-Date', time);
  query.set('X-Amz-Expires', String(input.expiresInSeconds));
  if (input.credentials.sessionToken) query.set('X-Amz-Security-Token', input.credentials.sessionToken);
  query.set('X-Amz-SignedHeaders', signedHeaderNames(headers));

  const canonicalQuery = canonicalQueryString(query);
  const { signature } = computeSignature({
    ...input,
    time,
    canonicalUri: canonicalPath(url, input.service),
    canonicalQuery,
    headers,
    payloadHash: UNSIGNED_PAYLOAD,
  });
  // The query is written in canonical (sorted, strictly encoded) form: what was signed is what is sent.
  return `${url.origin}${canonicalPath(url, 's3')}?${canonicalQuery}&X-Amz-Signature=${signature}`;
}

/** Credentials of the Lambda execution role (or of the shell, locally), from the standard variables. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): AwsCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new Error('AWS credentials missing: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set');
  }
  const sessionToken = env.AWS_SESSION_TOKEN;
  return sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey };
}

/** RFC 3986 encoding as SigV4 defines it: everything but `A-Z a-z 0-9 - . _ ~` is percent-encoded. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

interface SignatureInput extends SigningScope {
  method: string;
  time: string;
  canonicalUri: string;
  canonicalQuery: string;
  headers: Record<string, string>;
  payloadHash: string;
}

function computeSignature(input: SignatureInput): { signature: string; signedHeaders: string; scope: string } {
  const names = Object.keys(input.headers).sort();
  const canonicalHeaders = names.map((name) => `${name}:${normalizeHeaderValue(input.headers[name] ?? '')}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    input.method.toUpperCase(),
    input.canonicalUri,
    input.canonicalQuery,
    canonicalHeaders,
    signedHeaders,
    input.payloadHash,
  ].join('\n');
  const scope = credentialScope(input.time, input.region, input.service);
  const stringToSign = [ALGORITHM, input.time, scope, sha256Hex(canonicalRequest)].join('\n');
  const key = signingKey(input.credentials.secretAccessKey, input.time.slice(0, 8), input.region, input.service);
  return { signature: hmac(key, stringToSign).toString('hex'), signedHeaders, scope };
}

function credentialScope(time: string, region: string, service: string): string {
  return `${time.slice(0, 8)}/${region}/${service}/aws4_request`;
}

function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  const kDate = hmac(`AWS4${secret}`, day);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, service);
  return hmac(kService, 'aws4_request');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

function signedHeaderNames(headers: Record<string, string>): string {
  return Object.keys(headers).sort().join(';');
}

function normalizeHeaderValue(value: string): string {
  return value.trim().replace(/\s+/g, ' ');
}

/**
 * The canonical URI: each path segment decoded then strictly re-encoded, so that a URL whose path is
 * already encoded (as WHATWG `URL` leaves it, more loosely than SigV4) canonicalises to what AWS
 * computes. S3 uses it as is; every other service encodes it a second time.
 */
function canonicalPath(url: URL, service: string): string {
  const path = url.pathname || '/';
  const once = path
    .split('/')
    .map((segment) => uriEncode(safeDecode(segment)))
    .join('/');
  if (service === 's3') return once;
  return once
    .split('/')
    .map((segment) => uriEncode(segment))
    .join('/');
}

function canonicalQueryString(params: URLSearchParams): string {
  const pairs: [string, string][] = [];
  for (const [name, value] of params) pairs.push([uriEncode(name), uriEncode(value)]);
  pairs.sort(([aName, aValue], [bName, bValue]) =>
    aName < bName ? -1 : aName > bName ? 1 : aValue < bValue ? -1 : aValue > bValue ? 1 : 0,
  );
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function toUrl(url: URL | string): URL {
  return typeof url === 'string' ? new URL(url) : url;
}
