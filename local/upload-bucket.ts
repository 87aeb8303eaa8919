/**
 * The local stand-in for the media bucket's `uploads/` prefix, served by the local gateway at
 * `/<bucket>/`: the same S3 requests the deployed service makes, checked as S3 checks them, so the
 * upload flow runs locally on the same code (functions/media/uploads.ts).
 *
 * - `POST /<bucket>/` (multipart/form-data, the browser-based upload form): the SigV4 signature of the
 *   policy, its expiry, every condition (exact fields, `starts-with`, `content-length-range`) and no
 *   field outside the policy. Success is S3's default `204 No Content`; a refusal is S3's XML error
 *   (`403 SignatureDoesNotMatch`, `403 AccessDenied` for an expired policy or a failed condition,
 *   `400 EntityTooLarge` / `EntityTooSmall` for the size range, `400 InvalidArgument` otherwise).
 * - `GET /<bucket>/<key>` with a presigned query (query-string SigV4): signature, expiry, `Range`.
 *   Missing objects are `404 NoSuchKey`; anything unsigned or expired is `403`.
 * - `PUT /<bucket>/<key>` with a presigned query (the submit's inline `data:` images): the same
 *   signature and expiry checks (a URL signed for GET does not PUT); the body is the object.
 * - `PUT /<bucket>/<key>` with `x-amz-copy-source` (CopyObject, the submit's copy of the version it
 *   checked): the copy headers must be among the signed ones; `x-amz-copy-source-if-match` that names
 *   another version is `412 PreconditionFailed`, a missing source `404 NoSuchKey`.
 * - ETags are the MD5 of the bytes, quoted, as S3 gives them for an object stored in one request; GET
 *   sends it.
 *
 * Files live under `dir` (the key's path); DynamoDB Local does not run TTL, so expired uploads are
 * refused by their record's time (functions/store/uploads.ts), not by deleting their files.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join, resolve, sep } from 'node:path';
import { type AwsCredentials, postPolicySignature, presignUrl } from '../functions/aws/signer';

export interface UploadBucketOptions {
  /** The bucket name, also the path prefix (`/<bucket>/`). */
  bucket: string;
  /** Where objects are stored. */
  dir: string;
  region: string;
  /** The credentials of an access key id (the stack's own), or undefined for an unknown key. */
  credentialsFor: (accessKeyId: string) => AwsCredentials | undefined;
  /** Largest form body read; more is a 400 EntityTooLarge (the policy's own limit is checked as well). */
  maxBodyBytes?: number;
  /** Told the size of every request body the stand-in reads (a POST's form, a PUT's object). */
  onBodyRead?: (bytes: number) => void;
  now?: () => Date;
}

export interface UploadBucket {
  /** True when the request path is this bucket's. */
  matches(path: string): boolean;
  /** Answers the request; returns the status sent. */
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<number>;
}

class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function xmlEscape(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sendError(res: ServerResponse, error: S3Error): number {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${error.code}</Code><Message>${xmlEscape(error.message)}</Message></Error>`;
  res.writeHead(error.status, { 'Content-Type': 'application/xml', 'Content-Length': String(Buffer.byteLength(body)) });
  res.end(body);
  return error.status;
}

/** `20260101T000000Z` to a Date, or undefined. */
function parseAmzDate(value: string | undefined): Date | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value ?? '');
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match;
  return new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}Z`);
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The file of a key under `root`, or undefined for a key that is not a plain relative path. */
function fileOf(root: string, key: string): string | undefined {
  const segments = key.split('/');
  if (segments.some((segment) => !/^[A-Za-z0-9%._~-]+$/.test(segment) || segment.startsWith('.'))) return undefined;
  const file = resolve(root, ...segments);
  return file.startsWith(root + sep) ? file : undefined;
}

async function readCapped(req: IncomingMessage, cap: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    length += chunk.byteLength;
    if (length > cap) throw new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The sidecar file of a key's `kind` (`type`: its Content-Type, `etag`: its ETag), beside its file. */
function sidecarOf(file: string, kind: 'type' | 'etag'): string {
  return join(dirname(file), `.${file.split(sep).pop() ?? ''}.${kind}`);
}

/** S3's ETag of an object stored in one request: the MD5 of its bytes, hex, in quotes. */
function etagOf(bytes: Uint8Array): string {
  return `"${createHash('md5').update(bytes).digest('hex')}"`;
}

/** Stores an object (its bytes, type and ETag) at `file`, atomically; returns the ETag. */
async function storeObject(file: string, bytes: Uint8Array, contentType: string): Promise<string> {
  await mkdir(dirname(file), { recursive: true });
  const temp = join(dirname(file), `.${randomUUID()}.part`);
  const etag = etagOf(bytes);
  await writeFile(temp, bytes);
  await writeFile(sidecarOf(file, 'type'), contentType);
  await writeFile(sidecarOf(file, 'etag'), etag);
  await rename(temp, file);
  return etag;
}

/** The ETag of the object at `file` (computed for one stored before ETags were kept). */
async function storedEtag(file: string): Promise<string> {
  return readFile(sidecarOf(file, 'etag'), 'utf8').catch(async () => etagOf(await readFile(file)));
}

/** Removes a stored object with its sidecars; a key that is not there, or not a plain path, is nothing to remove. */
async function removeObject(root: string, key: string): Promise<void> {
  const target = fileOf(root, key);
  if (!target) return;
  await Promise.all(
    [target, sidecarOf(target, 'type'), sidecarOf(target, 'etag')].map((file) => rm(file, { force: true })),
  );
}

/**
 * The stand-in's objects under `dir` read and removed directly on disk, as its DELETE and HEAD do: for
 * the operator CLI, which closes an account of a local stack that may not be running.
 */
export function localUploadObjects(dir: string): {
  remove(keys: readonly string[]): Promise<void>;
  versionOf(key: string): Promise<string | undefined>;
} {
  const root = resolve(dir);
  return {
    async remove(keys) {
      await Promise.all(keys.map((key) => removeObject(root, key)));
    },
    async versionOf(key) {
      const file = fileOf(root, key);
      return file ? storedEtag(file).catch(() => undefined) : undefined;
    },
  };
}

export function createUploadBucket(options: UploadBucketOptions): UploadBucket {
  const root = resolve(options.dir);
  const prefix = `/${options.bucket}/`;
  const now = options.now ?? (() => new Date());
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024 * 1024;

  function credentialsOf(credential: string | undefined): { credentials: AwsCredentials; region: string } {
    const [accessKeyId, , region, service, terminator] = (credential ?? '').split('/');
    const credentials = accessKeyId ? options.credentialsFor(accessKeyId) : undefined;
    if (!credentials || region !== options.region || service !== 's3' || terminator !== 'aws4_request') {
      throw new S3Error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
    }
    return { credentials, region };
  }

  async function post(req: IncomingMessage, res: ServerResponse): Promise<number> {
    const body = await readCapped(req, maxBodyBytes);
    options.onBodyRead?.(body.length);
    let form: FormData;
    try {
      form = await new Request('http://local/', {
        method: 'POST',
        headers: { 'content-type': req.headers['content-type'] ?? '' },
        body,
      }).formData();
    } catch {
      throw new S3Error(
        400,
        'MalformedPOSTRequest',
        'The body of your POST request is not well-formed multipart/form-data.',
      );
    }
    const fields = new Map<string, string>();
    let file: Blob | undefined;
    for (const [name, value] of form.entries()) {
      if (name.toLowerCase() === 'file') {
        if (typeof value !== 'string') file = value;
        continue;
      }
      if (typeof value === 'string') fields.set(name.toLowerCase(), value);
    }
    if (!file) throw new S3Error(400, 'InvalidArgument', 'POST requires exactly one file upload per request.');
    const encodedPolicy = fields.get('policy');
    const signature = fields.get('x-amz-signature');
    if (!encodedPolicy || !signature)
      throw new S3Error(403, 'AccessDenied', 'Bucket POST must contain a policy and a signature');
    const { credentials, region } = credentialsOf(fields.get('x-amz-credential'));
    const date = parseAmzDate(fields.get('x-amz-date'));
    if (!date || fields.get('x-amz-algorithm') !== 'AWS4-HMAC-SHA256') {
      throw new S3Error(
        400,
        'InvalidArgument',
        'X-Amz-Algorithm and X-Amz-Date must be AWS4-HMAC-SHA256 and a SigV4 date',
      );
    }
    const expected = await postPolicySignature(encodedPolicy, { region, credentials, date });
    if (!sameText(expected, signature)) {
      throw new S3Error(
        403,
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided.',
      );
    }
    let policy: { expiration?: unknown; conditions?: unknown };
    try {
      policy = JSON.parse(Buffer.from(encodedPolicy, 'base64').toString('utf8')) as typeof policy;
    } catch {
      throw new S3Error(400, 'InvalidPolicyDocument', 'Invalid Policy: Invalid JSON.');
    }
    const expiration = typeof policy.expiration === 'string' ? Date.parse(policy.expiration) : Number.NaN;
    if (!Number.isFinite(expiration) || !Array.isArray(policy.conditions)) {
      throw new S3Error(400, 'InvalidPolicyDocument', 'Invalid Policy: expiration and conditions are required.');
    }
    if (expiration <= now().getTime())
      throw new S3Error(403, 'AccessDenied', 'Invalid according to Policy: Policy expired.');
    const covered = new Set(['policy', 'x-amz-signature', 'file']);
    const fieldValue = (name: string) => (name === 'bucket' ? options.bucket : fields.get(name));
    const failed = (condition: unknown) =>
      new S3Error(
        403,
        'AccessDenied',
        `Invalid according to Policy: Policy Condition failed: ${JSON.stringify(condition)}`,
      );
    for (const condition of policy.conditions as unknown[]) {
      if (Array.isArray(condition)) {
        const [op, target, operand] = condition as [unknown, unknown, unknown];
        if (op === 'content-length-range') {
          const [min, max] = [Number(target), Number(operand)];
          if (file.size > max)
            throw new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
          if (file.size < min)
            throw new S3Error(400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed size');
          continue;
        }
        const name = typeof target === 'string' && target.startsWith('$') ? target.slice(1).toLowerCase() : '';
        const actual = fieldValue(name) ?? '';
        covered.add(name);
        if (op === 'eq' && actual === operand) continue;
        if (op === 'starts-with' && typeof operand === 'string' && actual.startsWith(operand)) continue;
        throw failed(condition);
      }
      if (typeof condition === 'object' && condition !== null) {
        for (const [name, value] of Object.entries(condition)) {
          covered.add(name.toLowerCase());
          if (fieldValue(name.toLowerCase()) !== value) throw failed(condition);
        }
        continue;
      }
      throw new S3Error(400, 'InvalidPolicyDocument', 'Invalid Policy: Invalid Condition.');
    }
    for (const name of fields.keys()) {
      if (!covered.has(name) && !name.startsWith('x-ignore-')) {
        throw new S3Error(403, 'AccessDenied', `Invalid according to Policy: Extra input fields: ${name}`);
      }
    }
    const key = fields.get('key') ?? '';
    const target = fileOf(root, key);
    if (!target) throw new S3Error(400, 'InvalidArgument', 'Invalid key');
    const etag = await storeObject(target, new Uint8Array(await file.arrayBuffer()), fields.get('content-type') ?? '');
    res.writeHead(204, { ETag: etag });
    res.end();
    return 204;
  }

  /** Checks a presigned URL's query (signature, expiry) for `method`; returns the object's key. */
  async function presignedKey(req: IncomingMessage, url: URL, method: 'GET' | 'PUT' | 'DELETE'): Promise<string> {
    const params = url.searchParams;
    const date = parseAmzDate(params.get('X-Amz-Date') ?? undefined);
    const expires = Number(params.get('X-Amz-Expires'));
    const signature = params.get('X-Amz-Signature');
    if (!date || !Number.isInteger(expires) || expires < 1 || !signature) {
      throw new S3Error(403, 'AccessDenied', 'Access Denied');
    }
    const { credentials, region } = credentialsOf(params.get('X-Amz-Credential') ?? undefined);
    if (now().getTime() > date.getTime() + expires * 1000)
      throw new S3Error(403, 'AccessDenied', 'Request has expired');
    const unsigned = new URL(`http://${req.headers.host ?? url.host}${url.pathname}`);
    for (const [name, value] of params) if (!name.startsWith('X-Amz-')) unsigned.searchParams.append(name, value);
    // Headers the URL signed (besides host) must come with the request, with the values signed.
    const signedHeaders: Record<string, string> = {};
    for (const name of (params.get('X-Amz-SignedHeaders') ?? 'host').split(';')) {
      if (name === 'host') continue;
      const value = req.headers[name];
      if (typeof value !== 'string') throw new S3Error(403, 'AccessDenied', `Missing signed header ${name}`);
      signedHeaders[name] = value;
    }
    const expected = new URL(
      await presignUrl({
        method,
        url: unsigned,
        service: 's3',
        region,
        credentials,
        date,
        expiresInSeconds: expires,
        signedHeaders,
      }),
    ).searchParams.get('X-Amz-Signature');
    if (!expected || !sameText(expected, signature)) {
      throw new S3Error(
        403,
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided.',
      );
    }
    try {
      return url.pathname.slice(prefix.length).split('/').map(decodeURIComponent).join('/');
    } catch {
      throw new S3Error(400, 'InvalidArgument', 'Invalid key');
    }
  }

  /** A presigned PUT (the submit's inline images): the body is the object, `Content-Type` its type. */
  async function put(req: IncomingMessage, res: ServerResponse, url: URL): Promise<number> {
    const key = await presignedKey(req, url, 'PUT');
    const target = fileOf(root, key);
    if (!target) throw new S3Error(400, 'InvalidArgument', 'Invalid key');
    if (req.headers['x-amz-copy-source'] !== undefined) return copy(req, res, url, target);
    const body = await readCapped(req, maxBodyBytes);
    options.onBodyRead?.(body.length);
    const etag = await storeObject(target, body, req.headers['content-type'] ?? '');
    res.writeHead(200, { ETag: etag, 'Content-Length': '0' });
    res.end();
    return 200;
  }

  /** DeleteObject through a presigned DELETE: 204 whether or not anything was there, as S3 answers. */
  async function remove(req: IncomingMessage, res: ServerResponse, url: URL): Promise<number> {
    const key = await presignedKey(req, url, 'DELETE');
    if (!fileOf(root, key)) throw new S3Error(400, 'InvalidArgument', 'Invalid key');
    await removeObject(root, key);
    res.writeHead(204);
    res.end();
    return 204;
  }

  /** CopyObject within this bucket, with `x-amz-copy-source-if-match` checked as S3 checks it. */
  async function copy(req: IncomingMessage, res: ServerResponse, url: URL, target: string): Promise<number> {
    const signed = (url.searchParams.get('X-Amz-SignedHeaders') ?? '').split(';');
    if (!signed.includes('x-amz-copy-source')) throw new S3Error(403, 'AccessDenied', 'Access Denied');
    const source = String(req.headers['x-amz-copy-source']).replace(/^\/+/, '');
    const [bucket, ...path] = source.split('/');
    let sourceKey: string;
    try {
      sourceKey = path.map(decodeURIComponent).join('/');
    } catch {
      throw new S3Error(400, 'InvalidArgument', 'Invalid copy source');
    }
    const from = bucket === options.bucket ? fileOf(root, sourceKey) : undefined;
    const info = from ? await stat(from).catch(() => undefined) : undefined;
    if (!from || !info?.isFile()) throw new S3Error(404, 'NoSuchKey', 'The specified key does not exist.');
    const etag = await storedEtag(from);
    const ifMatch = req.headers['x-amz-copy-source-if-match'];
    if (typeof ifMatch === 'string' && ifMatch !== etag) {
      throw new S3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
    }
    const type = await readFile(sidecarOf(from, 'type'), 'utf8').catch(() => '');
    // Read, then written as one new object: a concurrent replacement of the source leaves the copy whole.
    const copied = await storeObject(target, await readFile(from), type);
    const body = `<?xml version="1.0" encoding="UTF-8"?>\n<CopyObjectResult><ETag>${xmlEscape(copied)}</ETag></CopyObjectResult>`;
    res.writeHead(200, { 'Content-Type': 'application/xml', 'Content-Length': String(Buffer.byteLength(body)) });
    res.end(body);
    return 200;
  }

  async function get(req: IncomingMessage, res: ServerResponse, url: URL): Promise<number> {
    const key = await presignedKey(req, url, 'GET');
    const file = fileOf(root, key);
    const info = file ? await stat(file).catch(() => undefined) : undefined;
    if (!file || !info?.isFile()) throw new S3Error(404, 'NoSuchKey', 'The specified key does not exist.');
    const type = await readFile(sidecarOf(file, 'type'), 'utf8').catch(() => '');
    const headers: Record<string, string> = {
      'Content-Type': type || 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      ETag: await storedEtag(file),
    };
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range) {
      const start = Number(range[1]);
      const end = Math.min(range[2] ? Number(range[2]) : info.size - 1, info.size - 1);
      if (start >= info.size || end < start) {
        throw new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable');
      }
      res.writeHead(206, {
        ...headers,
        'Content-Range': `bytes ${start}-${end}/${info.size}`,
        'Content-Length': String(end - start + 1),
      });
      createReadStream(file, { start, end }).pipe(res);
      return 206;
    }
    res.writeHead(200, { ...headers, 'Content-Length': String(info.size) });
    createReadStream(file).pipe(res);
    return 200;
  }

  return {
    matches: (path) => path === `/${options.bucket}` || path.startsWith(prefix),
    async handle(req, res, url) {
      try {
        if (req.method === 'POST' && (url.pathname === prefix || url.pathname === `/${options.bucket}`)) {
          return await post(req, res);
        }
        if (req.method === 'GET' && url.pathname.length > prefix.length) return await get(req, res, url);
        if (req.method === 'PUT' && url.pathname.length > prefix.length) return await put(req, res, url);
        if (req.method === 'DELETE' && url.pathname.length > prefix.length) return await remove(req, res, url);
        throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
      } catch (error) {
        if (!(error instanceof S3Error)) throw error;
        if (error.code === 'EntityTooLarge') res.setHeader('Connection', 'close');
        return sendError(res, error);
      }
    },
  };
}
