/**
 * Waiting on a read (`GET /api/ai/tasks/{id}?wait=N`) and the start estimate of a queued task
 * (`estimatedStartAt`), through the real handlers, DynamoDB Local, the dispatcher loop, the media worker
 * and the mock provider over HTTP. No durations are asserted: each test waits for the state it checks.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { handler as getTask } from '../../functions/get-task/handler';
import { storeFromEnv } from '../../functions/store/from-env';
import { handler as submitImage } from '../../functions/submit-image/handler';
import {
  getTaskEvent,
  imageRequest,
  invoke,
  jestTimeoutFor,
  type ServiceHarness,
  startServiceHarness,
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
} from '../support/service-harness';

/** A task the mock keeps running for an hour: it never ends while the file runs. */
const RUNS_ON = { mockDelayMs: 3_600_000 };

function waitEvent(user: TestUser, taskId: string, wait: string): APIGatewayProxyEvent {
  return { ...getTaskEvent(user, taskId), queryStringParameters: { wait } };
}

let h: ServiceHarness;

beforeAll(async () => {
  h = await startServiceHarness({ maxPendingSeconds: 86_400 });
});

afterAll(async () => {
  await h.dispose();
});

describe('GET /api/ai/tasks/{id}?wait=N', () => {
  let user: TestUser;
  /** A task that runs for the whole file, read with bad waits. */
  let running: string;

  beforeAll(async () => {
    user = await h.createUser(1_000);
    running = await submit(RUNS_ON);
  });

  async function submit(providerInput: Record<string, unknown>, owner = user): Promise<string> {
    const answer = await invoke(submitImage, submitEvent('image', owner, imageRequest(providerInput)));
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  test(
    'answers with the ended task, its result URLs and no start estimate, once the task ends',
    async () => {
      // Prepare
      const taskId = await submit({ mockDelayMs: 300 });

      // Act: each request waits up to 20 s; on a loaded machine the task may need more than one.
      const deadline = Date.now() + TASK_END_BUDGET_MS;
      let answer = await invoke(getTask, waitEvent(user, taskId, '20'));
      while (answer.statusCode === 200 && answer.body.status === 0 && Date.now() < deadline) {
        answer = await invoke(getTask, waitEvent(user, taskId, '20'));
      }

      // Assert
      expect(answer.statusCode).toBe(200);
      expect(answer.body).toMatchObject({ taskId, status: 1, creditsUsed: 3, creditsRefunded: false });
      expect(answer.body.imageUrls).toEqual([expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/media\//)]);
      expect(answer.body).not.toHaveProperty('stage');
      expect(answer.body).not.toHaveProperty('estimatedStartAt');
    },
    jestTimeoutFor(1),
  );

  test('answers with the pending task as it is after N seconds when it does not end', async () => {
    // Prepare: sent and running at the provider
    const taskId = running;
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    let read = await invoke(getTask, getTaskEvent(user, taskId));
    while (read.body.stage !== 'running' && Date.now() < deadline)
      read = await invoke(getTask, getTaskEvent(user, taskId));

    // Act
    const answer = await invoke(getTask, waitEvent(user, taskId, '1'));

    // Assert
    expect(answer.statusCode).toBe(200);
    expect(answer.body).toMatchObject({ taskId, status: 0, stage: 'running' });
    expect(answer.body).not.toHaveProperty('estimatedStartAt');
    expect(answer.body).not.toHaveProperty('imageUrls');
  });

  test('a wait of N seconds reads the task at most 2N + 1 times (the documented 2 reads a second)', async () => {
    // Prepare: the running task; every GetItem of it through the handlers' client is counted.
    const taskId = running;
    const waitSeconds = 5;
    const stack = storeFromEnv().doc.middlewareStack as unknown as DynamoDBClient['middlewareStack'];
    let reads = 0;
    stack.add(
      (next, context) => async (args) => {
        // The document client's GetCommand reaches the client's stack as GetItemCommand, its key marshalled.
        const key = JSON.stringify((args.input as { Key?: unknown }).Key ?? null);
        if (/^Get(Item)?Command$/.test(context.commandName ?? '') && key.includes(`TASK#${taskId}`)) reads++;
        return next(args);
      },
      { step: 'initialize', name: 'countTaskReads' },
    );

    // Act
    let answer: Awaited<ReturnType<typeof invoke>>;
    try {
      answer = await invoke(getTask, waitEvent(user, taskId, String(waitSeconds)));
    } finally {
      stack.remove('countTaskReads');
    }

    // Assert: it watched the record (more than one read), within the bound.
    expect(answer.body).toMatchObject({ taskId, status: 0 });
    expect(reads).toBeGreaterThan(1);
    expect(reads).toBeLessThanOrEqual(2 * waitSeconds + 1);
  });

  test.each(['0', '21', '-1', '1.5', 'abc', '', '1e1', '020000'])(
    'wait=%p is a 400 naming the parameter',
    async (wait) => {
      // Prepare
      const taskId = await submit(RUNS_ON);

      // Act
      const answer = await invoke(getTask, waitEvent(user, taskId, wait));

      // Assert
      expect(answer.statusCode).toBe(400);
      expect(answer.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: { 'query.wait': ['Must be a whole number of seconds from 1 to 20'] }, formErrors: [] },
      });
    },
  );

  test("another owner's task is a 404 with a wait too, answered without waiting for it", async () => {
    // Prepare
    const other = await h.createUser(10);

    // Act
    const answer = await invoke(getTask, waitEvent(other, running, '20'));

    // Assert
    expect(answer.statusCode).toBe(404);
    expect(answer.body).toEqual({ error: 'Task not found' });
  });
});

describe('estimatedStartAt', () => {
  test(
    'a burst across two accounts: every queued task has one, each account in order, turns taken',
    async () => {
      // Prepare: nothing is sent while the burst is read; the upstream takes 2 creates per 10 s.
      const [a, b] = [await h.createUser(100), await h.createUser(100)];
      const readAll = async (owner: TestUser, ids: string[]) =>
        Promise.all(ids.map(async (id) => (await invoke(getTask, getTaskEvent(owner, id))).body));
      const { ofA, ofB, before } = await h.withoutDispatcher(() =>
        h.withEnv({ PROVIDER_CREATE_RATE_LIMIT: '2/10' }, async () => {
          const submitOf = async (owner: TestUser) =>
            String((await invoke(submitImage, submitEvent('image', owner, imageRequest(RUNS_ON)))).body.taskId);
          const idsA: string[] = [];
          for (let i = 0; i < 4; i++) idsA.push(await submitOf(a));
          const idsB = [await submitOf(b), await submitOf(b)];
          const before = Date.now();
          // Act
          return { ofA: await readAll(a, idsA), ofB: await readAll(b, idsB), before };
        }),
      );

      // Assert
      const at = (task: Record<string, unknown>) => Date.parse(String(task.estimatedStartAt));
      for (const task of [...ofA, ...ofB]) {
        expect(task).toMatchObject({ status: 0, stage: 'queued' });
        expect(at(task)).toBeGreaterThanOrEqual(before - 1_000);
      }
      expect(ofA.map((task) => task.queuedAhead)).toEqual([0, 1, 2, 3]);
      const [a0, a1, a2, a3] = ofA.map(at) as [number, number, number, number];
      const [b0, b1] = ofB.map(at) as [number, number];
      expect(a0).toBeLessThan(a1);
      expect(a1).toBeLessThan(a2);
      expect(a2).toBeLessThan(a3);
      expect(b0).toBeLessThan(b1);
      // Turns: B's second task comes before A's third, and A's last comes after every B task.
      expect(b1).toBeLessThan(a2);
      expect(a3).toBeGreaterThan(b1);
      // At 5 s a send, A's fourth task waits for its own three and B's two: about 25 s.
      expect(a3 - a0).toBeGreaterThanOrEqual(20_000);
    },
    jestTimeoutFor(1),
  );
});
