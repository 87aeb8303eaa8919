/**
 * Outcome unknown is not "not sent" (docs/design/dispatching.md, "Outcome unknown"), on real parts:
 * DynamoDB Local, the submit and GET handlers, the dispatcher loop, the media worker on the stream, the
 * provider-callback route behind a real local gateway, and the mock provider over HTTP at Kie's create
 * rate and a cap on tasks in flight. The mock creates the task and loses its answer (`answer_lost`: the
 * connection dropped; `answer_hangs`: no answer, the adapter times out), or the store refuses the id
 * once the create succeeded. What is asserted: the mock's count of creates (never a second one for a
 * task), the tasks' ends through the callback that names the upstream's task, the capacity item's
 * count of tasks in flight, and the money (balance and ledger audit), never a duration.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callbackUrl } from '../../functions/core/callback-signature';
import { type TaskRecord, TaskStatus } from '../../functions/core/task';
import {
  environmentOf,
  PROVIDER_CALLBACK_BASE_URL,
  PROVIDER_CALLBACK_SECRET,
  PROVIDER_TIMEOUT_MS,
  setting,
} from '../../functions/environment/environment';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { handler as providerCallback } from '../../functions/provider-callback/handler';
import { resetLifecycleFromEnv } from '../../functions/runtime/lifecycle-from-env';
import { readCapacity } from '../../functions/store/dispatch';
import { storeFromEnv } from '../../functions/store/from-env';
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
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
} from '../support/service-harness';

jest.setTimeout(jestTimeoutFor());

const SECRET = randomBytes(32).toString('base64url');
const CALLBACK_ROUTE = ROUTES.find((route) => route.name === 'provider-callback');
const INITIAL_CREDITS = 100;
const CAP = 4;
/** Short, so `answer_hangs` costs little; not shorter: a healthy create on a busy machine must fit. */
const TIMEOUT_MS = 2000;
/** The code's default limit on an unknown outcome (PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS unset). */
const UNKNOWN_LIMIT_MS = 600_000;

describe('a create whose answer is lost is never sent again', () => {
  let h: ServiceHarness;
  let gateway: Server;
  let gatewayUrl: string;
  const previousTimeout = process.env[PROVIDER_TIMEOUT_MS.name];

  beforeAll(async () => {
    process.env[PROVIDER_TIMEOUT_MS.name] = String(TIMEOUT_MS);
    h = await startServiceHarness({
      // The upstream as it is: Kie's create rate, and a cap on tasks in flight, told to both sides.
      providerLimits: { createRateLimit: { requests: 20, windowSeconds: 10 }, maxInFlight: CAP },
    });
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
      environmentOf(setting(PROVIDER_CALLBACK_BASE_URL, gatewayUrl), setting(PROVIDER_CALLBACK_SECRET, SECRET)),
    );
    resetLifecycleFromEnv();
  });

  afterEach(() => {
    h.provider.clearFaults();
  });

  afterAll(async () => {
    for (const variable of [PROVIDER_CALLBACK_BASE_URL, PROVIDER_CALLBACK_SECRET]) delete process.env[variable.name];
    await new Promise<void>((closed) => {
      gateway.close(() => closed());
      gateway.closeAllConnections();
    });
    await h.dispose();
    if (previousTimeout === undefined) delete process.env[PROVIDER_TIMEOUT_MS.name];
    else process.env[PROVIDER_TIMEOUT_MS.name] = previousTimeout;
  });

  async function submit(user: TestUser, providerInput: Record<string, unknown> = {}, prompt?: string) {
    const answer = await invoke(
      submitImage,
      submitEvent('image', user, imageRequest(providerInput, prompt === undefined ? {} : { prompt })),
    );
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  /** Reads the stored task until `done` holds or the task-end budget of wall clock passed. */
  async function storedWhen(user: TestUser, taskId: string, done: (task: TaskRecord) => boolean) {
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    let stored = await getTask(h.store, user.userId, taskId);
    while (!(stored && done(stored)) && Date.now() < deadline) {
      await sleep(100);
      stored = await getTask(h.store, user.userId, taskId);
    }
    return stored;
  }

  /** Every task completed, charged once: no refund, balance = initial - the tasks' cost, ledger sound. */
  async function expectCompletedAndCharged(user: TestUser, taskIds: string[]) {
    const tasks = await Promise.all(taskIds.map((taskId) => storedWhenEnded(h, user.userId, taskId)));
    for (const task of tasks) expect(task).toMatchObject({ status: TaskStatus.COMPLETED, creditsRefunded: false });
    expect(await auditUser(h.store, user.userId)).toMatchObject({
      ok: true,
      balance: INITIAL_CREDITS - taskIds.length * IMAGE_COST,
    });
  }

  it('2 of 4 creates lose their answer: 4 creates upstream, all 4 complete through the callback, charged once', async () => {
    // Prepare
    const user = await h.createUser(INITIAL_CREDITS);
    const created = h.provider.stats.tasksCreated;
    const calls = h.provider.stats.createTaskCalls;
    h.provider.setFaults({ createFault: 'answer_lost', createFaultTimes: 2 });

    // Act
    const taskIds = await Promise.all([1, 2, 3, 4].map(() => submit(user)));
    await expectCompletedAndCharged(user, taskIds);

    // Assert: one create per task, the two lost answers included
    expect(h.provider.stats.tasksCreated - created).toBe(4);
    expect(h.provider.stats.createTaskCalls - calls).toBe(4);
  });

  it('a create that times out is not sent again: the callback completes it', async () => {
    // Prepare
    const user = await h.createUser(INITIAL_CREDITS);
    const created = h.provider.stats.tasksCreated;
    h.provider.setFaults({ createFault: 'answer_hangs', createFaultTimes: 1 });

    // Act
    const taskId = await submit(user);
    await expectCompletedAndCharged(user, [taskId]);

    // Assert
    expect(h.provider.stats.tasksCreated - created).toBe(1);
    expect(h.provider.stats.createTaskCalls).toBeGreaterThan(0);
  });

  it('a store error after a successful create does not send it again: the callback completes it', async () => {
    // Prepare: the store refuses the dispatcher's write of the provider's id once. DynamoDB Local has no
    // fault of one write (stopping it takes the storage-faults suite's child stack), so the one refusal
    // is made in the SDK, as the error an exhausted SDK retry throws.
    const user = await h.createUser(INITIAL_CREDITS);
    const created = h.provider.stats.tasksCreated;
    let refused = 0;
    const doc = storeFromEnv().doc;
    doc.middlewareStack.add(
      (next) => async (args) => {
        if (refused === 0 && setsProviderTaskId(args.input)) {
          refused++;
          throw Object.assign(new Error('Internal server error (refused once by the test)'), {
            name: 'InternalServerError',
            $fault: 'server',
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'refuseProviderIdOnce' },
    );

    // Act
    const taskId = await submit(user);
    try {
      await expectCompletedAndCharged(user, [taskId]);
    } finally {
      doc.middlewareStack.remove('refuseProviderIdOnce');
    }

    // Assert
    expect(refused).toBe(1);
    expect(h.provider.stats.tasksCreated - created).toBe(1);
  });

  it('an outcome that stays unknown holds its place in flight, fails refunded once at its limit; a late callback changes nothing', async () => {
    // Prepare: the answer is lost and the mock calls back only when the test says (`drop`).
    const user = await h.createUser(INITIAL_CREDITS);
    const created = h.provider.stats.tasksCreated;
    const prompt = `unknown outcome ${randomBytes(6).toString('hex')}`;
    h.provider.setFaults({ createFault: 'answer_lost', createFaultTimes: 1 });
    const taskId = await submit(user, { mockCallback: 'drop' }, prompt);
    const unknown = await storedWhen(user, taskId, (task) => task.stage === 'unknown');
    const inFlight = Object.keys((await readCapacity(h.store)).running ?? {});
    const upstreamId = h.provider.stats.createdTasks.find((task) => task.prompt === prompt)?.taskId;

    // Act: the limit passes (a GET refreshes it), then the upstream's callback arrives after all
    const sinceUnknown = unknown?.unknownOutcomeSince ?? Date.now();
    const failed = await h.withClock(
      () => new Date(sinceUnknown + UNKNOWN_LIMIT_MS + 1000),
      () => invoke(getTaskHandler, getTaskEvent(user, taskId)),
    );
    const inFlightAfter = Object.keys((await readCapacity(h.store)).running ?? {});
    const late = await fetch(callbackUrl(gatewayUrl, SECRET, user.userId, taskId), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 200, msg: 'success', data: { taskId: upstreamId, state: 'success' } }),
    });

    // Assert: no second create; counted in flight while unknown; failed and refunded exactly once
    expect(unknown).toMatchObject({ status: TaskStatus.PENDING, stage: 'unknown' });
    expect(unknown?.providerTaskId).toBeUndefined();
    expect(upstreamId).toEqual(expect.any(String));
    expect(inFlight).toContain(taskId);
    expect(failed.body).toMatchObject({ status: 2, errorCode: 'PROVIDER_UNAVAILABLE', creditsRefunded: true });
    expect(inFlightAfter).not.toContain(taskId);
    expect(late.status).toBe(200);
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({
      status: TaskStatus.FAILED,
      errorCode: 'PROVIDER_UNAVAILABLE',
      creditsRefunded: true,
    });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: INITIAL_CREDITS });
    expect(h.provider.stats.tasksCreated - created).toBe(1);
  });
});

/** Whether a DynamoDB update (document or low-level input) SETs the task's `providerTaskId`. */
function setsProviderTaskId(input: unknown): boolean {
  const { UpdateExpression, ExpressionAttributeNames } = (input ?? {}) as {
    UpdateExpression?: unknown;
    ExpressionAttributeNames?: Record<string, unknown>;
  };
  if (typeof UpdateExpression !== 'string' || !ExpressionAttributeNames) return false;
  return Object.entries(ExpressionAttributeNames).some(
    ([placeholder, name]) => name === 'providerTaskId' && UpdateExpression.includes(`${placeholder} =`),
  );
}
