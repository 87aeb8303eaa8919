/**
 * The true size limits of result copies, pinned where they are decided:
 *
 * - deployed, every copy is made by the media worker's and the sweeper's wiring
 *   (`workerLifecycleFromEnv`), whose S3 store streams a multipart `Upload`: a source without
 *   `Content-Length` is copied up to the kind's limit (50 MiB image, 500 MiB video) like one with it,
 *   memory bounded by the parts in flight; past the limit it is refused;
 * - the request-path S3 store (presigned PUT, `createS3MediaStore`) needs the length up front, so it
 *   holds an undeclared source in memory up to 16 MiB and refuses it beyond; deployed it copies
 *   nothing (it only signs result URLs), which the first test shows by copying through the wiring.
 *
 * Real parts: an HTTP source streaming an MP4 without `Content-Length`, and an S3 stand-in over HTTP
 * that takes a multipart upload and counts what it is sent.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createS3MediaStore } from '../../functions/media/s3-media-store';
import { createS3UploadMediaStore } from '../../functions/media/s3-upload-media-store';
import { DEFAULT_MAX_BYTES } from '../../functions/media/source';
import { resetWorkerLifecycleFromEnv, workerLifecycleFromEnv } from '../../functions/runtime/worker-lifecycle-from-env';

import { mp4Source } from '../support/mp4-source';

jest.setTimeout(60_000);

const MIB = 1024 * 1024;
const UNDECLARED_BYTES = 20 * MIB;

function listen(server: Server): Promise<string> {
  return new Promise((ready) =>
    server.listen(0, '127.0.0.1', () => ready(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

interface S3Calls {
  parts: number;
  puts: number;
  completed: number;
}

/** Just enough S3 for a multipart upload (and a single PUT): bodies are drained, calls counted. */
function s3StandIn(calls: S3Calls): Server {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://s3.invalid');
    req.on('data', () => undefined);
    req.on('end', () => {
      const xml = (body: string) => res.writeHead(200, { 'content-type': 'application/xml' }).end(body);
      if (req.method === 'POST' && url.searchParams.has('uploads')) {
        xml(
          '<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>',
        );
      } else if (req.method === 'PUT') {
        if (url.searchParams.has('partNumber')) calls.parts++;
        else calls.puts++;
        res.writeHead(200, { etag: `"${url.searchParams.get('partNumber') ?? '1'}"` }).end();
      } else if (req.method === 'POST' && url.searchParams.has('uploadId')) {
        calls.completed++;
        xml(
          '<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"x"</ETag></CompleteMultipartUploadResult>',
        );
      } else {
        res.writeHead(204).end();
      }
    });
  });
}

describe('result size limits', () => {
  let source: Server;
  let s3: Server;
  let sourceUrl: string;
  let s3Url: string;
  const calls: S3Calls = { parts: 0, puts: 0, completed: 0 };
  const savedEnv = { ...process.env };

  beforeAll(async () => {
    source = mp4Source({ declareLength: false });
    s3 = s3StandIn(calls);
    sourceUrl = await listen(source);
    s3Url = await listen(s3);
    // The SDK's S3 client reads its credentials from the process, as a Lambda's does.
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_SESSION_TOKEN: '' });
  });

  afterAll(async () => {
    process.env = savedEnv;
    resetWorkerLifecycleFromEnv();
    for (const server of [source, s3]) {
      server.closeAllConnections();
      await new Promise<void>((closed) => server.close(() => closed()));
    }
  });

  function deployedWiring(extra: NodeJS.ProcessEnv = {}) {
    resetWorkerLifecycleFromEnv();
    return workerLifecycleFromEnv({
      MEDIA_BUCKET: 'results',
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_S3: s3Url,
      MEDIA_SOURCE_INSECURE_ORIGINS: sourceUrl,
      TABLE_NAME: 'not-used',
      ...extra,
    });
  }

  test('the kinds limit results to 50 MiB per image and 500 MiB per video', () => {
    // Act
    const limits = { ...DEFAULT_MAX_BYTES };

    // Assert
    expect(limits).toEqual({ image: 50 * MIB, video: 500 * MIB });
  });

  test('the deployed copier streams a video without Content-Length past 16 MiB, in parts', async () => {
    // Prepare
    const lc = deployedWiring();
    const before = { ...calls };

    // Act
    const stored = await lc.media.copyFromUrl(`${sourceUrl}/${UNDECLARED_BYTES}.mp4`, 'results/u/t/0', 'video');

    // Assert
    expect(stored).toMatchObject({ key: 'results/u/t/0.mp4', contentType: 'video/mp4', bytes: UNDECLARED_BYTES });
    expect(calls.parts - before.parts).toBe(4);
    expect(calls.completed - before.completed).toBe(1);
  });

  test('the deployed copier refuses a source without Content-Length as soon as it passes the limit', async () => {
    // Prepare: the worker's store with a limit of 12 MiB instead of the video's 500 (same code path)
    const store = createS3UploadMediaStore({
      bucket: 'results',
      region: 'us-east-1',
      endpoint: s3Url,
      forcePathStyle: true,
      maxBytes: 12 * MIB,
      sourcePolicy: { insecureOrigins: [sourceUrl], allowedHosts: [] },
      urls: { urlFor: async (key) => key },
    });
    const before = { ...calls };

    // Act
    const copy = store.copyFromUrl(`${sourceUrl}/${UNDECLARED_BYTES}.mp4`, 'results/u/t/1', 'video');

    // Assert
    await expect(copy).rejects.toThrow(/sent more than the 12582912-byte limit/);
    expect(calls.completed - before.completed).toBe(0);
  });

  test('the request-path S3 store holds an undeclared source in memory only up to 16 MiB', async () => {
    // Prepare
    const store = createS3MediaStore({
      bucket: 'results',
      region: 'us-east-1',
      endpoint: s3Url,
      forcePathStyle: true,
      credentials: () => ({ accessKeyId: 'test', secretAccessKey: 'test' }),
      sourcePolicy: { insecureOrigins: [sourceUrl], allowedHosts: [] },
    });

    // Act
    const within = await store.copyFromUrl(`${sourceUrl}/${16 * MIB}.mp4`, 'results/u/t/2', 'video');
    const beyond = store.copyFromUrl(`${sourceUrl}/${UNDECLARED_BYTES}.mp4`, 'results/u/t/3', 'video');

    // Assert
    expect(within.bytes).toBe(16 * MIB);
    await expect(beyond).rejects.toThrow(/without Content-Length sent more than the 16777216-byte in-memory limit/);
  });
});
