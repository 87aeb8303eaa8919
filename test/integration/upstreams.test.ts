/**
 * More than one upstream (docs/guides/upstreams.md) on real parts: DynamoDB Local, the real submit, GET
 * and callback handlers, the dispatcher's loop, and three mock upstreams over HTTP, each enforcing its
 * own limits. What is asserted is where each task went, what each upstream created or refused, and the
 * money, never a duration.
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { parseInvocation } from '../../bin/admin/args';
import { runCommand } from '../../bin/admin/commands';
import { callbackUrl, upstreamCallbackSecret } from '../../functions/core/callback-signature';
import { TaskStatus } from '../../functions/core/task';
import {
  environmentOf,
  PROVIDER_CALLBACK_BASE_URL,
  PROVIDER_CALLBACK_SECRET,
  setting,
} from '../../functions/environment/environment';
import { handler as getTask } from '../../functions/get-task/handler';
import { handler as providerCallback } from '../../functions/provider-callback/handler';
import { resetLifecycleFromEnv } from '../../functions/runtime/lifecycle-from-env';
import { readCapacity } from '../../functions/store/dispatch';
import { auditUser } from '../../functions/store/ledger';
import { getTask as getStoredTask } from '../../functions/store/tasks';
import { readUpstreamStats } from '../../functions/store/upstream-health';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as submitVideo } from '../../functions/submit-video/handler';
import {
  imageRequest,
  invoke,
  jestTimeoutFor,
  pollUntilTerminal,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  storedWhenSent,
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
  videoRequest,
} from '../support/service-harness';

const RATE = { requests: 3, windowSeconds: 10 } as const;
const INITIAL_CREDITS = 10_000;
const SECRET = 'upstreams-test-callback-secret-0123456789abcdef';

jest.setTimeout(jestTimeoutFor(3));

describe('three upstreams', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      upstreams: [
        // mock-1: every model, 3 creates per 10 s.
        { limits: { createRateLimit: RATE } },
        // mock-2: image-model-1 only, 3 creates per 10 s.
        { limits: { createRateLimit: RATE }, models: ['image-model-1'] },
        // mock-3: image-model-2 only, no limit, tried last.
        { models: ['image-model-2'] },
      ],
      maxPendingSeconds: 600,
    });
    // Callbacks on (signed per upstream): the route is invoked directly, no upstream calls it here.
    Object.assign(
      process.env,
      environmentOf(
        setting(PROVIDER_CALLBACK_BASE_URL, 'http://127.0.0.1:9'),
        setting(PROVIDER_CALLBACK_SECRET, SECRET),
      ),
    );
    resetLifecycleFromEnv();
  });

  afterAll(async () => {
    delete process.env[PROVIDER_CALLBACK_BASE_URL.name];
    delete process.env[PROVIDER_CALLBACK_SECRET.name];
    await h.dispose();
  });

  async function submit(user: TestUser, model = 'image-model-1'): Promise<string> {
    const answer = await invoke(submitImage, submitEvent('image', user, imageRequest({}, { model })));
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  /** Waits (generous deadline) until every task has reached an upstream; returns the stored tasks. */
  async function sentAll(user: TestUser, taskIds: readonly string[]) {
    return Promise.all(taskIds.map((taskId) => storedWhenSent(h, user.userId, taskId, TASK_END_BUDGET_MS / 100)));
  }

  const created = () => h.upstreams.map((mock) => mock.stats.tasksCreated);
  const refused = () => h.upstreams.reduce((sum, mock) => sum + mock.stats.createTaskRefused, 0);

  it('capacity adds up: a burst goes to both upstreams serving its model, each within its own rate, none refused', async () => {
    // Prepare
    const user = await h.createUser(INITIAL_CREDITS);
    for (const mock of h.upstreams) mock.stats.reset();

    // Act: twice one upstream's window at once.
    const taskIds = await Promise.all(Array.from({ length: 2 * RATE.requests }, () => submit(user)));
    const stored = await sentAll(user, taskIds);

    // Assert: three on each upstream of the model, none on the one that does not serve it, no refusal.
    expect(stored.map((task) => task?.providerTaskId !== undefined)).toEqual(taskIds.map(() => true));
    const byUpstream = stored.map((task) => task?.upstream).sort();
    expect(byUpstream).toEqual(['mock-1', 'mock-1', 'mock-1', 'mock-2', 'mock-2', 'mock-2']);
    expect(created()).toEqual([3, 3, 0]);
    expect(refused()).toBe(0);
    // Money: one debit per task at the service's price, whichever upstream took it.
    const audit = await auditUser(h.store, user.userId);
    const charged = stored.reduce((sum, task) => sum + (task?.creditsUsed ?? 0), 0);
    expect(audit).toMatchObject({ ok: true, balance: INITIAL_CREDITS - charged });
  });

  it('a model one upstream does not serve goes to the ones that do; its polls ask the upstream that took it', async () => {
    // Prepare
    const user = await h.createUser(INITIAL_CREDITS);
    for (const mock of h.upstreams) mock.stats.reset();

    // Act: an image-model-2 task (mock-1 or mock-3) and a video (mock-1 only).
    const imageId = await submit(user, 'image-model-2');
    const video = await invoke(submitVideo, submitEvent('video', user, videoRequest()));
    expect(video.statusCode).toBe(202);
    const videoId = String(video.body.taskId);
    const [image, clip] = await sentAll(user, [imageId, videoId]);

    // Assert: mock-2 (image-model-1 only) created neither; the video is mock-1's.
    expect(['mock-1', 'mock-3']).toContain(image?.upstream);
    expect(clip?.upstream).toBe('mock-1');
    expect(h.upstreams[1]?.stats.tasksCreated).toBe(0);
    const ended = await pollUntilTerminal(getTask, user, videoId, { intervalMs: 1000 });
    expect(ended.body.status).toBe(TaskStatus.COMPLETED);
    expect(h.upstreams[0]?.stats.getTaskCalls(String(clip?.providerTaskId))).toBeGreaterThan(0);
    expect(ended.body).not.toHaveProperty('upstream');
  });

  it('a callback signed for another upstream than the one that took the task is refused; its own is heard', async () => {
    // Prepare: a task at some upstream, and a callback URL signed for another one.
    const user = await h.createUser(INITIAL_CREDITS);
    const taskId = await submit(user);
    const [task] = await sentAll(user, [taskId]);
    const own = String(task?.upstream);
    const other = own === 'mock-1' ? 'mock-2' : 'mock-1';
    const event = (upstream: string) => {
      const url = new URL(
        callbackUrl('http://x', upstreamCallbackSecret(SECRET, upstream), user.userId, taskId, upstream),
      );
      return {
        httpMethod: 'POST',
        path: url.pathname,
        pathParameters: { taskId },
        queryStringParameters: Object.fromEntries(url.searchParams),
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code: 200, data: { taskId: task?.providerTaskId } }),
        isBase64Encoded: false,
        requestContext: { requestId: `callback-${upstream}` },
      } as unknown as APIGatewayProxyEvent;
    };

    // Act
    const wrong = await invoke(providerCallback, event(other));
    const right = await invoke(providerCallback, event(own));

    // Assert
    expect(wrong.statusCode).toBe(404);
    expect(right.statusCode).toBe(200);
    expect((await getStoredTask(h.store, user.userId, taskId))?.upstream).toBe(own);
  });

  it('fails over: an upstream answering 5xx cools off, its tasks go to the next one uncounted, money exact; it comes back', async () => {
    // Prepare: mock-1 fails every create.
    const user = await h.createUser(INITIAL_CREDITS);
    for (const mock of h.upstreams) mock.stats.reset();
    h.upstreams[0]?.setFaults({ createFault: 'http_500' });

    // Act
    const taskIds = await Promise.all(Array.from({ length: RATE.requests }, () => submit(user)));
    const stored = await sentAll(user, taskIds);

    // Assert: every task went to mock-2, none counted a failure, mock-1 is out.
    expect(stored.map((task) => task?.upstream)).toEqual(taskIds.map(() => 'mock-2'));
    expect(stored.map((task) => task?.sendFailures ?? 0)).toEqual(taskIds.map(() => 0));
    expect(h.upstreams[0]?.stats.tasksCreated).toBe(0);
    expect((await readCapacity({ ...h.store, upstream: 'mock-1' })).unhealthySince).toBeDefined();
    expect((await readUpstreamStats(h.store, 'mock-1')).failures).toBeGreaterThan(0);
    for (const taskId of taskIds) {
      const ended = await pollUntilTerminal(getTask, user, taskId, { intervalMs: 1000 });
      expect(ended.body).toMatchObject({ status: TaskStatus.COMPLETED });
    }
    const charged = stored.reduce((sum, task) => sum + (task?.creditsUsed ?? 0), 0);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: INITIAL_CREDITS - charged });

    // Act: mock-1 recovers; tasks keep coming until its probe has been answered.
    h.upstreams[0]?.clearFaults();
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    const later: string[] = [];
    while ((h.upstreams[0]?.stats.tasksCreated ?? 0) === 0 && Date.now() < deadline) {
      later.push(await submit(user));
      await sleep(1000);
    }

    // Assert: mock-1 took a task again and is back in.
    expect(h.upstreams[0]?.stats.tasksCreated).toBeGreaterThan(0);
    await sentAll(user, later);
    expect((await readCapacity({ ...h.store, upstream: 'mock-1' })).unhealthySince).toBeUndefined();
  });

  it('upstreams show (the CLI front door onto the one report) lists each upstream: state, sends, refusals, failures, p50 create latency, in flight', async () => {
    // Prepare: tasks at both upstreams of image-model-1.
    const user = await h.createUser(INITIAL_CREDITS);
    await sentAll(user, await Promise.all(Array.from({ length: 2 * RATE.requests }, () => submit(user))));
    const { command } = parseInvocation(['upstreams', 'show'], new Date());
    if (command.kind === 'help' || command.kind === 'version') throw new Error('not a command');

    // Act
    const result = await runCommand(h.store, command, new Date());

    // Assert
    const shown = result.output.upstreams as Record<string, unknown>[];
    const byName = Object.fromEntries(shown.map((upstream) => [upstream.name, upstream]));
    expect(Object.keys(byName)).toEqual(expect.arrayContaining(['mock-1', 'mock-2']));
    expect(Object.keys(byName).every((name) => ['mock-1', 'mock-2', 'mock-3'].includes(name))).toBe(true);
    for (const name of ['mock-1', 'mock-2']) {
      expect(byName[name]).toMatchObject({
        state: 'in',
        outSince: null,
        outUntil: null,
        refusals: 0,
        failures: expect.any(Number),
        p50CreateMs: expect.any(Number),
        inFlight: null,
      });
      expect(Number(byName[name]?.sends)).toBeGreaterThanOrEqual(RATE.requests);
    }
  });
});
