/**
 * A closed account's webhooks (issue 40): after the closure nothing is sent about the account to the
 * URLs it configured. A task at the provider when its account closes ends as usual, but no delivery is
 * opened for it, to the default URL or to its endpoint (`account-closed`), and its feed event leaves the
 * due index, so the sweeper does not open it later; a delivery open at the closure (an account event
 * whose first attempt was answered 500) is ended at its next attempt without a request (`failed`, the
 * reason recorded, no retry); an account event noticed after the closure opens nothing. Another, open
 * account beside it gets its deliveries and its retry, so none of this passes for want of sending.
 * On the in-process harness with the mock provider over HTTP, the webhook worker on the table's stream
 * and a real HTTP receiver; the mock's clock holds the tasks at the provider until the test moves it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { endAccountCredentials } from '../../functions/auth/end-account-credentials';
import {
  environmentOf,
  setting,
  WEBHOOK_INSECURE_ORIGINS,
  WEBHOOK_RETRY_DELAYS_SECONDS,
  WEBHOOK_SECRETS_KEY,
} from '../../functions/environment/environment';
import { noticeSpending } from '../../functions/lifecycle/account-events';
import { closeAccount } from '../../functions/lifecycle/close-account';
import { ACCOUNT_CLOSED_REASON } from '../../functions/lifecycle/closed-account';
import { refreshTask } from '../../functions/lifecycle/refresh-task';
import { createEndpoint, listDeliveries } from '../../functions/lifecycle/webhook-endpoints';
import {
  describeAccountEvents,
  describeDeliveries,
  rotateWebhookSecret,
  setAccountWebhookUrl,
} from '../../functions/lifecycle/webhook-settings';
import { openDelivery } from '../../functions/lifecycle/webhooks';
import { logger } from '../../functions/observability/logger';
import { removalFromEnv } from '../../functions/runtime/removal-from-env';
import { resetWebhookLifecycleFromEnv } from '../../functions/runtime/webhook-lifecycle-from-env';
import { setLowBalanceThreshold } from '../../functions/store/account-events';
import { getTask as getStoredTask } from '../../functions/store/tasks';
import { allDueDeliveries } from '../../functions/store/webhook-due-deliveries';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as sweeper } from '../../functions/sweeper/handler';
import { handler as webhookWorker } from '../../functions/webhook-worker/handler';
import { createSecretBox } from '../../functions/webhooks/secret-box';
import { webhookTargetPolicy } from '../../functions/webhooks/target-policy';
import { WEBHOOK_WORKER_FILTERS } from '../../lib/routes';
import { type StreamPoller, startStreamPoller } from '../../local/stream-poller';
import { testEndpoint } from '../support/dynamodb';
import {
  imageRequest,
  invoke,
  jestTimeoutFor,
  lambdaContext,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  storedWhenSent,
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
} from '../support/service-harness';

jest.setTimeout(jestTimeoutFor(2));

const SERVICE_KEY = 'close-account-webhooks-service-key-0123456789';
/** How long the mock takes to end a task, on its own clock (which the test moves). */
const PROVIDER_DELAY_MS = 60_000;

interface Received {
  path: string;
  webhookId: string;
  type: string;
  data: Record<string, unknown>;
}

let h: ServiceHarness;
let worker: StreamPoller;
let receiver: Server;
let origin = '';
let providerNow = Date.now();
const received: Received[] = [];
/** What the receiver answers, per path prefix: a list of status codes taken in order, then 200. */
const answers = new Map<string, number[]>();
/** Path prefixes the receiver always answers 500 (an account whose deliveries must wait for a retry). */
const failing = new Set<string>();
const box = createSecretBox(async () => SERVICE_KEY);

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '';
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Omit<Received, 'path' | 'webhookId'>;
      received.push({ path, webhookId: String(request.headers['webhook-id']), type: body.type, data: body.data });
      const prefix = `/${path.split('/')[1] ?? ''}`;
      response.writeHead(failing.has(prefix) ? 500 : (answers.get(path)?.shift() ?? 200)).end();
    });
  });
  await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', () => ready()));
  origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  h = await startServiceHarness({ providerClock: () => providerNow });
  // The worker seals and opens with the local key, may call the receiver over plain http, and retries a
  // failed attempt a second later (when a sweep claims it).
  Object.assign(
    process.env,
    environmentOf(
      setting(WEBHOOK_SECRETS_KEY, SERVICE_KEY),
      setting(WEBHOOK_INSECURE_ORIGINS, origin),
      setting(WEBHOOK_RETRY_DELAYS_SECONDS, '1,1,1,1,1'),
    ),
  );
  resetWebhookLifecycleFromEnv();
  worker = await startStreamPoller({
    endpoint: testEndpoint(),
    tableName: h.store.tableName,
    handler: webhookWorker,
    filter: undefined,
    filters: WEBHOOK_WORKER_FILTERS,
    name: 'webhook worker',
  });
});

afterAll(async () => {
  await worker?.stop();
  for (const variable of [WEBHOOK_SECRETS_KEY, WEBHOOK_INSECURE_ORIGINS, WEBHOOK_RETRY_DELAYS_SECONDS]) {
    delete process.env[variable.name];
  }
  resetWebhookLifecycleFromEnv();
  if (receiver) {
    await new Promise<void>((closed) => {
      receiver.close(() => closed());
      receiver.closeAllConnections();
    });
  }
  await h?.dispose();
});

/** Polls `read` until `check` holds, on the tasks' budget (the worker and the media worker run on their own). */
async function until<T>(read: () => T | Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + TASK_END_BUDGET_MS;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await sleep(100);
  }
}

function at(prefix: string): Received[] {
  return received.filter((request) => request.path.startsWith(`${prefix}/`));
}

/**
 * A user with `credits`, a signing secret, a default webhook URL (`/<name>/default`) and one endpoint
 * for every event (`/<name>/endpoint`), set up as the API sets them.
 */
async function webhookUser(name: string, credits: number): Promise<TestUser & { endpointId: string }> {
  const user = await h.createUser(credits);
  const now = new Date();
  const policy = webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin });
  await rotateWebhookSecret(h.store, box, { userId: user.userId, now });
  await setAccountWebhookUrl(h.store, policy, { userId: user.userId, url: `${origin}/${name}/default`, now });
  const endpoint = await createEndpoint(
    { store: h.store, box, policy, now: () => new Date() },
    { userId: user.userId, url: `${origin}/${name}/endpoint` },
  );
  return { ...user, endpointId: endpoint.id };
}

/** A task submitted by `user` that the mock holds at the provider until its clock moves. */
async function taskAtProvider(user: TestUser): Promise<string> {
  const answer = await invoke(
    submitImage,
    submitEvent('image', user, imageRequest({ mockDelayMs: PROVIDER_DELAY_MS })),
  );
  if (answer.statusCode !== 202) throw new Error(`Submit answered ${answer.statusCode}: ${answer.rawBody}`);
  const taskId = String(answer.body.taskId);
  await storedWhenSent(h, user.userId, taskId);
  return taskId;
}

/** Closes the account as POST /api/account/close and the operator CLI do. */
function close(user: TestUser) {
  const actor = { type: 'operator' as const };
  return closeAccount(
    {
      ...removalFromEnv(),
      endCredentials: ({ now }) => endAccountCredentials(h.store, undefined, { userId: user.userId, now, actor }),
    },
    { userId: user.userId, actor },
    logger,
  );
}

/**
 * Refreshes the task (as the sweeper would, without its retention deleting a closed account's ended
 * task) until the media worker has ended it.
 */
async function endAtProvider(user: TestUser, taskId: string) {
  const lc = h.lifecycle(() => new Date());
  return until(
    async () => {
      const task = await getStoredTask(h.store, user.userId, taskId);
      if (task?.status === 0) await refreshTask(lc, task, logger);
      return task;
    },
    (task) => task !== undefined && task.status !== 0,
  );
}

/** The endpoint's delivery log, newest first. */
async function endpointLog(user: TestUser & { endpointId: string }) {
  return (await listDeliveries(h.store, { userId: user.userId, endpointId: user.endpointId, limit: 50 })).deliveries;
}

describe('webhooks of an account that closes', () => {
  it('sends nothing after the closure: a task ending later opens no delivery, an open one ends without a request', async () => {
    // Prepare: the closing account falls below its low-balance threshold when its task is claimed; the
    // receiver answers its credits.low (to the default URL and to the endpoint) 500, so both wait for a
    // retry when it closes. The open account's task ends beside it; its default URL answers 500 once.
    const closing = await webhookUser('closing', 20);
    const open = await webhookUser('open', 20);
    failing.add('/closing');
    answers.set('/open/default', [500]);
    await setLowBalanceThreshold(h.store, { userId: closing.userId, threshold: 1000, now: new Date() });
    const closingTask = await taskAtProvider(closing);
    const openTask = await taskAtProvider(open);
    const openAtClosure = await until(
      async () => ({ events: await describeAccountEvents(h.store, closing.userId), log: await endpointLog(closing) }),
      ({ events, log }) =>
        events.events[0]?.state === 'waiting' && log[0]?.state === 'waiting' && at('/closing').length === 2,
    );
    const eventId = String(openAtClosure.events.events[0]?.eventId);
    const sentBeforeClosure = at('/closing')
      .map((request) => [request.path, request.type])
      .sort();

    // Act: the account closes; the provider ends both tasks; sweeps claim every retry that comes due
    // until the closed account's task is deleted and each delivery has ended.
    const report = await close(closing);
    providerNow += PROVIDER_DELAY_MS + 1000;
    const [closingEnded, openEnded] = await Promise.all([
      endAtProvider(closing, closingTask),
      endAtProvider(open, openTask),
    ]);
    const outcome = await openDelivery(
      { store: h.store, now: () => new Date() },
      { userId: closing.userId, taskId: closingTask },
      logger,
    );
    await until(
      () => at('/open'),
      (requests) => requests.length >= 2,
    );
    const settled = async () => {
      const [task, events, log, openDefault] = await Promise.all([
        getStoredTask(h.store, closing.userId, closingTask),
        describeAccountEvents(h.store, closing.userId),
        endpointLog(closing),
        describeDeliveries(h.store, open.userId, openTask),
      ]);
      return (
        task === undefined &&
        events.events.every((event) => event.state === 'failed') &&
        log.every((delivery) => delivery.state === 'failed') &&
        openDefault.delivery?.state === 'delivered'
      );
    };
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    while (!(await settled()) && Date.now() < deadline) {
      await sweeper({}, lambdaContext('sweeper'));
      await sleep(300);
    }
    const [closingEvent, closingLog, closingTaskDelivery, openDefault, openLog, due] = await Promise.all([
      describeDeliveries(h.store, closing.userId, eventId),
      endpointLog(closing),
      describeDeliveries(h.store, closing.userId, closingTask),
      describeDeliveries(h.store, open.userId, openTask),
      endpointLog(open),
      allDueDeliveries(h.store, new Date(Date.now() + 86_400_000)),
    ]);

    // Assert
    // Before the closure the closing account's URLs did get its event (answered 500): they listen.
    expect(sentBeforeClosure).toEqual([
      ['/closing/default', 'credits.low'],
      ['/closing/endpoint', 'credits.low'],
    ]);
    expect(report).toMatchObject({ tasksStillRunning: 1 });
    expect([closingEnded?.status, openEnded?.status]).toEqual([1, 1]);
    expect(outcome).toBe('account-closed');
    expect(await getStoredTask(h.store, closing.userId, closingTask)).toBeUndefined();
    // After it, nothing: no request about its task, no retry of its open event.
    expect(
      at('/closing')
        .map((request) => [request.path, request.type])
        .sort(),
    ).toEqual(sentBeforeClosure);
    // Its task ended after the closure: no delivery opened, none left for the sweeper to open.
    expect(closingTaskDelivery.delivery).toBeNull();
    expect(closingLog.map((delivery) => delivery.eventType)).toEqual(['credits.low']);
    expect(due.filter((ref) => ref.userId === closing.userId)).toEqual([]);
    // The event open at the closure ended at its next attempt, without a request, with the reason.
    expect(closingEvent.delivery).toMatchObject({ state: 'failed', gaveUpAt: expect.any(String) });
    expect(closingEvent.attempts.map((attempt) => attempt.statusCode)).toEqual([500, null]);
    expect(closingEvent.attempts[1]?.error).toBe(ACCOUNT_CLOSED_REASON);
    expect(closingLog[0]?.state).toBe('failed');
    expect(closingLog[0]?.attempts.map((attempt) => attempt.statusCode)).toEqual([500, null]);
    expect(closingLog[0]?.attempts[1]?.error).toBe(ACCOUNT_CLOSED_REASON);
    // The open account beside it: its task's event to both its URLs, the default one retried once.
    expect(
      at('/open')
        .map((request) => [request.path, request.type, request.data.taskId])
        .sort(),
    ).toEqual(
      [
        ['/open/default', 'task.completed', openTask],
        ['/open/default', 'task.completed', openTask],
        ['/open/endpoint', 'task.completed', openTask],
      ].sort(),
    );
    expect(openDefault.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 200]);
    expect(openLog.map((delivery) => [delivery.eventType, delivery.state])).toEqual([['task.completed', 'delivered']]);
  });

  it('opens no account event for a closed account, while an open one gets its event', async () => {
    // Prepare: two accounts below a low-balance threshold that sends at their next task; one closes.
    const closed = await webhookUser('closed-events', 20);
    const open = await webhookUser('open-events', 20);
    const now = new Date();
    for (const user of [closed, open]) {
      await setLowBalanceThreshold(h.store, { userId: user.userId, threshold: 1000, now });
    }
    await close(closed);

    // Act: the dispatcher's look at a claimed task of each (a claim racing the closure, for the closed one).
    const ctx = { store: h.store, now: () => new Date() };
    const [closedNoticed, openNoticed] = await Promise.all(
      [closed, open].map((user) =>
        noticeSpending(ctx, { userId: user.userId, createdAt: new Date().toISOString() }, logger),
      ),
    );
    await until(
      () => at('/open-events'),
      (requests) => requests.length >= 2,
    );
    const [closedEvents, closedLog] = await Promise.all([
      describeAccountEvents(h.store, closed.userId),
      endpointLog(closed),
    ]);

    // Assert
    expect(closedNoticed?.events).toEqual([{ type: 'credits.low', outcome: 'account-closed' }]);
    expect(openNoticed?.events).toEqual([{ type: 'credits.low', outcome: 'opened' }]);
    expect(closedEvents.events).toEqual([]);
    expect(closedLog).toEqual([]);
    expect(at('/closed-events')).toEqual([]);
    expect(
      at('/open-events')
        .map((request) => [request.path, request.type])
        .sort(),
    ).toEqual([
      ['/open-events/default', 'credits.low'],
      ['/open-events/endpoint', 'credits.low'],
    ]);
  });
});
