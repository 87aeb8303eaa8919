/**
 * `npm start` refuses to start, with a message a person can act on, when a port is taken or Java is
 * missing; and on Ctrl-C it stops everything it started and exits 0.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient } from '../../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { freePorts } from '../../local/spawn-local-stack';
import { spawnTestStack } from '../support/test-stack';

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);

// Tests here start the whole local stack (DynamoDB Local's JVM first), which spawnLocalStack waits for
// up to 180 s on a loaded machine: room for that and the rest.
jest.setTimeout(240_000);

/** Starts `local/start.ts` and resolves at its ready line, with every line it printed (keys included). */
async function startUntilReady(env: Record<string, string>): Promise<{ lines: string[]; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['bin/run-ts.cjs', 'local/start.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const lines: string[] = [];
  const stop = async () => {
    child.kill('SIGINT');
    await exited;
  };
  try {
    await new Promise<void>((ready, fail) => {
      let pending = '';
      child.stdout.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const parts = pending.split('\n');
        pending = parts.pop() ?? '';
        lines.push(...parts);
        if (parts.some((line) => line.startsWith('API ready at'))) ready();
      });
      child.stderr.resume();
      child.once('exit', (code) =>
        fail(new Error(`npm start exited (${code}) before its ready line:\n${lines.join('\n')}`)),
      );
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { lines, stop };
}

/** The operator CLI as `npm run admin` runs it. */
function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['bin/run-admin.cjs', ...args],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (error, stdout) => done({ code: error ? Number(error.code ?? 1) : 0, stdout }),
    );
  });
}

/** Runs `local/start.ts` to completion and returns its exit code and stderr. */
async function start(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, ['bin/run-ts.cjs', 'local/start.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: ':memory:', ...env },
      timeout: 60_000,
    });
    return { code: 0, stderr: '' };
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    return { code: failed.code ?? -1, stderr: failed.stderr ?? '' };
  }
}

describe('npm start', () => {
  let blocker: Server;
  let takenPort: number;

  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((ready) => blocker.listen(0, '127.0.0.1', () => ready()));
    const address = blocker.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    takenPort = address.port;
  });

  afterAll(async () => {
    await new Promise<void>((closed) => blocker.close(() => closed()));
  });

  test('refuses a taken PORT with a message naming the setting, and exits 1', async () => {
    // Prepare
    const [dynamodbPort, mockPort] = await freePorts(2);

    // Act
    const result = await start({
      PORT: String(takenPort),
      DYNAMODB_PORT: String(dynamodbPort),
      MOCK_PROVIDER_PORT: String(mockPort),
    });

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`Port ${takenPort} (PORT) is already in use; set PORT to a free port.`);
  });

  test('refuses to start without Java, saying why', async () => {
    // Prepare: a PATH holding only node itself, so `java` cannot be found.
    const [port, dynamodbPort, mockPort] = await freePorts(3);
    const bin = await mkdtemp(join(tmpdir(), 'node-only-'));
    await symlink(process.execPath, join(bin, 'node'));

    // Act
    const result = await start({
      PATH: bin,
      PORT: String(port),
      DYNAMODB_PORT: String(dynamodbPort),
      MOCK_PROVIDER_PORT: String(mockPort),
    });

    // Assert
    await rm(bin, { recursive: true, force: true });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Java 17 or newer is required to run DynamoDB Local');
  });

  test('stops cleanly on Ctrl-C: exit code 0 and its ports free again', async () => {
    // Prepare
    const stack = await spawnTestStack();
    const exit = new Promise<number | null>((done) => stack.child.once('exit', (code) => done(code)));
    const apiPort = Number(new URL(stack.baseUrl).port);

    // Act
    stack.child.kill('SIGINT');
    const code = await exit;

    // Assert
    expect(code).toBe(0);
    const probe = createServer();
    await expect(
      new Promise<void>((ready, fail) => {
        probe.once('error', fail);
        probe.listen(apiPort, '127.0.0.1', () => probe.close(() => ready()));
      }),
    ).resolves.toBeUndefined();
  });

  test('behind a stage prefix (API_STAGE, as an execute-api URL), Location points under the same prefix', async () => {
    // Prepare
    const stack = await spawnTestStack({ env: { API_STAGE: 'prod' } });
    const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
    try {
      const store = { doc, tableName: stack.tableName };
      await grantCredits(store, { userId: 'stage-user', amount: 10 });
      const { apiKey } = await putApiKey(store, { userId: 'stage-user', name: 'stage' });
      const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
      const body = JSON.stringify({ model: 'image-model-1', prompt: 'a staged lighthouse' });

      // Act
      const submitted = await fetch(`${stack.baseUrl}/api/ai/image/generate`, { method: 'POST', headers, body });
      const location = submitted.headers.get('location') ?? '';
      const followed = await fetch(new URL(location, `${stack.baseUrl}/api/ai/image/generate`), { headers });
      const outsideStage = await fetch(`${new URL(stack.baseUrl).origin}/api/ai/tasks/x`, { headers });

      // Assert
      expect(stack.baseUrl).toMatch(/\/prod$/);
      expect(submitted.status).toBe(202);
      const { taskId } = (await submitted.json()) as { taskId: string };
      expect(location).toBe(`/prod/api/ai/tasks/${taskId}`);
      expect(followed.status).toBe(200);
      expect(((await followed.json()) as { taskId: string }).taskId).toBe(taskId);
      expect(outsideStage.status).toBe(404);
    } finally {
      doc.destroy();
      await stack.stop();
    }
  });
  test('a second start on kept data prints working curl lines, the video example and how to reset; the CLI finds it', async () => {
    // Prepare
    const dataDir = await mkdtemp(join(tmpdir(), 'second-start-'));
    const ports = await freePorts(4);
    const env = {
      PORT_BASE: '',
      PORT: String(ports[0]),
      MOCK_PROVIDER_PORT: String(ports[1]),
      OIDC_PROVIDER_PORT: String(ports[2]),
      DYNAMODB_PORT: String(ports[3]),
      DATA_DIR: dataDir,
    };
    try {
      const first = await startUntilReady(env);
      await first.stop();

      // Act
      const second = await startUntilReady(env);
      let submitted: Response;
      let cli: { code: number; stdout: string };
      try {
        const keyLine = second.lines[second.lines.findIndex((line) => line.includes('shown only now:')) + 1] ?? '';
        const apiKey = keyLine.trim();
        submitted = await fetch(`http://127.0.0.1:${ports[0]}/api/ai/image/generate`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'image-model-1', prompt: 'a second start' }),
        });
        cli = await runCli(['credits', 'show', '--user', 'demo'], { DATA_DIR: dataDir });
      } finally {
        await second.stop();
      }

      // Assert
      const banner = second.lines.join('\n');
      expect(first.lines.join('\n')).toContain('has 1000 credits. Its API key is shown only now:');
      expect(banner).toMatch(/kept from an earlier start\). A key for this run, working until \S+Z, shown only now:/);
      expect(submitted.status).toBe(202);
      expect(banner).toContain('/api/ai/video/generate');
      expect(banner).toContain('The mock provider calls back when a task ends');
      expect(banner).toContain('at most every 30 s (PROVIDER_REFRESH_INTERVAL_SECONDS)');
      expect(banner).toContain(`rm -rf ${dataDir}`);
      expect(banner).toContain('PORT_BASE=4000 npm start');
      expect(cli.code).toBe(0);
      expect(JSON.parse(cli.stdout)).toMatchObject({ userId: 'demo' });
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 360_000); // two starts one after the other
});
