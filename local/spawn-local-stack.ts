/**
 * The local stack as a child process (`node bin/run-ts.cjs local/start.ts`), exactly as `npm start` runs
 * it, for the end-to-end suite, the fault tests and the load benchmark: black box, on free ports. It
 * ends with the process that spawned it, also when that one is killed (EXIT_WITH_PID).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { freePorts } from './free-ports';

const ROOT = resolve(__dirname, '..');
const OUTPUT_LINES_KEPT = 200;

export interface SpawnedLocalStack {
  child: ChildProcess;
  /** `http://127.0.0.1:<port>`, from the `API ready at` line. */
  baseUrl: string;
  /** From the `DynamoDB Local at` line (the stack's own, or DYNAMODB_ENDPOINT when given). */
  dynamodbEndpoint: string;
  /** The child's recent output (API keys redacted), for failure messages. */
  output(): string;
  /**
   * SIGINT, then SIGKILL to the stack's process group after a bounded wait (DynamoDB Local's JVM, in a
   * group of its own, then ends through its watchdog: local/dynamodb-local.ts).
   */
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /**
   * Settings for the child (PORT, DYNAMODB_PORT, MOCK_PROVIDER_PORT and OIDC_PROVIDER_PORT default to
   * free ports; EXIT_WITH_PID to this process, so the stack ends with it).
   */
  env?: Record<string, string>;
  readyTimeoutMs?: number;
  stopTimeoutMs?: number;
}

export { freePorts } from './free-ports';

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (hasExited(child)) return Promise.resolve(true);
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      done(true);
    });
  });
}

async function stopChild(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (hasExited(child)) return;
  child.kill('SIGINT');
  if (await waitForExit(child, timeoutMs)) return;
  // The child leads its own process group (detached): the kill reaches whatever else it spawned there.
  // DynamoDB Local's JVM runs in a group of its own, and its watchdog ends it once the stack is gone.
  if (child.pid !== undefined) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }
  await waitForExit(child, timeoutMs);
}

/**
 * Builds the local stack's bundle now when a source changed (bin/run-ts.cjs), so that starts made in
 * parallel afterwards (test workers) find it ready instead of each building it.
 */
export function buildLocalStack(): void {
  const built = spawnSync(process.execPath, ['bin/run-ts.cjs', '--build', 'local/start.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`Building the local stack failed:\n${built.stderr}`);
}

/** Starts made when a port the stack was given turned out taken (another process bound it first). */
const STARTS_ON_TAKEN_PORT = 3;

/**
 * Starts the stack and resolves at its `API ready at` line; stops it again on any failure. A start that
 * ends because a port was taken meanwhile (`EADDRINUSE`) is made again on fresh ports, up to 3 times.
 */
export async function spawnLocalStack(options: SpawnOptions = {}): Promise<SpawnedLocalStack> {
  for (let start = 1; ; start++) {
    try {
      return await spawnOnce(options);
    } catch (error) {
      if (start >= STARTS_ON_TAKEN_PORT || !/EADDRINUSE|is already in use/.test((error as Error).message)) throw error;
    }
  }
}

async function spawnOnce(options: SpawnOptions): Promise<SpawnedLocalStack> {
  // Seconds on an idle machine; a 2-core machine running test suites (several JVMs starting at once)
  // can need minutes. Only a start that fails anyway waits this long.
  const readyTimeoutMs = options.readyTimeoutMs ?? 180_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
  const [port, dynamodbPort, mockProviderPort, oidcProviderPort] = await freePorts(4);
  const lines: string[] = [];
  const child = spawn(process.execPath, ['bin/run-ts.cjs', 'local/start.ts'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PORT: String(port),
      DYNAMODB_PORT: String(dynamodbPort),
      MOCK_PROVIDER_PORT: String(mockProviderPort),
      OIDC_PROVIDER_PORT: String(oidcProviderPort),
      DATA_DIR: ':memory:',
      // The stack ends with this process, however it ends (local/owner-watch.ts): a run killed from
      // outside runs no teardown that could stop it.
      EXIT_WITH_PID: String(process.pid),
      ...options.env,
    },
  });
  const output = () => lines.join('\n');
  const stop = () => stopChild(child, stopTimeoutMs);

  const ready = new Promise<{ baseUrl: string; dynamodbEndpoint: string }>((done, fail) => {
    let dynamodbEndpoint: string | undefined;
    let pending = '';
    const onData = (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const raw of parts) {
        // The demo key is printed once: keep it out of anything a test or benchmark may show.
        const line = raw
          .replace(/gsk_live_[A-Za-z0-9_-]+/g, 'gsk_live_<redacted>')
          .replace(/with password \S+/g, 'with password <redacted>');
        lines.push(line);
        if (lines.length > OUTPUT_LINES_KEPT) lines.shift();
        dynamodbEndpoint ??= /DynamoDB Local at (http:\/\/\S+)/.exec(line)?.[1];
        const api = /API ready at (http:\/\/\S+)/.exec(line)?.[1];
        if (api && dynamodbEndpoint) done({ baseUrl: api, dynamodbEndpoint });
        else if (api) fail(new Error('The stack printed "API ready at" without a "DynamoDB Local at" line'));
      }
    };
    // Always drained, so a chatty child (a log line per request) never blocks on a full pipe.
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`The local stack exited early (code ${code}, ${signal})`)));
  });

  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(
      () => fail(new Error(`The local stack did not print "API ready at" within ${readyTimeoutMs} ms`)),
      readyTimeoutMs,
    );
  });
  try {
    const urls = await Promise.race([ready, timeout]);
    return { child, ...urls, output, stop };
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n--- local stack output ---\n${output()}`);
  } finally {
    clearTimeout(timer);
  }
}
