/**
 * `npm start` refuses to start, with a message a person can act on, when a port is taken or Java is
 * missing; and on Ctrl-C it stops everything it started and exits 0.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { grantCredits } from '../../functions/store/accounts';
import { putApiKey } from '../../functions/store/api-keys';
import { createDocumentClient } from '../../functions/store/client';
import { DEFAULT_TABLE_NAME } from '../../functions/store/table';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { freePorts, spawnLocalStack } from '../../local/spawn-local-stack';

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);

/** Runs `local/start.ts` to completion and returns its exit code and stderr. */
async function start(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, ['--import', 'tsx', 'local/start.ts'], {
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
    const stack = await spawnLocalStack();
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
    const stack = await spawnLocalStack({ env: { API_STAGE: 'prod', DATA_DIR: ':memory:' } });
    const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
    try {
      const store = { doc, tableName: DEFAULT_TABLE_NAME };
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
});
