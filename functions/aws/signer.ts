/**
 * AWS Signature Version 4 through the SDK's own signer (`@smithy/signature-v4`, with the SHA-256 of
 * `@smithy/core/checksum`): the DynamoDB client already bundles both, so the S3 presigned URLs and the
 * Secrets Manager call cost no extra bytes and no hand-written cryptography. This module only adapts
 * plain URLs and header records to the signer's request shape.
 */

import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import { awsCallObserver } from '../core/aws-call-observer';
import {
  AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY,
  AWS_SESSION_TOKEN,
  type Env,
  readEnv,
} from '../environment/environment';

/** AWS credentials; `sessionToken` is present for temporary (role) credentials, as in Lambda. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** SigV4 query authentication refuses anything longer than seven days. */
export const MAX_PRESIGNED_URL_SECONDS = 604_800;

/**
 * The longest URL lifetime the service signs with temporary credentials (a Lambda role's). A URL
 * signed with a session token dies with that session, and Lambda does not promise how long its role
 * session lasts (it does not follow the role's maximum session duration), so anything longer would be
 * a lifetime the URL may not have. One hour is what the SDKs' own presigners default to; clients get
 * fresh URLs on every read anyway.
 */
export const MAX_TEMPORARY_CREDENTIALS_URL_SECONDS = 3600;

/** The payload hash S3 accepts when the body is not part of the signature (presigned URLs). */
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const CONTENT_SHA256 = 'x-amz-content-sha256';

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
  /** Headers to send and sign; `host`, `x-amz-date` (and the session token) are added. */
  headers?: Record<string, string>;
  /** The body, hashed into the signature. */
  body?: string;
}

export interface PresignUrlInput extends SigningScope {
  method: string;
  /** The object URL, its path already encoded as S3 expects (see `uriEncode`). */
  url: URL | string;
  /** Lifetime in seconds (1 to 604800). */
  expiresInSeconds: number;
  /** Headers the eventual request must carry with these exact values (e.g. `content-type`). */
  signedHeaders?: Record<string, string>;
}

/**
 * Signs a request in the `Authorization` header (not S3: the path is escaped as every other service
 * expects, and no `x-amz-content-sha256` header is added).
 * @returns the headers to send: the given ones plus `host`, `x-amz-date`, `x-amz-security-token`
 *   (with temporary credentials) and `authorization`, all lowercase
 */
export async function signRequest(input: SignRequestInput): Promise<Record<string, string>> {
  const url = toUrl(input.url);
  awsCallObserver()?.({
    service: input.service,
    operation: 'Request',
    input: { method: input.method, url: url.href, headers: input.headers ?? {}, body: input.body },
  });
  const signer = new SignatureV4({
    service: input.service,
    region: input.region,
    credentials: input.credentials,
    sha256: Sha256,
    applyChecksum: false,
  });
  const headers: Record<string, string> = { host: url.host };
  for (const [name, value] of Object.entries(input.headers ?? {})) headers[name.toLowerCase()] = value;
  const signed = await signer.sign(requestOf(input.method, url, headers, input.body), {
    signingDate: input.date ?? new Date(),
  });
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) out[name.toLowerCase()] = value;
  return out;
}

/**
 * A presigned S3 URL (query-string authentication, unsigned payload). The session token of temporary
 * credentials goes into the signed query, so the URL stops working when that session ends, whatever
 * `expiresInSeconds` says.
 */
export async function presignUrl(input: PresignUrlInput): Promise<string> {
  const url = toUrl(input.url);
  // What the URL authorizes is checked against the signer's policy when it is used: recorded as its call.
  awsCallObserver()?.({
    service: input.service,
    operation: 'PresignUrl',
    input: { method: input.method, url: url.href, headers: input.signedHeaders },
  });
  if (
    !Number.isInteger(input.expiresInSeconds) ||
    input.expiresInSeconds < 1 ||
    input.expiresInSeconds > MAX_PRESIGNED_URL_SECONDS
  ) {
    throw new RangeError(`expiresInSeconds must be an integer from 1 to ${MAX_PRESIGNED_URL_SECONDS}`);
  }
  // S3 signs the path as sent (no second escaping); the caller builds it with `uriEncode`.
  const signer = new SignatureV4({
    service: input.service,
    region: input.region,
    credentials: input.credentials,
    sha256: Sha256,
    uriEscapePath: false,
  });
  // The payload hash is read from this header; kept out of the query and out of the signed headers, as
  // S3's own presigner does, so the URL carries only the standard X-Amz-* parameters.
  const headers: Record<string, string> = { host: url.host, [CONTENT_SHA256]: UNSIGNED_PAYLOAD };
  for (const [name, value] of Object.entries(input.signedHeaders ?? {})) headers[name.toLowerCase()] = value;
  const presigned = await signer.presign(requestOf(input.method, url, headers), {
    signingDate: input.date ?? new Date(),
    expiresIn: input.expiresInSeconds,
    // Signed headers stay headers: an x-amz-* header hoisted into the query (the signer's default)
    // would be a query parameter S3 does not read as that header (a copy's source, its condition).
    unhoistableHeaders: new Set([
      CONTENT_SHA256,
      ...Object.keys(input.signedHeaders ?? {}).map((name) => name.toLowerCase()),
    ]),
    unsignableHeaders: new Set([CONTENT_SHA256]),
  });
  const query = Object.entries(presigned.query ?? {})
    .flatMap(([name, value]) => (Array.isArray(value) ? value : [value ?? '']).map((v) => [name, v] as const))
    .map(([name, value]) => `${uriEncode(name)}=${uriEncode(value)}`)
    .join('&');
  return `${url.origin}${url.pathname}?${query}`;
}

/** Credentials of the Lambda execution role (or of the shell, locally), from the standard variables. */
export function credentialsFromEnv(env?: Env): AwsCredentials {
  const accessKeyId = readEnv(AWS_ACCESS_KEY_ID, env);
  const secretAccessKey = readEnv(AWS_SECRET_ACCESS_KEY, env);
  if (!accessKeyId || !secretAccessKey) {
    throw new Error('AWS credentials missing: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set');
  }
  const sessionToken = readEnv(AWS_SESSION_TOKEN, env);
  return sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey };
}

/** RFC 3986 encoding as SigV4 defines it: everything but `A-Z a-z 0-9 - . _ ~` is percent-encoded. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The request the signer signs: `url` split into its parts, with `headers` (and the body, if any). */
function requestOf(method: string, url: URL, headers: Record<string, string>, body?: string) {
  return {
    method: method.toUpperCase(),
    protocol: url.protocol,
    hostname: url.hostname,
    path: url.pathname || '/',
    query: queryRecord(url.searchParams),
    headers,
    ...(body === undefined ? {} : { body }),
  };
}

function queryRecord(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of params) {
    const existing = query[name];
    if (existing === undefined) query[name] = value;
    else query[name] = Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return query;
}

function toUrl(url: URL | string): URL {
  return typeof url === 'string' ? new URL(url) : url;
}

export interface PresignPostInput extends Omit<SigningScope, 'service'> {
  /** Where the form is POSTed: the bucket's URL. */
  url: string;
  /** When the policy stops being accepted. */
  expiresAt: Date;
  /** Form fields to send as they are (`key`, `Content-Type`, ...), each also an exact-match condition. */
  fields: Record<string, string>;
  /** Further policy conditions, e.g. `['content-length-range', 1, 20971520]`. */
  conditions?: readonly unknown[];
}

/** A presigned S3 POST: the form's target and the fields to send before the file. */
export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
}

/** `20260101T000000Z` and `20260101`, as SigV4 writes dates. */
function amzDates(date: Date): { long: string; short: string } {
  const long = date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  return { long, short: long.slice(0, 8) };
}

/**
 * An S3 POST policy signed with SigV4 (the browser-based upload form): the policy lists every field the
 * form must carry and the conditions S3 enforces, and its signature is the SDK signer's string
 * signature (HMAC-SHA256 under the derived signing key) of the base64 policy.
 */
export async function presignPost(input: PresignPostInput): Promise<PresignedPost> {
  awsCallObserver()?.({ service: 's3', operation: 'PresignPost', input: { url: input.url, fields: input.fields } });
  const date = input.date ?? new Date();
  const { long, short } = amzDates(date);
  const credential = `${input.credentials.accessKeyId}/${short}/${input.region}/s3/aws4_request`;
  const fields: Record<string, string> = {
    ...input.fields,
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Credential': credential,
    'X-Amz-Date': long,
    ...(input.credentials.sessionToken ? { 'X-Amz-Security-Token': input.credentials.sessionToken } : {}),
  };
  const policy = {
    expiration: input.expiresAt.toISOString(),
    conditions: [...Object.entries(fields).map(([name, value]) => ({ [name]: value })), ...(input.conditions ?? [])],
  };
  const encoded = Buffer.from(JSON.stringify(policy)).toString('base64');
  const signature = await postPolicySignature(encoded, { ...input, date });
  return { url: input.url, fields: { ...fields, Policy: encoded, 'X-Amz-Signature': signature } };
}

/** The SigV4 signature of a base64 POST policy (what S3 recomputes to check a form). */
export async function postPolicySignature(
  encodedPolicy: string,
  scope: Omit<SigningScope, 'service'> & { date: Date },
): Promise<string> {
  const signer = new SignatureV4({
    service: 's3',
    region: scope.region,
    credentials: scope.credentials,
    sha256: Sha256,
  });
  return signer.sign(encodedPolicy, { signingDate: scope.date, signingRegion: scope.region, signingService: 's3' });
}
