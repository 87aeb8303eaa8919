/**
 * The local stack as a child process (`node --import tsx local/start.ts`) on free ports, in memory, with
 * the users and keys the suite needs written straight into its DynamoDB Local. Only the global setup and
 * teardown use this module: the test files see nothing but HTTP.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { resolve } from 'node:path';
import { grantCredits } from '../../../functions/store/accounts';
import { epochSeconds, putApiKey } from '../../../functions/store/api-keys';
import { createDocumentClient, type StoreContext } from '../../../functions/store/client';
import { auditAll } from '../../../functions/store/ledger';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../../local/dynamodb-local';
import type { E2eContext } from './target';

const ROOT = resolve(__dirname, '..', '..', '..');
const TABLE_NAME = 'generation-service-e2e';
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
const OUTPUT_LINES_KEPT = 200;

/** Small enough to wait for a TIMEOUT in a test, large enough for every normal task to finish. */
export const LOCAL_MAX_PENDING_SECONDS = 8;
/** The expiring keys end every EXPIRY_STEP_SECONDS after the setup, for EXPIRING_KEY_COUNT steps. */
const EXPIRY_STEP_SECONDS = 8;
const EXPIRING_KEY_COUNT = 15;

export const USERS = {
  main: { userId: 'e2e-main', credits: 100_000 },
  other: { userId: 'e2e-other', credits: 50 },
  poor: { userId: 'e2e-poor', credits: 2 },
  restricted: { userId: 'e2e-restricted', credits: 10 },
  expiring: { userId: 'e2e-expiring', credits: 10 },
  // Below the 320-credit balance probe, so a 402 tells its balance (test/e2e/fuzz-http.test.ts).
  fuzz: { userId: 'e2e-fuzz', credits: 300 },
} as const;

export interface RunningLocalStack {
  child: ChildProcess;
  baseUrl: string;
  store: StoreContext;
  /** The child's recent output, for failure messages. */
  output(): string;
}

/** N distinct free ports: every probe server stays open until all are found, so none repeats. */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((ready, fail) => {
        server.once('error', fail);
        server.listen(0, '127.0.0.1', () => ready());
      });
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no port from listen(0)');
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((closed) => server.close(() => closed()))));
  }
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      done(true);
    });
  });
}

/**
 * SIGINT (the stack stops DynamoDB Local and its servers), then SIGKILL to the whole process group
 * after a bounded wait. Always resolves once the child is gone.
 */
export async function stopLocalStack(child: ChildProcess): Promise<void> {
  if (exited(child)) return;
  child.kill('SIGINT');
  if (await waitForExit(child, STOP_TIMEOUT_MS)) return;
  // The child leads its own process group (detached): the kill reaches DynamoDB Local's Java too.
  if (child.pid !== undefined) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }
  await waitForExit(child, STOP_TIMEOUT_MS);
}

/** Starts `local/start.ts` on free ports and resolves at its `API ready at` line (bounded). */
async function spawnStack(): Promise<Omit<RunningLocalStack, 'store'> & { dynamodbEndpoint: string }> {
  const [port, dynamodbPort, mockProviderPort] = await freePorts(3);
  const lines: string[] = [];
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/start.ts'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PORT: String(port),
      DYNAMODB_PORT: String(dynamodbPort),
      MOCK_PROVIDER_PORT: String(mockProviderPort),
      TABLE_NAME,
      DATA_DIR: ':memory:',
      PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
      MAX_PENDING_SECONDS: String(LOCAL_MAX_PENDING_SECONDS),
      SWEEPER_INTERVAL_SECONDS: '1',
      // AUTHORIZER_CACHE_TTL_SECONDS stays at its default (60): the expiry check needs a cached Allow.
      AUTHORIZER_CACHE_TTL_SECONDS: '',
    },
  });
  const output = () => lines.join('\n');

  const ready = new Promise<{ baseUrl: string; dynamodbEndpoint: string }>((done, fail) => {
    let dynamodbEndpoint: string | undefined;
    let pending = '';
    const onData = (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const raw of parts) {
        // The demo key is printed once: keep it out of anything the suite may show.
        const line = raw.replace(/gsk_live_[A-Za-z0-9_-]+/g, 'gsk_live_<redacted>');
        lines.push(line);
        if (lines.length > OUTPUT_LINES_KEPT) lines.shift();
        dynamodbEndpoint ??= /DynamoDB Local at (http:\/\/\S+)/.exec(line)?.[1];
        const api = /API ready at (http:\/\/\S+)/.exec(line)?.[1];
        if (api && dynamodbEndpoint) done({ baseUrl: api, dynamodbEndpoint });
        else if (api) fail(new Error('The stack printed "API ready at" without a "DynamoDB Local at" line'));
      }
    };
    // Always drained, so a chatty child never blocks on a full pipe.
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`The local stack exited early (code ${code}, ${signal})`)));
  });

  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(
      () => fail(new Error(`The local stack did not print "API ready at" within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
  });
  try {
    const { baseUrl, dynamodbEndpoint } = await Promise.race([ready, timeout]);
    return { child, baseUrl, dynamodbEndpoint, output };
  } catch (error) {
    await stopLocalStack(child);
    throw new Error(`${(error as Error).message}\n--- local stack output ---\n${output()}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The stack, its store, and the suite's users and keys. */
export async function startLocalStack(): Promise<{ stack: RunningLocalStack; context: E2eContext }> {
  let lastError: unknown;
  // A free port can be taken between finding it and binding it: a few tries.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const spawned = await spawnStack();
      const store: StoreContext = {
        doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: spawned.dynamodbEndpoint }),
        tableName: TABLE_NAME,
      };
      const stack: RunningLocalStack = { ...spawned, store };
      try {
        return { stack, context: await seed(stack) };
      } catch (error) {
        store.doc.destroy();
        await stopLocalStack(stack.child);
        throw error;
      }
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function seed(stack: RunningLocalStack): Promise<E2eContext> {
  const { store } = stack;
  for (const user of Object.values(USERS)) {
    await grantCredits(store, { userId: user.userId, amount: user.credits, grantId: `e2e-${user.userId}` });
  }
  const key = (userId: string, name: string, extra: { allowedCidrs?: string[]; expiresAt?: number } = {}) =>
    putApiKey(store, { userId, name, ...extra });
  const main = await key(USERS.main.userId, 'e2e main');
  const other = await key(USERS.other.userId, 'e2e other');
  const poor = await key(USERS.poor.userId, 'e2e poor');
  const restricted = await key(USERS.restricted.userId, 'e2e restricted', { allowedCidrs: ['10.0.0.0/8'] });
  const fuzz = await key(USERS.fuzz.userId, 'e2e fuzz');
  // Last, so that the setup's own duration does not eat into the keys' lifetimes.
  const start = epochSeconds(new Date());
  const expiring: { apiKey: string; expiresAtMs: number }[] = [];
  for (let step = 1; step <= EXPIRING_KEY_COUNT; step++) {
    const expiresAt = start + step * EXPIRY_STEP_SECONDS;
    const issued = await key(USERS.expiring.userId, `e2e expiring ${step}`, { expiresAt });
    expiring.push({ apiKey: issued.apiKey, expiresAtMs: expiresAt * 1000 });
  }

  return {
    kind: 'local',
    baseUrl: stack.baseUrl,
    keys: {
      main: { apiKey: main.apiKey, balance: USERS.main.credits },
      other: { apiKey: other.apiKey, balance: USERS.other.credits },
      poor: { apiKey: poor.apiKey, balance: USERS.poor.credits },
      ipRestricted: { apiKey: restricted.apiKey },
      fuzz: { apiKey: fuzz.apiKey, balance: USERS.fuzz.credits },
      expiring,
    },
    mockProvider: true,
    maxPendingSeconds: LOCAL_MAX_PENDING_SECONDS,
    pollTimeoutMs: 20_000,
  };
}

/**
 * The ledger invariant over every account of the run: balance = sum of the ledger, never negative.
 * @returns a description of every violation (empty when the invariant holds)
 */
export async function ledgerViolations(store: StoreContext): Promise<string[]> {
  const audit = await auditAll(store);
  const problems = audit.users
    .filter((user) => !user.ok)
    .map((user) => `${user.userId}: balance ${user.balance}, ledger sum ${user.ledgerSum} (${user.entries} entries)`);
  const audited = new Set(audit.users.map((user) => user.userId));
  for (const user of Object.values(USERS)) {
    if (!audited.has(user.userId)) problems.push(`${user.userId}: no account found to audit`);
  }
  return problems;
}
