/**
 * The media stores over real HTTP on 127.0.0.1: result files come from the mock provider (or from
 * small purpose-built source servers), the filesystem store writes under a temporary directory, and
 * the S3 store PUTs to a local node:http server standing in for S3.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { presignUrl } from '../../functions/aws/signer';
import { contentTypeForKey, createFsMediaStore, resolveMediaPath } from '../../functions/media/fs-media-store';
import { MediaCopyError, mediaKey } from '../../functions/media/port';
import { createS3MediaStore } from '../../functions/media/s3-media-store';
import type { SourcePolicy } from '../../functions/media/source-policy';
import { createHttpProvider } from '../../functions/provider/http-provider';
import type { GenerationProvider } from '../../functions/provider/port';
import { type MockProvider, startMockProvider } from '../../local/mock-provider';

interface TestServer {
  url: string;
  close(): Promise<void>;
}

async function startServer(listener: RequestListener): Promise<TestServer> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The message of a MediaCopyError a settled copy was rejected with ('' when it was not one). */
function reason(settled: PromiseSettledResult<unknown>): string {
  return settled.status === 'rejected' && settled.reason instanceof MediaCopyError ? settled.reason.message : '';
}

/** Every regular file under `dir`, dot-files (temporary parts) included. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

const SAMPLE_MP4 = readFileSync(join(__dirname, '../../local/fixtures/sample.mp4'));
/** The PNG signature: source bodies must start with their format's signature to be accepted. */
const PNG_HEAD = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const CHUNKED_BODY = [Buffer.concat([PNG_HEAD, Buffer.alloc(692, 1)]), Buffer.alloc(700, 2)] as const;

let mock: MockProvider;
let provider: GenerationProvider;
/** Sources that answer in special ways: chunked, oversized, stalled mid-body, wrong type. */
let sources: TestServer;

beforeAll(async () => {
  mock = await startMockProvider();
  provider = createHttpProvider({ baseUrl: mock.url, apiKey: async () => 'unused' });
  sources = await startServer((req, res) => {
    if (req.url === '/chunked.png') {
      // No Content-Length: node sends the body chunked.
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(CHUNKED_BODY[0]);
      res.end(CHUNKED_BODY[1]);
    } else if (req.url === '/stalls.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': '1000' });
      res.write(Buffer.concat([PNG_HEAD, Buffer.alloc(8, 1)])); // and never the rest
    } else if (req.url === '/text') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<html></html>');
    } else {
      res.writeHead(404).end();
    }
  });
});

afterAll(async () => {
  await sources.close();
  await mock.stop();
});

/** The local test servers speak plain HTTP on 127.0.0.1: allowed by name, as the local stack does. */
function localPolicy(...more: string[]): SourcePolicy {
  return { insecureOrigins: [mock.url, sources.url, ...more], allowedHosts: [] };
}

/** Creates a mock task that is immediately done and returns its result URLs. */
async function resultUrls(model: string, input: Record<string, unknown> = {}): Promise<string[]> {
  const { providerTaskId } = await provider.createTask({ model, input: { mockDelayMs: 0, ...input } });
  return (await provider.getTask(providerTaskId)).resultUrls;
}

async function download(url: string): Promise<Buffer> {
  return Buffer.from(await (await fetch(url)).arrayBuffer());
}

describe('filesystem media store', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-store-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('copies a PNG result and serves it back through urlFor and resolveMediaPath', async () => {
    // Prepare
    const store = createFsMediaStore({ dir, publicBaseUrl: 'http://127.0.0.1:3000/', sourcePolicy: localPolicy() });
    const [url = ''] = await resultUrls('image-model-1');
    const keyBase = mediaKey('user@example', 'task-1', 0);
    const key = `${keyBase}.png`;

    // Act
    const stored = await store.copyFromUrl(url, keyBase, 'image');
    const publicUrl = await store.urlFor(key);

    // Assert
    const expected = await download(url);
    expect(stored).toEqual({ key, contentType: 'image/png', bytes: expected.length });
    expect(publicUrl).toBe('http://127.0.0.1:3000/media/results/user%2540example/task-1/0.png');
    const path = resolveMediaPath(dir, new URL(publicUrl).pathname);
    expect(path).toBe(join(dir, 'results', 'user%40example', 'task-1', '0.png'));
    expect(await readFile(path ?? '')).toEqual(expected);
    expect(contentTypeForKey(key)).toBe('image/png');
  });

  it('copies an MP4 result byte for byte', async () => {
    // Prepare
    const store = createFsMediaStore({ dir, publicBaseUrl: 'http://localhost:3000', sourcePolicy: localPolicy() });
    const [url = ''] = await resultUrls('video-d3_fast');
    const keyBase = mediaKey('u1', 'task-2', 0);
    const key = `${keyBase}.mp4`;

    // Act
    const stored = await store.copyFromUrl(url, keyBase, 'video');

    // Assert
    expect(stored).toEqual({ key, contentType: 'video/mp4', bytes: SAMPLE_MP4.length });
    expect(await readFile(join(dir, key))).toEqual(SAMPLE_MP4);
    expect(contentTypeForKey(key)).toBe('video/mp4');
  });

  it.each([
    ['a result URL that answers 404', 'broken_result', 'image', {}, /HTTP 404/],
    [
      'a content type that does not match the kind',
      'success',
      'video',
      {},
      /content type "image\/png", not an allowed video type/,
    ],
    ['a declared size over the limit', 'success', 'image', { maxBytes: 100 }, /over the 100-byte limit/],
    ['a source that never answers', 'hang_result', 'image', { timeoutMs: 300 }, /did not answer in time/],
  ] as const)('fails with MediaCopyError on %s and leaves no file', async (_case, outcome, kind, extra, message) => {
    // Prepare
    const store = createFsMediaStore({
      dir,
      publicBaseUrl: 'http://localhost:3000',
      sourcePolicy: localPolicy(),
      ...extra,
    });
    const [url = ''] = await resultUrls('image-model-1', { mockOutcome: outcome });

    // Act
    const result = store.copyFromUrl(url, mediaKey('u1', 'task-3', 0), kind);

    // Assert
    await expect(result).rejects.toBeInstanceOf(MediaCopyError);
    await expect(result).rejects.toThrow(message);
    expect(await filesUnder(dir)).toEqual([]);
  });

  it.each([
    ['an undeclared body over the limit', '/chunked.png', { maxBytes: 1000 }, /more than the 1000-byte limit/],
    ['a body that stalls midway', '/stalls.png', { timeoutMs: 300 }, /timed out/],
    ['a non-media content type', '/text', {}, /content type "text\/html", not an allowed image type/],
  ] as const)('fails with MediaCopyError on %s and removes the partial file', async (_case, path, extra, message) => {
    // Prepare
    const store = createFsMediaStore({
      dir,
      publicBaseUrl: 'http://localhost:3000',
      sourcePolicy: localPolicy(),
      ...extra,
    });

    // Act
    const result = store.copyFromUrl(`${sources.url}${path}`, mediaKey('u1', 'task-4', 0), 'image');

    // Assert
    await expect(result).rejects.toThrow(message);
    expect(await filesUnder(dir)).toEqual([]);
  });

  it('streams an undeclared body within the limit', async () => {
    // Prepare
    const store = createFsMediaStore({
      dir,
      publicBaseUrl: 'http://localhost:3000',
      maxBytes: 1400,
      sourcePolicy: localPolicy(),
    });
    const keyBase = mediaKey('u1', 'task-5', 0);
    const key = `${keyBase}.png`;

    // Act
    const stored = await store.copyFromUrl(`${sources.url}/chunked.png`, keyBase, 'image');

    // Assert
    expect(stored.bytes).toBe(1400);
    expect(await readFile(join(dir, key))).toEqual(Buffer.concat(CHUNKED_BODY));
  });

  it('refuses a key that would leave the directory', async () => {
    // Prepare
    const store = createFsMediaStore({ dir, publicBaseUrl: 'http://localhost:3000', sourcePolicy: localPolicy() });
    const [url = ''] = await resultUrls('image-model-1');

    // Act
    const result = store.copyFromUrl(url, '../escape.png', 'image');

    // Assert
    await expect(result).rejects.toThrow(/Invalid media key/);
  });
});

describe('resolveMediaPath', () => {
  it.each([
    '/media/../etc/passwd',
    '/media/%2e%2e/secret',
    '/media/results/..%2F..%2Fsecret',
    '/media/results/%2Fetc%2Fpasswd',
    '/media/results/a%5C..%5Cb',
    '/media/results/.0.png.123.part',
    '/media/results//0.png',
    '/media/results/%00.png',
    '/media/%E0%A4%A',
    '/media/',
    '/other/results/0.png',
  ])('refuses %s', (urlPath) => {
    // Prepare
    const dir = '/srv/media';

    // Act
    const resolved = resolveMediaPath(dir, urlPath);

    // Assert
    expect(resolved).toBeUndefined();
  });

  it('maps an encoded key to its file and ignores the query string', () => {
    // Prepare
    const urlPath = '/media/results/a%2540b/t-1/0.png?download=1';

    // Act
    const resolved = resolveMediaPath('/srv/media', urlPath);

    // Assert
    expect(resolved).toBe('/srv/media/results/a%40b/t-1/0.png');
  });
});

describe('S3 media store', () => {
  interface Received {
    method: string | undefined;
    url: URL;
    headers: IncomingMessage['headers'];
    body: Buffer;
  }

  let s3: TestServer;
  let received: Received[];
  let s3Status: number;
  let firstBytes: { promise: Promise<void>; resolve: () => void };

  const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test', sessionToken: 'tok+en/=' };
  const fixedNow = new Date('2026-11-22T10:00:00Z');

  function deferred(): { promise: Promise<void>; resolve: () => void } {
    let resolve = () => {};
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    return { promise, resolve };
  }

  beforeAll(async () => {
    s3 = await startServer((req: IncomingMessage, res: ServerResponse) => {
      req.once('data', () => firstBytes.resolve());
      readAll(req).then((body) => {
        received.push({ method: req.method, url: new URL(req.url ?? '/', s3.url), headers: req.headers, body });
        if (s3Status === 200) res.writeHead(200, { etag: '"x"' }).end();
        else
          res
            .writeHead(s3Status, { 'content-type': 'application/xml' })
            .end('<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>');
      });
    });
  });

  afterAll(async () => {
    await s3.close();
  });

  beforeEach(() => {
    received = [];
    s3Status = 200;
    firstBytes = deferred();
  });

  const store = (extra: Partial<Parameters<typeof createS3MediaStore>[0]> = {}) =>
    createS3MediaStore({
      bucket: 'media-bucket',
      region: 'eu-west-1',
      endpoint: s3.url,
      forcePathStyle: true,
      credentials: () => credentials,
      now: () => fixedNow,
      sourcePolicy: localPolicy(),
      ...extra,
    });

  it('streams a PNG into a presigned PUT with its content type and exact bytes', async () => {
    // Prepare
    const [url = ''] = await resultUrls('image-model-1');
    const keyBase = mediaKey('user@example', 'task-1', 0);
    const key = `${keyBase}.png`;

    // Act
    const stored = await store().copyFromUrl(url, keyBase, 'image');

    // Assert
    const expected = await download(url);
    expect(stored).toEqual({ key, contentType: 'image/png', bytes: expected.length });
    expect(received).toHaveLength(1);
    const [put] = received;
    expect(put?.method).toBe('PUT');
    expect(put?.url.pathname).toBe('/media-bucket/results/user%2540example/task-1/0.png');
    const query = put?.url.searchParams;
    expect(query?.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(query?.get('X-Amz-Credential')).toBe('AKIDTEST/20261122/eu-west-1/s3/aws4_request');
    expect(query?.get('X-Amz-Date')).toBe('20261122T100000Z');
    expect(query?.get('X-Amz-Expires')).toBe('900');
    expect(query?.get('X-Amz-SignedHeaders')).toBe('content-disposition;content-type;host');
    expect(query?.get('X-Amz-Security-Token')).toBe('tok+en/=');
    expect(put?.headers['content-type']).toBe('image/png');
    expect(put?.headers['content-disposition']).toBe('attachment');
    expect(put?.headers['content-length']).toBe(String(expected.length));
    expect(put?.body).toEqual(expected);
    // The signature covers what arrived, host included: recompute it from the received request.
    const resigned = new URL(
      await presignUrl({
        method: 'PUT',
        url: `http://${put?.headers.host}${put?.url.pathname}`,
        service: 's3',
        region: 'eu-west-1',
        credentials,
        date: fixedNow,
        expiresInSeconds: 900,
        signedHeaders: { 'content-type': 'image/png', 'content-disposition': 'attachment' },
      }),
    );
    expect(query?.get('X-Amz-Signature')).toBe(resigned.searchParams.get('X-Amz-Signature'));
  });

  it('streams: S3 receives the first bytes before the source has sent the rest', async () => {
    // Prepare
    const total = 64 * 1024;
    const firstHalf = Buffer.concat([SAMPLE_MP4.subarray(0, 12), Buffer.alloc(total / 2 - 12, 7)]);
    const source = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(total) });
      res.write(firstHalf);
      // Whole-file buffering would wait here forever (until the copy deadline fails the test).
      firstBytes.promise.then(() => res.end(Buffer.alloc(total / 2, 8)));
    });

    // Act
    // A deadline a loaded machine's copy of 64 KiB meets with room; only a buffering copy spends it.
    const stored = await store({ timeoutMs: 30_000, sourcePolicy: localPolicy(source.url) })
      .copyFromUrl(`${source.url}/clip.mp4`, 'results/u/t/0', 'video')
      .finally(() => source.close());

    // Assert
    expect(stored).toEqual({ key: 'results/u/t/0.mp4', contentType: 'video/mp4', bytes: total });
    expect(received[0]?.body).toEqual(Buffer.concat([firstHalf, Buffer.alloc(total / 2, 8)]));
  });

  it('copies the MP4 of a video task', async () => {
    // Prepare
    const [url = ''] = await resultUrls('video-d3_fast');

    // Act
    const stored = await store().copyFromUrl(url, 'results/u/t/0.mp4', 'video');

    // Assert
    expect(stored.contentType).toBe('video/mp4');
    expect(received[0]?.headers['content-type']).toBe('video/mp4');
    expect(received[0]?.body).toEqual(SAMPLE_MP4);
  });

  it('buffers a source without Content-Length (within the cap) and PUTs it with its length', async () => {
    // Prepare
    const url = `${sources.url}/chunked.png`;

    // Act
    const stored = await store({ maxBytes: 1400 }).copyFromUrl(url, 'results/u/t/0.png', 'image');

    // Assert
    expect(stored.bytes).toBe(1400);
    expect(received[0]?.headers['content-length']).toBe('1400');
    expect(received[0]?.body).toEqual(Buffer.concat(CHUNKED_BODY));
  });

  it.each([
    ['the source answers 404', 'broken', {}, /HTTP 404/],
    ['the declared size is over the limit', 'ok', { maxBytes: 100 }, /over the 100-byte limit/],
    ['the source never answers', 'hang', { timeoutMs: 300 }, /did not answer in time/],
  ] as const)('fails with MediaCopyError and PUTs nothing when %s', async (_case, which, extra, message) => {
    // Prepare
    const outcome = { broken: 'broken_result', ok: 'success', hang: 'hang_result' }[which];
    const [url = ''] = await resultUrls('image-model-1', { mockOutcome: outcome });

    // Act
    const result = store(extra).copyFromUrl(url, 'results/u/t/0.png', 'image');

    // Assert
    await expect(result).rejects.toBeInstanceOf(MediaCopyError);
    await expect(result).rejects.toThrow(message);
    expect(received).toEqual([]);
  });

  it('fails with MediaCopyError when an undeclared body passes the cap', async () => {
    // Prepare
    const url = `${sources.url}/chunked.png`;

    // Act
    const result = store({ maxBytes: 1000 }).copyFromUrl(url, 'results/u/t/0.png', 'image');

    // Assert
    await expect(result).rejects.toThrow(/more than the 1000-byte limit/);
    expect(received).toEqual([]);
  });

  it('fails with MediaCopyError carrying the S3 error code, without the signed URL', async () => {
    // Prepare
    s3Status = 403;
    const [url = ''] = await resultUrls('image-model-1');

    // Act
    const result = store().copyFromUrl(url, 'results/u/t/0', 'image');

    // Assert
    await expect(result).rejects.toThrow(/^S3 PUT of results\/u\/t\/0\.png answered HTTP 403 \(AccessDenied\)$/);
  });

  it('hands out presigned GET URLs, virtual-hosted on AWS, served as downloads, for the configured lifetime', async () => {
    // Prepare
    const aws = createS3MediaStore({
      bucket: 'media-bucket',
      region: 'eu-west-1',
      credentials: () => ({ accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test' }),
      now: () => fixedNow,
    });
    const short = createS3MediaStore({
      bucket: 'media-bucket',
      region: 'eu-west-1',
      urlTtlSeconds: 60,
      credentials: () => ({ accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test' }),
      now: () => fixedNow,
    });

    // Act
    const url = new URL(await aws.urlFor('results/a%40b/t-1/0.png'));
    const shortUrl = new URL(await short.urlFor('results/a/t/0.png'));
    const beforeExpiry = new URL(await aws.urlFor('results/a/t/0.png', new Date(fixedNow.getTime() + 600_000)));

    // Assert
    expect(`${url.origin}${url.pathname}`).toBe(
      'https://media-bucket.s3.eu-west-1.amazonaws.com/results/a%2540b/t-1/0.png',
    );
    expect(Object.fromEntries(url.searchParams)).toEqual({
      'response-content-disposition': 'attachment',
      'response-content-type': 'image/png',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': 'AKIDTEST/20261122/eu-west-1/s3/aws4_request',
      'X-Amz-Date': '20261122T100000Z',
      'X-Amz-Expires': '3600',
      'X-Amz-SignedHeaders': 'host',
      'X-Amz-Signature': expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(shortUrl.searchParams.get('X-Amz-Expires')).toBe('60');
    // Results deleted in ten minutes: the URL is not made to outlive them.
    expect(beforeExpiry.searchParams.get('X-Amz-Expires')).toBe('600');
  });

  it('refuses a source without Content-Length past the in-memory cap, whatever the kind allows', async () => {
    // Prepare
    const url = `${sources.url}/chunked.png`;

    // Act
    const result = store({ maxUndeclaredBytes: 1000 }).copyFromUrl(url, 'results/u/t/0', 'image');

    // Assert
    await expect(result).rejects.toThrow(/more than the 1000-byte in-memory limit/);
    expect(received).toEqual([]);
  });
});

describe('result URLs are untrusted', () => {
  let dir: string;
  /** Routes of a source server that redirects, mislabels and relabels. */
  let tricky: TestServer;

  beforeAll(async () => {
    tricky = await startServer((req, res) => {
      if (req.url === '/hop') res.writeHead(302, { location: '/octet' }).end();
      else if (req.url === '/loop') res.writeHead(302, { location: '/loop' }).end();
      else if (req.url === '/to-localhost')
        res.writeHead(302, { location: `http://localhost:${new URL(tricky.url).port}/octet` }).end();
      else if (req.url === '/to-loopback-https') res.writeHead(307, { location: 'https://127.0.0.1:9/x.png' }).end();
      else if (req.url === '/octet')
        res
          .writeHead(200, { 'content-type': 'application/octet-stream' })
          .end(Buffer.concat([PNG_HEAD, Buffer.alloc(20, 3)]));
      else if (req.url === '/mislabeled')
        res.writeHead(200, { 'content-type': 'image/jpeg' }).end(Buffer.concat([PNG_HEAD, Buffer.alloc(20, 3)]));
      else if (req.url === '/gif') res.writeHead(200, { 'content-type': 'image/gif' }).end('GIF89a\x01\x00\x01\x00');
      else res.writeHead(404).end();
    });
  });

  afterAll(async () => {
    await tricky.close();
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-untrusted-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const fsStore = (policy: SourcePolicy, extra: Partial<Parameters<typeof createFsMediaStore>[0]> = {}) =>
    createFsMediaStore({ dir, publicBaseUrl: 'http://localhost:3000', sourcePolicy: policy, ...extra });

  it('refuses plain HTTP and a loopback address under the default (deployed) policy, without connecting', async () => {
    // Prepare
    const [url = ''] = await resultUrls('image-model-1');
    const downloads = mock.stats.fileDownloads;
    const store = createFsMediaStore({ dir, publicBaseUrl: 'http://localhost:3000' });
    const httpsLoopback = url.replace(/^http:/, 'https:');

    // Act
    const [plain, loopback] = await Promise.allSettled([
      store.copyFromUrl(url, mediaKey('u', 't', 0), 'image'),
      store.copyFromUrl(httpsLoopback, mediaKey('u', 't', 0), 'image'),
    ]);

    // Assert
    expect(reason(plain)).toMatch(/refused: scheme http: \(https only\)/);
    expect(reason(loopback)).toMatch(/refused: it resolves to a non-public address/);
    expect(mock.stats.fileDownloads).toBe(downloads);
    expect(await filesUnder(dir)).toEqual([]);
  });

  it.each([
    ['to the cloud metadata address', { mockRedirectTo: 'http://169.254.169.254/latest/meta-data/' }, /scheme http:/],
    ['to loopback over https', { mockRedirectTo: 'https://127.0.0.1:9/x.png' }, /non-public address/],
    ['to an IPv4-mapped loopback', { mockRedirectTo: 'https://[::ffff:127.0.0.1]:9/x.png' }, /non-public address/],
    ['to link-local IPv6', { mockRedirectTo: 'https://[fe80::1]/x.png' }, /non-public address/],
  ])('re-checks a redirect %s and refuses it', async (_case, input, message) => {
    // Prepare
    const [url = ''] = await resultUrls('image-model-1', { mockOutcome: 'redirect_result', ...input });

    // Act
    const result = fsStore(localPolicy()).copyFromUrl(url, mediaKey('u', 't', 0), 'image');

    // Assert
    await expect(result).rejects.toThrow(message);
    expect(await filesUnder(dir)).toEqual([]);
  });

  it('refuses a redirect from an allowed local origin to another origin on the same machine', async () => {
    // Prepare
    const policy = localPolicy(tricky.url);

    // Act
    const [toLocalhost, toLoopback] = await Promise.allSettled([
      fsStore(policy).copyFromUrl(`${tricky.url}/to-localhost`, mediaKey('u', 't', 0), 'image'),
      fsStore(policy).copyFromUrl(`${tricky.url}/to-loopback-https`, mediaKey('u', 't', 0), 'image'),
    ]);

    // Assert
    expect(reason(toLocalhost)).toMatch(/refused: scheme http:/);
    expect(reason(toLoopback)).toMatch(/non-public address/);
  });

  it('follows a redirect it allows, and stops after three hops', async () => {
    // Prepare
    const policy = localPolicy(tricky.url);

    // Act
    const [followed, looping] = await Promise.allSettled([
      fsStore(policy).copyFromUrl(`${tricky.url}/hop`, mediaKey('u', 'hop', 0), 'image'),
      fsStore(policy).copyFromUrl(`${tricky.url}/loop`, mediaKey('u', 'loop', 0), 'image'),
    ]);

    // Assert
    expect(followed).toEqual({
      status: 'fulfilled',
      value: { key: 'results/u/hop/0.png', contentType: 'image/png', bytes: 28 },
    });
    expect(reason(looping)).toMatch(/redirected more than 3 times/);
  });

  it('refuses a host whose DNS answer holds a private address, and hosts outside the allowlist', async () => {
    // Prepare: a rebinding-style answer mixes a public and a private address.
    const resolve = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    const store = createFsMediaStore({ dir, publicBaseUrl: 'http://localhost:3000', resolve });
    const narrow = createFsMediaStore({
      dir,
      publicBaseUrl: 'http://localhost:3000',
      resolve,
      sourcePolicy: { insecureOrigins: [], allowedHosts: ['*.cdn.example'] },
    });

    // Act
    const [rebinding, outside] = await Promise.allSettled([
      store.copyFromUrl('https://media.example/0.png', mediaKey('u', 't', 0), 'image'),
      narrow.copyFromUrl('https://cdn.example.evil/0.png', mediaKey('u', 't', 0), 'image'),
    ]);

    // Assert
    expect(reason(rebinding)).toMatch(/non-public address/);
    expect(reason(outside)).toMatch(/a host outside the allowlist/);
  });

  it.each([
    ['an SVG', { mockOutcome: 'svg_result' }, /content type "image\/svg\+xml", not an allowed image type/],
    [
      'an SVG sent as image/png',
      { mockOutcome: 'disguised_result' },
      /bytes of no allowed format labelled "image\/png"/,
    ],
  ])('refuses %s and stores nothing', async (_case, input, message) => {
    // Prepare
    const [url = ''] = await resultUrls('image-model-1', input);

    // Act
    const result = fsStore(localPolicy()).copyFromUrl(url, mediaKey('u', 't', 0), 'image');

    // Assert
    await expect(result).rejects.toThrow(message);
    expect(await filesUnder(dir)).toEqual([]);
  });

  it('refuses a GIF and a PNG labelled as JPEG; takes a PNG sent as octet-stream as PNG', async () => {
    // Prepare
    const store = fsStore(localPolicy(tricky.url));

    // Act
    const [gif, mislabeled, octet] = await Promise.allSettled([
      store.copyFromUrl(`${tricky.url}/gif`, mediaKey('u', 'g', 0), 'image'),
      store.copyFromUrl(`${tricky.url}/mislabeled`, mediaKey('u', 'm', 0), 'image'),
      store.copyFromUrl(`${tricky.url}/octet`, mediaKey('u', 'o', 0), 'image'),
    ]);

    // Assert
    expect(reason(gif)).toMatch(/not an allowed image type/);
    expect(reason(mislabeled)).toMatch(/sent image\/png bytes labelled "image\/jpeg"/);
    expect(octet).toEqual({
      status: 'fulfilled',
      value: { key: 'results/u/o/0.png', contentType: 'image/png', bytes: 28 },
    });
  });
});
