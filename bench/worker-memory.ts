/**
 * Section 8: the media worker's memory while it copies a 1 GiB video. The worker's own S3 store
 * (`functions/media/s3-upload-media-store.ts`, a multipart `Upload`) copies from a local HTTP source
 * that streams 1 GiB into a minimal S3 stand-in that takes the multipart upload and discards the bytes.
 * The process's RSS is sampled every 100 ms: flat means bounded by the parts in flight, not the size.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { createS3UploadMediaStore } from '../functions/media/s3-upload-media-store';
import { mp4Source } from '../test/support/mp4-source';
import { bytes, note, onCleanup, out, table } from './support';

const GIB = 1024 * 1024 * 1024;
/** A quarter and the whole: the same peak for both is what "flat" means. */
const SIZES = [GIB / 4, GIB];

function listen(server: Server): Promise<string> {
  return new Promise((ready) =>
    server.listen(0, '127.0.0.1', () => ready(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

/** Just enough S3 for a multipart upload: every body is drained and dropped. */
function s3StandIn(): Server {
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
        res.writeHead(200, { etag: `"${url.searchParams.get('partNumber') ?? '1'}"` }).end();
      } else if (req.method === 'POST' && url.searchParams.has('uploadId')) {
        xml(
          '<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"x"</ETag></CompleteMultipartUploadResult>',
        );
      } else {
        res.writeHead(204).end();
      }
    });
  });
}

export async function workerMemory(): Promise<void> {
  out('## 8. Media worker memory copying a 1 GiB video');
  out();
  const from = mp4Source({ declareLength: true });
  const s3 = s3StandIn();
  const sourceUrl = await listen(from);
  const s3Url = await listen(s3);
  onCleanup(() => {
    from.close();
    from.closeAllConnections();
    s3.close();
    s3.closeAllConnections();
  });
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: s3Url,
    forcePathStyle: true,
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  const store = createS3UploadMediaStore({
    bucket: 'bench',
    region: 'us-east-1',
    client,
    maxBytes: 2 * GIB,
    timeoutMs: 600_000,
    sourcePolicy: { insecureOrigins: [sourceUrl], allowedHosts: [] },
    urls: { urlFor: async (key) => key },
  });

  const rows: Array<Array<string>> = [];
  for (const size of SIZES) {
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 100);
    note(`copying ${bytes(size)} bytes through the multipart Upload`);
    const started = performance.now();
    const stored = await store.copyFromUrl(`${sourceUrl}/${size}.mp4`, 'results/bench/task/0', 'video');
    const seconds = (performance.now() - started) / 1000;
    clearInterval(timer);
    rows.push([bytes(stored.bytes), `${seconds.toFixed(1)} s`, bytes(before), bytes(peak), bytes(peak - before)]);
  }
  client.destroy();
  table(['Copied B', 'Time', 'RSS before B', 'RSS peak B', 'Peak - before B'], rows, ['r', 'r', 'r', 'r', 'r']);
  out();
  out('Parts of 5 MiB, two in flight: memory stays bounded by the parts, whatever the file size.');
  out();
}
