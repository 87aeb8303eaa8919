/**
 * The bundles Lambda runs, not the TypeScript source: each function is built with the construct's
 * esbuild options and its `handler` driven through a whole task on real parts, each invocation in a
 * fresh Node process as in a Lambda container (jest's module sandbox cannot run the bundles' dynamic
 * `import('node:http')`, which plain Node runs fine). Catches what only bundling can break.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { build } from 'esbuild';
import { BUNDLE_OPTIONS } from '../../lib/bundle-options';
import { AUTHORIZER, type LambdaDefinition, ROUTES, SWEEPER } from '../../lib/routes';
import {
  type ApiAnswer,
  getTaskEvent,
  imageRequest,
  jestTimeoutFor,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  submitEvent,
  TASK_END_BUDGET_MS,
} from '../support/service-harness';

// esbuild bundles every handler in beforeAll, each GET is a new Node process, and the task's end (the
// media worker on the stream) is waited for on the wall-clock budget of a loaded machine.
jest.setTimeout(jestTimeoutFor());

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);

/** Invokes a bundle's handler once in a new Node process, with the environment the stack would set. */
async function invokeBundle<T = Record<string, unknown>>(
  file: string,
  event: APIGatewayProxyEvent,
  env: Readonly<Record<string, string>>,
): Promise<ApiAnswer<T>> {
  const driver = `require(process.argv[1]).handler(JSON.parse(process.argv[2]), { awsRequestId: 'bundle-test', getRemainingTimeInMillis: () => 29000 })
    .then((result) => process.stdout.write(JSON.stringify(result)))`;
  const { stdout } = await run(process.execPath, ['-e', driver, file, JSON.stringify(event)], {
    env: { ...process.env, ...env, METRICS: 'off', LOG_LEVEL: 'error' },
  });
  const result = JSON.parse(stdout) as { statusCode: number; headers?: Record<string, string>; body: string };
  return {
    statusCode: result.statusCode,
    headers: result.headers ?? {},
    rawBody: result.body,
    body: JSON.parse(result.body) as T,
  };
}

/**
 * Builds every handler in one esbuild run (one entry point each), as the construct builds each alone.
 * One run parses the shared modules once: beside a second copy of the suite (load 16), forty separate
 * builds outlasted the 180 s hook budget in both copies.
 */
async function bundleAll(definitions: readonly LambdaDefinition[], outdir: string): Promise<Map<string, string>> {
  await build({
    entryPoints: Object.fromEntries(definitions.map((definition) => [definition.name, join(ROOT, definition.entry)])),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outdir,
    outExtension: { '.js': '.cjs' },
    logLevel: 'error',
    ...BUNDLE_OPTIONS,
    mainFields: [...BUNDLE_OPTIONS.mainFields],
  });
  return new Map(definitions.map((definition) => [definition.name, join(outdir, `${definition.name}.cjs`)]));
}

describe('the bundled Lambda handlers', () => {
  let harness: ServiceHarness;
  let outdir: string;
  let bundles = new Map<string, string>();

  beforeAll(async () => {
    harness = await startServiceHarness({ refreshIntervalSeconds: 1 });
    outdir = await mkdtemp(join(tmpdir(), 'bundles-'));
    bundles = await bundleAll([...ROUTES, AUTHORIZER, SWEEPER], outdir);
  });

  afterAll(async () => {
    await harness.dispose();
    await rm(outdir, { recursive: true, force: true });
  });

  test('every bundle exports a handler function', async () => {
    // Prepare
    const names = [...ROUTES, AUTHORIZER, SWEEPER].map((definition) => definition.name);

    // Act
    const kinds = await Promise.all(
      names.map(async (name) => {
        const { stdout } = await run(process.execPath, [
          '-e',
          'process.stdout.write(typeof require(process.argv[1]).handler)',
          bundles.get(name) ?? '',
        ]);
        return stdout;
      }),
    );

    // Assert
    expect(kinds).toEqual(names.map(() => 'function'));
  });

  test('submit and get, bundled, take a task to completion on DynamoDB Local and the mock provider', async () => {
    // Prepare
    const user = await harness.createUser(10);
    const submit = bundles.get('submit-image') ?? '';
    const get = bundles.get('get-task') ?? '';

    // Act
    const accepted = await invokeBundle<{ taskId: string }>(
      submit,
      submitEvent('image', user, imageRequest({ mockDelayMs: 50 })),
      harness.env,
    );
    let task = await invokeBundle<{ status: number; imageUrls?: string[] }>(
      get,
      getTaskEvent(user, accepted.body.taskId),
      harness.env,
    );
    // Until the task ends, or the budget passes: each read is a new Node process, slow on a busy machine.
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    while (task.body.status === 0 && Date.now() < deadline) {
      await sleep(500);
      task = await invokeBundle(get, getTaskEvent(user, accepted.body.taskId), harness.env);
    }

    // Assert
    expect(accepted.statusCode).toBe(202);
    expect(task.statusCode).toBe(200);
    expect(task.body.status).toBe(1);
    expect(task.body.imageUrls).toHaveLength(1);
  });

  test('the bundled submit maps a validation failure to 400 with details', async () => {
    // Prepare
    const user = await harness.createUser(10);
    const submit = bundles.get('submit-image') ?? '';

    // Act
    const answer = await invokeBundle<{ error: string; details: { fieldErrors: Record<string, string[]> } }>(
      submit,
      submitEvent('image', user, { model: 'image-model-9', prompt: 'x' }),
      harness.env,
    );

    // Assert
    expect(answer.statusCode).toBe(400);
    expect(answer.body.error).toBe('Invalid request');
    expect(Object.keys(answer.body.details.fieldErrors)).toContain('model');
  });
});
