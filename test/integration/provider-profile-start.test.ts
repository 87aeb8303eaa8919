/**
 * `npm start` with a provider profile: the real upstream's profile (kie) against the mock provider in
 * profile mode, which refuses what that upstream would refuse, completes a task for every model of the
 * catalog (every family, and image-model-1's edit variant); a broken profile stops the start with a
 * message naming the model and the field.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { IMAGE_MODEL_IDS, VIDEO_MODEL_IDS, type VideoModelId, videoModel } from '../../functions/core/catalog';
import { KIE_PROFILE } from '../../functions/core/profiles';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient } from '../../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { freePorts } from '../../local/spawn-local-stack';
import { spawnTestStack, type TestStack } from '../support/test-stack';

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);
const REFERENCE = 'https://images.example.com/ref.png';
/** Fast outcomes, so the whole catalog completes in seconds. */
const FAST = { mockDelayMs: 100 };
/** A task's end on the spawned stack (its media worker on the stream), on the wall clock of a loaded machine. */
const TASK_WAIT_MS = 120_000;
/** Jest's limit for a test that waits for one task's end, with room for the rest. */
const TASK_TEST_TIMEOUT_MS = TASK_WAIT_MS + 60_000;

interface Task {
  taskId: string;
  status: number;
  imageUrls?: string[];
  videoUrl?: string;
  errorCode?: string;
  errorMessage?: string;
}

describe('npm start with PROVIDER_PROFILE=kie', () => {
  let stack: TestStack;
  let headers: Record<string, string>;
  let doc: ReturnType<typeof createDocumentClient>;

  beforeAll(async () => {
    stack = await spawnTestStack({
      env: { PROVIDER_PROFILE: 'kie', DATA_DIR: ':memory:', PROVIDER_REFRESH_INTERVAL_SECONDS: '1' },
    });
    doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
    const store = { doc, tableName: stack.tableName };
    await grantCredits(store, { userId: 'kie-user', amount: 100_000 });
    const { apiKey } = await putApiKey(store, { userId: 'kie-user', name: 'kie' });
    headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  }, 240_000); // the stack's start (spawnLocalStack waits up to 180 s on a loaded machine)

  afterAll(async () => {
    doc?.destroy();
    await stack?.stop();
  });

  async function submit(kind: 'image' | 'video', body: Record<string, unknown>): Promise<Task> {
    const response = await fetch(`${stack.baseUrl}/api/ai/${kind}/generate`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as Task;
    if (response.status !== 202)
      throw new Error(`submit ${JSON.stringify(body)}: ${response.status} ${JSON.stringify(answer)}`);
    return answer;
  }

  /** Polls until the task leaves status 0, or TASK_WAIT_MS of wall clock passed (then throws). */
  async function settled(taskId: string): Promise<Task> {
    const deadline = Date.now() + TASK_WAIT_MS;
    for (;;) {
      const task = (await (await fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}`, { headers })).json()) as Task;
      if (task.status !== 0) return task;
      if (Date.now() > deadline) throw new Error(`task ${taskId} still pending after ${TASK_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  const imageCases = [
    ...IMAGE_MODEL_IDS.map((model) => ({
      model,
      body: { model, prompt: 'a lighthouse at dusk', providerInput: FAST },
    })),
    {
      model: 'image-model-1 (edit)',
      body: { model: 'image-model-1', prompt: 'the same, at night', inputImageUrls: [REFERENCE], providerInput: FAST },
    },
  ];

  test.each(imageCases)(
    '$model completes with one image',
    async ({ body }) => {
      // Act
      const task = await settled((await submit('image', body)).taskId);

      // Assert
      expect(task).toMatchObject({ status: 1, imageUrls: [expect.any(String)] });
    },
    TASK_TEST_TIMEOUT_MS,
  );

  const videoCases = VIDEO_MODEL_IDS.map((model: VideoModelId) => {
    const mode = videoModel(model).inputModes[0];
    return {
      model,
      family: videoModel(model).family,
      body: {
        model,
        prompt: 'waves at night',
        inputMode: mode,
        ...(mode === 'image_to_video' ? { inputImageUrls: [REFERENCE] } : {}),
        duration: videoModel(model).durations.at(-1),
        providerInput: FAST,
      },
    };
  });

  test.each(videoCases)(
    '$model (family $family) completes with a video at its longest duration',
    async ({ body }) => {
      // Act
      const task = await settled((await submit('video', body)).taskId);

      // Assert
      expect(task).toMatchObject({ status: 1, videoUrl: expect.any(String) });
    },
    TASK_TEST_TIMEOUT_MS,
  );

  test(
    'an option the upstream does not take is refused by the profiled mock and refunded',
    async () => {
      // Act
      const answer = await submit('image', { model: 'image-model-2', prompt: 'x', providerInput: { style: 'noir' } });
      const task = await settled(answer.taskId);

      // Assert
      expect(task).toMatchObject({ status: 2, errorCode: 'PROVIDER_REJECTED' });
      expect(task.errorMessage).toMatch(/input\.style is not a parameter of nano-banana-pro/);
    },
    TASK_TEST_TIMEOUT_MS,
  );

  test('more than one image where the upstream makes one per task is a 400, nothing charged', async () => {
    // Act
    const response = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'image-model-1', prompt: 'x', numOutputs: 2 }),
    });

    // Assert
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      details: {
        fieldErrors: { numOutputs: ['Must be 1 for image-model-1: its provider (kie) makes one image per task'] },
      },
    });
  });
});

describe('npm start with a broken profile', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'broken-profile-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('refuses to start, naming the model and the field, and exits 1', async () => {
    // Prepare
    const broken = JSON.parse(JSON.stringify(KIE_PROFILE)) as { name: string; models: Record<string, unknown> };
    broken.name = 'broken';
    delete broken.models['video-c/02-text-to-video-pro'];
    (broken.models['image-model-4'] as { input: Record<string, unknown> }).input.aspectRatio = {
      key: 'image_size',
      values: { '1:1': 'square_hd' },
    };
    const file = join(dir, 'broken.json');
    await writeFile(file, JSON.stringify(broken));
    const [port, dynamodbPort, mockPort, oidcPort] = await freePorts(4);
    let failure: { code?: number; stderr?: string } = {};

    // Act
    try {
      await run(process.execPath, ['bin/run-ts.cjs', 'local/start.ts'], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATA_DIR: ':memory:',
          PROVIDER_PROFILE: file,
          PORT: String(port),
          DYNAMODB_PORT: String(dynamodbPort),
          MOCK_PROVIDER_PORT: String(mockPort),
          OIDC_PROVIDER_PORT: String(oidcPort),
        },
        timeout: 120_000,
      });
    } catch (error) {
      failure = error as { code?: number; stderr?: string };
    }

    // Assert
    expect(failure.code).toBe(1);
    expect(failure.stderr).toMatch(/npm start failed: PROVIDER_PROFILE: Provider profile "broken" is invalid:/);
    expect(failure.stderr).toMatch(/video-c\/02-text-to-video-pro: \(mapping\): missing/);
    expect(failure.stderr).toMatch(/image-model-4: input\.aspectRatio\.values: no provider token for "16:9"/);
  }, 180_000);
});
