/**
 * A port for a test file's own HTTP server that the stack must know before the file runs (the webhook
 * receiver's origin is a setting fixed when the stack starts). The global setup holds the port with a
 * placeholder server; the test file asks that server to let go (`POST /release`) and listens there.
 * Holding it, rather than choosing a free number and hoping, keeps any other process from taking it meanwhile.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldPort {
  port: number;
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** Closes the placeholder if nobody took the port (the global teardown). */
  close(): Promise<void>;
}

/** Holds a free port on 127.0.0.1 until a `POST /release` to it. */
export async function holdPort(): Promise<HeldPort> {
  const holder: Server = createServer((request, response) => {
    if (request.method !== 'POST' || request.url !== '/release') {
      response.writeHead(404).end();
      return;
    }
    // The listening socket closes now; the answer tells the caller it may listen.
    holder.close();
    response.writeHead(200, { Connection: 'close' }).end('released');
  });
  await new Promise<void>((ready) => holder.listen(0, '127.0.0.1', () => ready()));
  const { port } = holder.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((closed) => {
        if (!holder.listening) closed();
        else holder.close(() => closed());
      }),
  };
}

/**
 * Takes over a port held by `holdPort` (another process's): asks the holder to let go, then has `server`
 * listen there. A listen refused because the old socket is still closing is tried again, up to 10 s.
 */
export async function takeHeldPort(server: Server, origin: string): Promise<void> {
  const released = await fetch(`${origin}/release`, { method: 'POST' });
  if (released.status !== 200) throw new Error(`the holder of ${origin} answered ${released.status}`);
  const { port } = new URL(origin);
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await new Promise<void>((ready, fail) => {
        server.once('error', fail);
        server.listen(Number(port), '127.0.0.1', () => {
          server.off('error', fail);
          ready();
        });
      });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > deadline) throw error;
      await new Promise((next) => setTimeout(next, 50));
    }
  }
}
