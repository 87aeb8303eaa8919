/**
 * Provider callbacks over real HTTP: the mock provider calls the callback route of a real local
 * gateway when a task ends, and the route's handler reads the task at the provider and completes it.
 * Polling is made useless here (a refresh interval of an hour, no sweeper), so only a callback can
 * finish a task; a callback is a hint, bounded per task, and a forged one does nothing.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callbackSignature } from '../../functions/core/callback-signature';
import type { TaskRecord } from '../../functions/core/task';
import {
  environmentOf,
  PROVIDER_CALLBACK_BASE_URL,
  PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS,
  PROVIDER_CALLBACK_SECRET,
  setting,
} from '../../functions/environment/environment';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { handler as providerCallback } from '../../functions/provider-callback/handler';
import { resetLifecycleFromEnv } from '../../functions/runtime/lifecycle-from-env';
import { auditUser } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { ROUTES } from '../../lib/routes';
import { createGateway, type ProxyHandler } from '../../local/gateway';
import {
  getTaskEvent,
  IMAGE_COST,
  imageRequest,
  invoke,
  jestTimeoutFor,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  storedWhenEnded,
  storedWhenSent,
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
} from '../support/service-harness';

// Waits for callbacks and the media worker on the wall-clock budget of a loaded machine.
jest.setTimeout(jestTimeoutFor());

const HOUR_SECONDS = 3600;
/** The mock's delay for the early-callback task; its lying callback comes at half of it. */
const EARLY_DELAY_MS = 8000;
const SECRET = randomBytes(32).toString('base64url');
const CALLBACK_ROUTE = ROUTES.find((route) => route.name === 'provider-callback');

describe('provider callbacks', () => {
  let h: ServiceHarness;
  let gateway: Server;
  let gatewayUrl: string;

  beforeAll(async () => {
    h = await startServiceHarness({ refreshIntervalSeconds: HOUR_SECONDS });
    if (!CALLBACK_ROUTE) throw new Error('no provider-callback route in lib/routes.ts');
    gateway = createServer(
      createGateway({
        routes: [{ route: CALLBACK_ROUTE, handler: providerCallback as unknown as ProxyHandler }],
        authorizer: async () => {
          throw new Error('the callback route has no authorizer');
        },
        authorizerCacheTtlSeconds: 0,
      }),
    );
    await new Promise<void>((ready) => gateway.listen(0, '127.0.0.1', () => ready()));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    Object.assign(
      process.env,
      environmentOf(
        setting(PROVIDER_CALLBACK_BASE_URL, gatewayUrl),
        setting(PROVIDER_CALLBACK_SECRET, SECRET),
        // One callback read per task for the whole test: a flood must not read more than once.
        setting(PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS, HOUR_SECONDS),
      ),
    );
    resetLifecycleFromEnv();
  });

  afterAll(async () => {
    for (const variable of [
      PROVIDER_CALLBACK_BASE_URL,
      PROVIDER_CALLBACK_SECRET,
      PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS,
    ]) {
      delete process.env[variable.name];
    }
    await new Promise<void>((closed) => {
      gateway.close(() => closed());
      gateway.closeAllConnections();
    });
    await h.dispose();
  });

  async function submit(user: TestUser, providerInput: Record<string, unknown>): Promise<TaskRecord> {
    const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(providerInput)));
    expect(answer.statusCode).toBe(202);
    const stored = await storedWhenSent(h, user.userId, String(answer.body.taskId));
    if (!stored?.providerTaskId) throw new Error('the task did not reach the provider');
    return stored;
  }

  /**
   * Reads the stored task (no refresh: reading the table never moves a task) until `done` holds, or
   * {@link TASK_END_BUDGET_MS} of wall clock passed.
   */
  async function storedWhen(task: TaskRecord, done: (stored: TaskRecord) => boolean): Promise<TaskRecord> {
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    let stored = await getTask(h.store, task.userId, task.taskId);
    while (!(stored && done(stored)) && Date.now() < deadline) {
      await sleep(100);
      stored = await getTask(h.store, task.userId, task.taskId);
    }
    if (!stored) throw new Error('task vanished');
    return stored;
  }

  /**
   * Waits until the mock has sent `count` callbacks for the task (and got answers), or
   * {@link TASK_END_BUDGET_MS} of wall clock passed.
   */
  async function callbacksOf(task: TaskRecord, count: number) {
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    const of = () => h.provider.stats.callbacks.filter((sent) => sent.providerTaskId === task.providerTaskId);
    while (of().length < count && Date.now() < deadline) await sleep(100);
    return of();
  }

  function post(url: string, body = '{"code":200,"data":{"state":"success"}}') {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  }

  const callbackUrlOf = (userId: string, taskId: string, sig: string) =>
    `${gatewayUrl}/api/provider/callbacks/${encodeURIComponent(taskId)}?${new URLSearchParams({ u: userId, sig })}`;

  test('the callback completes a task nobody polls, with one provider read', async () => {
    // Prepare
    const user = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: 200 });

    // Act
    const stored = await storedWhen(task, (t) => t.status !== 0);

    // Assert
    expect(stored.status).toBe(1);
    expect(stored.resultKeys).toHaveLength(1);
    expect(await callbacksOf(task, 1)).toEqual([{ providerTaskId: task.providerTaskId, status: 200 }]);
    expect(h.provider.stats.getTaskCalls(task.providerTaskId ?? '')).toBe(1);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - IMAGE_COST });
  });

  test('a duplicated callback completes the task once and reads the provider once', async () => {
    // Prepare
    const user = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: 200, mockCallback: 'twice' });

    // Act
    const sent = await callbacksOf(task, 2);
    const stored = await storedWhen(task, (t) => t.status !== 0);

    // Assert
    expect(sent.map((callback) => callback.status)).toEqual([200, 200]);
    expect(stored.status).toBe(1);
    expect(h.provider.stats.getTaskCalls(task.providerTaskId ?? '')).toBe(1);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - IMAGE_COST });
  });

  test('a flood of valid callbacks costs one provider read', async () => {
    // Prepare: the provider never calls back by itself and is still generating
    const user = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: 60_000, mockCallback: 'drop' });
    const url = (await h.lifecycle(() => new Date()).callbacks?.urlFor(user.userId, task.taskId)) ?? '';

    // Act
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(url)));

    // Assert
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    expect(h.provider.stats.getTaskCalls(task.providerTaskId ?? '')).toBe(1);
    expect((await getTask(h.store, user.userId, task.taskId))?.status).toBe(0);
  });

  test('an early callback claiming success leaves the task pending; a poll finishes it later', async () => {
    // Prepare
    // The lying callback comes halfway through (4 s in), and the product's read of the provider must
    // come before the mock is done: a window wide enough for a loaded machine.
    const user = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: EARLY_DELAY_MS, mockCallback: 'early' });
    // The mock created the task before the submit answered: it is done by then plus its delay.
    const mockDoneBy = Date.now() + EARLY_DELAY_MS;

    // Act: the lying callback arrives halfway through
    const sent = await callbacksOf(task, 1);
    const afterCallback = await getTask(h.store, user.userId, task.taskId);

    // Assert: the provider was read (still generating) and the task did not move
    expect(sent).toEqual([{ providerTaskId: task.providerTaskId, status: 200 }]);
    expect(h.provider.stats.getTaskCalls(task.providerTaskId ?? '')).toBe(1);
    expect(afterCallback).toMatchObject({ status: 0 });
    expect(afterCallback?.resultKeys).toBeUndefined();

    // Act: polling still works once the mock is done (the clock moved past the refresh interval). The
    // wait is for the mock's own clock (its outcome comes mockDelayMs after creation), not the product's.
    await sleep(Math.max(0, mockDoneBy - Date.now()));
    const later = () => new Date(Date.now() + HOUR_SECONDS * 1000 + 1000);
    const polled = await h.withClock(later, () => invoke(getTaskHandler, getTaskEvent(user, task.taskId)));

    // Assert: the poll found the results ready; the media worker completes the task
    expect(polled.statusCode).toBe(200);
    expect((await storedWhenEnded(h, user.userId, task.taskId))?.status).toBe(1);
  });

  test('a dropped callback leaves the task to polling, which completes it', async () => {
    // Prepare
    const user = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: 100, mockCallback: 'drop' });
    // The mock's own clock: its outcome (and the callback it drops) comes 100 ms after creation.
    await sleep(300);

    // Act
    const before = await getTask(h.store, user.userId, task.taskId);
    const later = () => new Date(Date.now() + HOUR_SECONDS * 1000 + 1000);
    const polled = await h.withClock(later, () => invoke(getTaskHandler, getTaskEvent(user, task.taskId)));

    // Assert
    expect(before?.status).toBe(0);
    expect(await callbacksOf(task, 0)).toEqual([]);
    expect(polled.statusCode).toBe(200);
    expect((await storedWhenEnded(h, user.userId, task.taskId))?.status).toBe(1);
  });

  test('forged, missing or misdirected signatures and unknown tasks get 404 and no work', async () => {
    // Prepare: a finished task at the provider that nobody has looked at yet
    const user = await h.createUser(100);
    const other = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: 0, mockCallback: 'drop' });
    const forged = callbackSignature(randomBytes(32).toString('base64url'), user.userId, task.taskId);
    const signedForOther = callbackSignature(SECRET, other.userId, task.taskId);
    const unknownTask = 'no-such-task';
    const attempts = [
      callbackUrlOf(user.userId, task.taskId, forged),
      callbackUrlOf(other.userId, task.taskId, signedForOther),
      callbackUrlOf(user.userId, task.taskId, ''),
      callbackUrlOf(user.userId, task.taskId, `${callbackSignature(SECRET, user.userId, task.taskId)}x`),
      `${gatewayUrl}/api/provider/callbacks/${task.taskId}`,
      callbackUrlOf(user.userId, unknownTask, callbackSignature(SECRET, user.userId, unknownTask)),
    ];

    // Act
    const answers = await Promise.all(attempts.map((url) => post(url)));
    const bodies = await Promise.all(answers.map((answer) => answer.json() as Promise<unknown>));

    // Assert
    expect(answers.map((answer) => answer.status)).toEqual(Array(attempts.length).fill(404));
    expect(bodies).toEqual(Array(attempts.length).fill({ error: 'Task not found' }));
    expect(h.provider.stats.getTaskCalls(task.providerTaskId ?? '')).toBe(0);
    expect(await getTask(h.store, user.userId, task.taskId)).toEqual(task);
  });

  test('a callback for a task that already ended does no provider read', async () => {
    // Prepare
    const user = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: 100 });
    await storedWhen(task, (t) => t.status !== 0);
    const reads = h.provider.stats.getTaskCalls(task.providerTaskId ?? '');
    const url = (await h.lifecycle(() => new Date()).callbacks?.urlFor(user.userId, task.taskId)) ?? '';

    // Act
    const answer = await post(url);

    // Assert
    expect(answer.status).toBe(200);
    expect(h.provider.stats.getTaskCalls(task.providerTaskId ?? '')).toBe(reads);
  });

  test('a callback delayed past the end (mockCallbackDelayMs) has not come while the task waits', async () => {
    // Prepare: the mock finishes at once but calls back only a minute later
    const user = await h.createUser(100);
    const task = await submit(user, { mockDelayMs: 0, mockCallbackDelayMs: 60_000 });
    // A task submitted after it that also ends at once and calls back without delay: once its callback
    // came, the delayed one would have come too, had the mock sent it at the end.
    const witness = await submit(user, { mockDelayMs: 0 });

    // Act
    const witnessCallbacks = await callbacksOf(witness, 1);
    const stored = await getTask(h.store, user.userId, task.taskId);

    // Assert: no callback yet, so (with polling an hour apart) nothing moved the task
    expect(witnessCallbacks).toEqual([{ providerTaskId: witness.providerTaskId, status: 200 }]);
    expect(h.provider.stats.callbacks.filter((sent) => sent.providerTaskId === task.providerTaskId)).toEqual([]);
    expect(stored?.status).toBe(0);
    expect(h.provider.stats.getTaskCalls(task.providerTaskId ?? '')).toBe(0);
  });
});
