/**
 * The Python client (client/python) end to end: `python3 -m unittest -v` in its folder, with the e2e
 * stack's base URL and main key in the environment, and, on the local target, a stack of this file's
 * own that keeps one task at a time with the provider (so a task stays queued for a cancel) and may
 * deliver webhooks over plain http to a port the Python tests listen on, with an account whose signing
 * secret comes from the operator CLI. Passes when the run exits 0 and ran the tests the target allows
 * (a variable left out would leave them undefined, so the output is checked for their names).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { resolve } from 'node:path';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient } from '../../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { spawnTestStack, type TestStack } from '../support/test-stack';
import { loadTarget } from './support/target';

const target = loadTarget();
const ROOT = resolve(__dirname, '../..');
const PACKAGE_DIR = resolve(ROOT, 'client/python');
/** The stack's start (DynamoDB Local's JVM first): generous, for a loaded machine. */
const STACK_READY_MS = 180_000;
/** The whole Python run: a few task waits at most, each bounded by the target's poll budget. */
const RUN_LIMIT_MS = 4 * target.pollTimeoutMs;
const TABLE_NAME = 'generation-service-e2e-python';
const USER = 'e2e-python';

interface PythonRun {
  code: number | null;
  output: string;
}

/** python3's version, or why it cannot run the client (3.10 or newer is needed). */
function pythonProblem(): string | undefined {
  const probe = spawnSync('python3', ['-c', 'import sys; print(sys.version_info >= (3, 10), sys.version)'], {
    encoding: 'utf8',
  });
  if (probe.error) {
    return `The Python client tests need python3 (3.10 or newer) on PATH, and running it failed: ${probe.error.message}. Install it, e.g. sudo apt-get install -y python3`;
  }
  if (!probe.stdout.startsWith('True'))
    return `The Python client needs Python 3.10 or newer; python3 is ${probe.stdout}`;
  return undefined;
}

function runPython(env: Record<string, string>): Promise<PythonRun> {
  return new Promise((done) => {
    const child = spawn('python3', ['-m', 'unittest', '-v'], {
      cwd: PACKAGE_DIR,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const limit = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
    child.on('close', (code) => {
      clearTimeout(limit);
      done({ code, output });
    });
  });
}

/** A port held by a placeholder server until the Python receiver takes it over. */
async function holdPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const holder: Server = createServer();
  await new Promise<void>((ready) => holder.listen(0, '127.0.0.1', () => ready()));
  const address = holder.address();
  if (address === null || typeof address === 'string') throw new Error('no port from listen(0)');
  return { port: address.port, release: () => new Promise((closed) => holder.close(() => closed())) };
}

describe('the Python client', () => {
  let capped: TestStack | undefined;
  let cappedEnv: Record<string, string> = {};
  let release: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    if (!target.runs('webhooks') || pythonProblem()) return;
    const held = await holdPort();
    release = held.release;
    const settings = {
      TABLE_NAME,
      WEBHOOK_INSECURE_ORIGINS: `http://127.0.0.1:${held.port}`,
      WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64url'),
      PROVIDER_MAX_IN_FLIGHT: '1',
      PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
      SWEEPER_INTERVAL_SECONDS: '1',
      DYNAMODB_ENDPOINT: '',
      API_STAGE: '',
    };
    capped = await spawnTestStack({ readyTimeoutMs: STACK_READY_MS, env: settings });
    const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: capped.dynamodbEndpoint });
    let apiKey: string;
    try {
      const store = { doc, tableName: TABLE_NAME };
      await grantCredits(store, { userId: USER, amount: 100, grantId: USER });
      apiKey = (await putApiKey(store, { userId: USER, name: 'e2e python' })).apiKey;
    } finally {
      doc.destroy();
    }
    // The signing secret as an operator gets it: printed once by the CLI.
    const { DYNAMODB_PORT: _p, DATA_DIR: _d, ...rest } = process.env;
    const operatorEnv = { ...rest, ...settings, DYNAMODB_ENDPOINT: capped.dynamodbEndpoint };
    const made = await new Promise<string>((done, fail) =>
      execFile(
        process.execPath,
        [resolve(ROOT, 'bin/run-admin.cjs'), 'webhooks', 'secret', '--user', USER],
        { cwd: ROOT, env: operatorEnv },
        (error, stdout, stderr) => (error ? fail(new Error(`webhooks secret failed: ${stderr}`)) : done(stdout)),
      ),
    );
    cappedEnv = {
      GENERATION_CAPPED_API_URL: capped.baseUrl,
      GENERATION_CAPPED_API_KEY: apiKey,
      GENERATION_WEBHOOK_SECRET: String((JSON.parse(made) as { secret: string }).secret),
      GENERATION_WEBHOOK_PORT: String(held.port),
    };
  }, STACK_READY_MS + 60_000);

  afterAll(async () => {
    await release?.();
    await capped?.stop();
  });

  test(
    'python3 -m unittest passes: the OpenAPI check, retries, webhook signatures, and the service end to end',
    async () => {
      // Prepare
      const problem = pythonProblem();
      if (problem) throw new Error(problem);
      const env: Record<string, string> = {
        ...cappedEnv,
        GENERATION_WAIT_SECONDS: String(target.pollTimeoutMs / 1000),
      };
      if (target.runs('taskLoops')) {
        env.GENERATION_API_URL = target.baseUrl;
        env.GENERATION_API_KEY = target.key('main').apiKey;
      }
      // The receiver binds the port only once the placeholder lets go of it.
      await release?.();
      release = undefined;

      // Act
      const run = await runPython(env);

      // Assert
      expect({ code: run.code, output: run.output }).toEqual({ code: 0, output: expect.stringMatching(/\nOK\b/) });
      const ran = (name: string) => run.output.includes(`${name} (tests.`);
      expect(ran('test_every_operation_of_the_document_has_a_method_or_a_reason_why_not')).toBe(true);
      expect(ran('test_signs_as_the_specifications_library_does')).toBe(true);
      if (target.runs('taskLoops')) {
        expect(ran('test_an_image_task_to_completion')).toBe(true);
        expect(ran('test_an_upload_from_a_file_used_by_an_edit')).toBe(true);
      }
      if (target.runs('webhooks')) {
        expect(ran('test_a_real_delivery_verifies_with_the_accounts_secret')).toBe(true);
        expect(ran('test_cancel_a_queued_task_refunded_and_a_started_one_is_a_409')).toBe(true);
      }
    },
    RUN_LIMIT_MS + 30_000,
  );
});
