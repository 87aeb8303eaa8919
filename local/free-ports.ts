/**
 * Free TCP ports for a process that starts next and listens on them (a spawned local stack, a DynamoDB
 * Local JVM, a test's own server).
 *
 * Why not `listen(0)`: the OS picks that port from its ephemeral range, the same range it hands to every
 * outgoing connection. Between the probe closing and the child listening, any connection on the machine
 * can take the number; a CI run of the suite (thousands of requests a second) failed so with
 * `EADDRINUSE`. A port below the ephemeral range is never given to an outgoing connection, so only
 * another prober could take it, and the chance is one in thousands (callers that start a process retry
 * on `EADDRINUSE`: local/spawn-local-stack.ts).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/** The lowest port handed out; below it sit the ports services tend to be configured on. */
const LOWEST_PORT = 10_000;
/** Below Linux's default ephemeral range (32768) and the IANA one (49152) that macOS and Windows use. */
const HIGHEST_PORT_DEFAULT = 32_767;
const PROBES_PER_PORT = 50;

/** The highest port below the OS's ephemeral range (Linux says where it starts; others use 49152). */
export function highestNonEphemeralPort(rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): number {
  try {
    const low = Number(readFileSync(rangeFile, 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > LOWEST_PORT + 1_000) return Math.min(low - 1, HIGHEST_PORT_DEFAULT);
  } catch {
    // Not Linux: 32767 sits below the IANA range that macOS and Windows use.
  }
  return HIGHEST_PORT_DEFAULT;
}

function listenOn(server: Server, port: number): Promise<boolean> {
  return new Promise((done) => {
    const refused = () => done(false);
    server.once('error', refused);
    // No host: a port already bound on any address (IPv4 or IPv6) is refused, whichever one the
    // process that comes next listens on.
    server.listen(port, () => {
      server.off('error', refused);
      done(true);
    });
  });
}

/**
 * N distinct ports that were free a moment ago, below the ephemeral range. Every probe stays open until
 * all are found, so none repeats.
 */
export async function freePorts(count: number): Promise<number[]> {
  const highest = highestNonEphemeralPort();
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let probes = 0; ports.length < count; probes++) {
      if (probes >= count * PROBES_PER_PORT) {
        throw new Error(`No free port between ${LOWEST_PORT} and ${highest} after ${probes} tries`);
      }
      const port = LOWEST_PORT + Math.floor(Math.random() * (highest - LOWEST_PORT + 1));
      if (ports.includes(port)) continue;
      const server = createServer();
      if (await listenOn(server, port)) {
        servers.push(server);
        ports.push(port);
      }
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((closed) => server.close(() => closed()))));
  }
}

/** One free port (see `freePorts`). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('no free port');
  return port;
}
