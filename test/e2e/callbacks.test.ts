/**
 * Provider callbacks over HTTP. On the suite's target: a dropped callback still completes by polling,
 * and a forged one is refused and changes nothing. On a second local stack of this file's own, with
 * polling and the sweeper made useless (an hour apart), only a callback can finish a task: the test
 * submits and never polls, then reads the task once the provider's callback came in.
 */
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient } from '../../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { spawnTestStack, type TestStack } from '../support/test-stack';
import { createApi, IMAGE_PATH, taskPath } from './support/api';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits for one state of the callbacks-only stack, on the wall clock: generous, for a loaded machine. */
const WAIT_MS = 120_000;
/** The stack's start (DynamoDB Local's JVM first): generous, for a loaded machine. */
const STACK_READY_MS = 180_000;

if (target.runs('providerCallbacks')) {
  test.concurrent(
    'a dropped callback: the task still completes by polling',
    async () => {
      // Prepare / Act
      const submitted = await api.submit(IMAGE_PATH, {
        model: 'image-model-1',
        prompt: 'nobody calls back',
        providerInput: { mockDelayMs: 300, mockCallback: 'drop' },
      });
      const task = await api.pollUntilDone(submitted.taskId);

      // Assert
      expect(task.status).toBe(1);
      expect(task.imageUrls).toHaveLength(1);
    },
    target.pollTimeoutMs + 10_000,
  );

  test.concurrent('a forged callback gets 404 and leaves the task as it was', async () => {
    // Prepare: a task the provider never finishes while the test runs (the stack's maximum age may end
    // it on a loaded machine: TIMEOUT, which no callback causes)
    const submitted = await api.submit(IMAGE_PATH, {
      model: 'image-model-1',
      prompt: 'forge me',
      providerInput: { mockDelayMs: 3_600_000, mockCallback: 'drop' },
    });
    const path = `/api/provider/callbacks/${encodeURIComponent(submitted.taskId)}`;
    const lie = { code: 200, data: { state: 'success', resultJson: '{"resultUrls":["https://example.com/x.png"]}' } };

    // Act
    const forged = await api.request(`${path}?u=e2e-main&sig=${'A'.repeat(43)}`, { json: lie });
    const unsigned = await api.request(path, { json: lie });
    const task = await api.getTask(submitted.taskId);

    // Assert
    expect(forged.status).toBe(404);
    expect(forged.body).toEqual({ error: 'Task not found' });
    expect(unsigned.status).toBe(404);
    // Still pending, or ended by the product's maximum age; never completed by the forged success.
    expect({ status: task.status, errorCode: task.errorCode }).toEqual(
      task.status === 0 ? { status: 0, errorCode: undefined } : { status: 2, errorCode: 'TIMEOUT' },
    );
    expect(task.imageUrls).toBeUndefined();
  });
}

if (target.runs('callbackCompletes')) {
  describe('on a stack where only callbacks can finish a task', () => {
    let quiet: TestStack;
    let apiKey: string;
    const TABLE_NAME = 'generation-service-e2e-callbacks';

    beforeAll(async () => {
      quiet = await spawnTestStack({
        readyTimeoutMs: STACK_READY_MS,
        env: {
          TABLE_NAME,
          PROVIDER_REFRESH_INTERVAL_SECONDS: '3600',
          SWEEPER_INTERVAL_SECONDS: '3600',
          API_STAGE: '',
        },
      });
      const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: quiet.dynamodbEndpoint });
      const store = { doc, tableName: TABLE_NAME };
      try {
        await grantCredits(store, { userId: 'e2e-callbacks', amount: 100, grantId: 'e2e-callbacks' });
        apiKey = (await putApiKey(store, { userId: 'e2e-callbacks', name: 'e2e callbacks' })).apiKey;
      } finally {
        doc.destroy();
      }
    }, STACK_READY_MS + 60_000);

    afterAll(async () => {
      await quiet?.stop();
    });

    async function request(path: string, init: RequestInit = {}) {
      const response = await fetch(`${quiet.baseUrl}${path}`, {
        ...init,
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    }

    /**
     * GETs the task (which cannot refresh it here: the interval is an hour) until it ends, or WAIT_MS of
     * wall clock passed; the caller asserts on the last answer.
     */
    async function readUntilEnded(taskId: string) {
      const deadline = Date.now() + WAIT_MS;
      let task = await request(taskPath(taskId));
      while (task.body.status === 0 && Date.now() < deadline) {
        await sleep(250);
        task = await request(taskPath(taskId));
      }
      return task;
    }

    const submit = (providerInput: Record<string, unknown>) =>
      request(IMAGE_PATH, {
        method: 'POST',
        body: JSON.stringify({ model: 'image-model-1', prompt: 'call me back', providerInput }),
      });

    test(
      'the task completes by the callback, with polling unable to',
      async () => {
        // Prepare: the dropped one first, and done sooner: by the time the other's callback came, the
        // mock had ended the dropped one well before (and would have called back for it)
        const dropped = await submit({ mockDelayMs: 300, mockCallback: 'drop' });
        const called = await submit({ mockDelayMs: 2000 });

        // Act
        const completed = await readUntilEnded(String(called.body.taskId));
        const stillPending = await request(taskPath(String(dropped.body.taskId)));

        // Assert: only the task whose callback came in moved
        expect([called.status, dropped.status]).toEqual([202, 202]);
        expect(completed.body).toMatchObject({ status: 1, imageUrls: [expect.any(String)] });
        expect(stillPending.body).toMatchObject({ status: 0 });
      },
      WAIT_MS + 60_000,
    );
  });
}
