/**
 * A media source of any size without holding it in memory: `GET /<bytes>.mp4` streams that many bytes,
 * an MP4 signature first (the copier checks file signatures) and zeros after, 1 MiB at a time with
 * backpressure. `declareLength: false` leaves out Content-Length, as a chunked upstream answer does.
 * Shared by the result-size tests and the worker-memory bench.
 */
import { createServer, type Server } from 'node:http';

const CHUNK = Buffer.alloc(1024 * 1024);

export function mp4Source(options: { declareLength: boolean }): Server {
  return createServer((req, res) => {
    const size = Number(/^\/(\d+)\.mp4$/.exec(req.url ?? '')?.[1] ?? 0);
    res.writeHead(200, {
      'content-type': 'video/mp4',
      ...(options.declareLength ? { 'content-length': String(size) } : {}),
    });
    const head = Buffer.alloc(CHUNK.length);
    head.write('\u0000\u0000\u0000\u0018ftypisom', 0, 'latin1');
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        const chunk = sent === 0 ? head : CHUNK;
        sent += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  });
}
