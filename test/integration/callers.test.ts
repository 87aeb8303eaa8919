/**
 * What callers see of the queue (issue 26): `stage` and `queuedAhead` on the Task resource, `stage` in
 * listings, and `POST /api/ai/tasks/{id}/cancel`. Real parts: DynamoDB Local, the real handlers behind
 * the local gateway (local/gateway.ts) with the real authorizer over HTTP (API keys and sessions as the
 * store issues them), the mock provider over HTTP, and the dispatcher's own step
 * (functions/lifecycle/dispatch.ts). The dispatch loop is off, so a task stays queued until a test
 * dispatches it; the races run the dispatcher and the cancels at once, and assert only how each task
 * ended, never when.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ApiError, GenerationClient } from '../../client/src/index';
import { handler as authorizer } from '../../functions/authorizer/handler';
import { handler as cancelTaskHandler } from '../../functions/cancel-task/handler';
import { csrfTokenFor } from '../../functions/core/session';
import type { TaskRecord } from '../../functions/core/task';
import { environmentOf, PUBLIC_ORIGIN, setting } from '../../functions/environment/environment';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { cancelTask } from '../../functions/lifecycle/cancel-task';
import { dispatchQueued } from '../../functions/lifecycle/dispatch-run';
import { handler as listTasksHandler } from '../../functions/list-tasks/handler';
import { putApiKey } from '../../functions/money/key-issue';
import { logger } from '../../functions/observability/logger';
import { claimSend, releaseSend } from '../../functions/store/dispatch';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { createSession } from '../../functions/store/sessions';
import * as keys from '../../functions/store/task-keys';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { ROUTES } from '../../lib/routes';
import { createGateway, type ProxyHandler } from '../../local/gateway';
import {
  apiEvent,
  IMAGE_COST,
  imageRequest,
  invoke,
  type ServiceHarness,
  startServiceHarness,
  submitEvent,
  type TestUser,
} from '../support/service-harness';

/** Tasks that stay at the provider for the whole file once sent. */
const LONG = { mockDelayMs: 600_000 };
/** Races per round, and rounds. */
const RACES = 20;
const ROUNDS = 3;

jest.setTimeout(240_000);

/** An account with a real API key, as the authorizer knows it. */
interface Account {
  userId: string;
  apiKey: string;
  client: GenerationClient;
}

describe('what callers see of the queue', () => {
  let h: ServiceHarness;
  let gateway: Server;
  let baseUrl = '';
  const lc = () => h.lifecycle(() => new Date());

  beforeAll(async () => {
    h = await startServiceHarness({
      dispatcher: false,
      maxPendingSeconds: 86_400,
      // The upstream as it is: Kie's create rate, enforced by the mock.
      providerLimits: { createRateLimit: DISPATCH.createRateLimit },
    });
    const handlers: Record<string, ProxyHandler> = {
      'submit-image': submitImage as unknown as ProxyHandler,
      'get-task': getTaskHandler as unknown as ProxyHandler,
      'list-tasks': listTasksHandler as unknown as ProxyHandler,
      'cancel-task': cancelTaskHandler as unknown as ProxyHandler,
    };
    gateway = createServer(
      createGateway({
        routes: ROUTES.filter((route) => handlers[route.name]).map((route) => ({
          route,
          handler: handlers[route.name] as ProxyHandler,
        })),
        authorizer,
        authorizerCacheTtlSeconds: 0,
      }),
    );
    await new Promise<void>((ready) => gateway.listen(0, '127.0.0.1', () => ready()));
    baseUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    // Session writes are checked against the service's own origin (CSRF), here the gateway's.
    Object.assign(process.env, environmentOf(setting(PUBLIC_ORIGIN, baseUrl)));
  });

  afterAll(async () => {
    delete process.env[PUBLIC_ORIGIN.name];
    await new Promise<void>((closed) => {
      gateway.close(() => closed());
      gateway.closeAllConnections();
    });
    await h.dispose();
  });

  async function account(credits: number): Promise<Account> {
    const user = await h.createUser(credits);
    const { apiKey } = await putApiKey(h.store, { userId: user.userId, name: 'callers test' });
    return { userId: user.userId, apiKey, client: new GenerationClient({ baseUrl, apiKey, retries: 0 }) };
  }

  async function submit(caller: Account): Promise<string> {
    return (
      await caller.client.submitImage({ model: 'image-model-1', prompt: 'a queued lighthouse', providerInput: LONG })
    ).taskId;
  }

  function cancel(apiKey: string, taskId: string): Promise<Response> {
    return fetch(`${baseUrl}/api/ai/tasks/${encodeURIComponent(taskId)}/cancel`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}` },
    });
  }

  /** The dispatcher keeps to the mock's rate; past it a run answers a wait and the next run goes on. */
  const DISPATCH = { createRateLimit: { requests: 20, windowSeconds: 10 } } as const;

  /** Dispatch runs until nothing is queued. */
  async function drain(): Promise<void> {
    for (;;) {
      const run = await dispatchQueued(lc(), DISPATCH, logger);
      if (run.idle) return;
    }
  }

  async function refunds(userId: string, taskId: string): Promise<number> {
    const ledger = await listLedger(h.store, userId);
    return ledger.filter((entry) => entry.kind === 'refund' && entry.taskId === taskId).length;
  }

  async function queueEntryOf(task: TaskRecord | undefined) {
    if (!task) return undefined;
    const out = await h.store.doc.send(
      new GetCommand({
        TableName: h.store.tableName,
        Key: keys.queueEntry(task.userId, task.createdAt, task.taskId),
        ConsistentRead: true,
      }),
    );
    return out.Item;
  }

  /**
   * Each task ended one way only: sent (a provider id, stage running, the cancel answered 409, no refund)
   * or cancelled (the cancel answered 200, status 2 CANCELLED, exactly one refund, never sent); no queue
   * entry is left; the provider created exactly the sent ones; the balance is exact.
   */
  async function expectEachEndedOneWay(
    user: TestUser,
    taskIds: string[],
    answers: { statusCode: number; body: unknown }[],
    createdBefore: number,
  ): Promise<void> {
    const byTask = new Map(taskIds.map((taskId, index) => [taskId, answers[index]]));
    let sent = 0;
    for (const taskId of taskIds) {
      const stored = await getTask(h.store, user.userId, taskId);
      const answer = byTask.get(taskId);
      const refunded = await refunds(user.userId, taskId);
      if (stored?.providerTaskId !== undefined) {
        sent++;
        expect([answer?.statusCode, answer?.body]).toEqual([409, { error: 'Task already started' }]);
        expect(stored).toMatchObject({ status: 0, stage: 'running', creditsRefunded: false });
        expect(refunded).toBe(0);
      } else {
        expect(answer?.statusCode).toBe(200);
        expect(stored).toMatchObject({ status: 2, errorCode: 'CANCELLED', creditsRefunded: true });
        expect(refunded).toBe(1);
      }
      expect(await queueEntryOf(stored)).toBeUndefined();
    }
    expect(h.provider.stats.tasksCreated - createdBefore).toBe(sent);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: (RACES - sent) * IMAGE_COST });
  }

  test('a queued task shows stage queued and the account tasks ahead of it; once sent, running and no count', async () => {
    // Prepare: drained, then three tasks of one account and one of another account queued between them
    await drain();
    const caller = await account(100);
    const neighbour = await account(100);
    const first = await submit(caller);
    await submit(neighbour);
    const second = await submit(caller);
    const third = await submit(caller);

    // Act
    const queued = await Promise.all([first, second, third].map((taskId) => caller.client.getTask(taskId)));
    const listedQueued = await caller.client.listTasks({ limit: 10 });
    await drain();
    const running = await caller.client.getTask(third);
    const listedRunning = await caller.client.listTasks({ limit: 10 });

    // Assert
    expect(queued.map((task) => [task.status, 'stage' in task && task.stage])).toEqual([
      [0, 'queued'],
      [0, 'queued'],
      [0, 'queued'],
    ]);
    expect(queued.map((task) => ('queuedAhead' in task ? task.queuedAhead : undefined))).toEqual([0, 1, 2]);
    expect(listedQueued.tasks.map((task) => [task.taskId, task.stage])).toEqual([
      [third, 'queued'],
      [second, 'queued'],
      [first, 'queued'],
    ]);
    expect(listedQueued.tasks.some((task) => 'queuedAhead' in task)).toBe(false);
    expect(running).toMatchObject({ status: 0, stage: 'running' });
    expect('queuedAhead' in running).toBe(false);
    expect(listedRunning.tasks.map((task) => task.stage)).toEqual(['running', 'running', 'running']);
  });

  test('a task being sent still shows queued (it has not reached the provider) but can no longer be cancelled', async () => {
    // Prepare: a dispatcher claimed the task and is calling the provider
    const caller = await account(10);
    const taskId = await submit(caller);
    await claimSend(h.store, { userId: caller.userId, taskId, now: Date.now() });

    // Act
    const shown = await caller.client.getTask(taskId);
    const answer = await cancel(caller.apiKey, taskId);

    // Assert
    expect(shown).toMatchObject({ status: 0, stage: 'queued', queuedAhead: 0 });
    expect(answer.status).toBe(409);
    expect(await answer.json()).toEqual({ error: 'Task already started' });
    expect(await auditUser(h.store, caller.userId)).toMatchObject({ ok: true, balance: 10 - IMAGE_COST });
    // The send goes on (its claim given back, as after a capacity refusal), so the queue drains.
    await releaseSend(h.store, { userId: caller.userId, taskId, failed: false });
  });

  test('a queued task is cancelled and refunded exactly once; a second cancel is 409 and refunds nothing', async () => {
    // Prepare
    const caller = await account(10);
    const taskId = await submit(caller);
    const queued = await getTask(h.store, caller.userId, taskId);

    // Act
    const answer = await cancel(caller.apiKey, taskId);
    const again = await cancel(caller.apiKey, taskId);
    await drain();

    // Assert
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      taskId,
      status: 2,
      errorCode: 'CANCELLED',
      errorMessage: 'The task was cancelled before it started',
      creditsRefunded: true,
    });
    expect(body).not.toHaveProperty('stage');
    expect(body).not.toHaveProperty('queuedAhead');
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ error: 'Task already finished' });
    expect(await auditUser(h.store, caller.userId)).toMatchObject({ ok: true, balance: 10, ledgerSum: 10 });
    expect(await refunds(caller.userId, taskId)).toBe(1);
    expect(await queueEntryOf(queued)).toBeUndefined();
    const stored = await getTask(h.store, caller.userId, taskId);
    expect(stored).toMatchObject({ status: 2, errorCode: 'CANCELLED', creditsRefunded: true });
    expect(stored?.providerTaskId).toBeUndefined();
  });

  test("a cancel that meets its task on a dispatcher's round trip (claimed, put back by a 429) still cancels it, once", async () => {
    // Prepare: a store whose first refund transaction is sent while a dispatcher holds the task
    // (`sending`, so its stillQueued condition fails on DynamoDB Local), and the dispatcher puts the task
    // back in the queue before the cancel reads it again: the round trip of a send the upstream refused.
    const caller = await account(10);
    const taskId = await submit(caller);
    const queued = await getTask(h.store, caller.userId, taskId);
    const ref = { userId: caller.userId, taskId };
    let roundTrips = 0;
    const send = h.store.doc.send.bind(h.store.doc) as (command: unknown) => Promise<unknown>;
    const doc = Object.create(h.store.doc) as typeof h.store.doc;
    doc.send = (async (command: unknown) => {
      if (!(command instanceof TransactWriteCommand) || roundTrips > 0) return send(command);
      roundTrips += 1;
      expect(await claimSend(h.store, { ...ref, now: Date.now() })).toBeDefined();
      try {
        return await send(command);
      } finally {
        await releaseSend(h.store, { ...ref, failed: false });
      }
    }) as typeof doc.send;

    // Act
    const cancelled = await cancelTask({ store: { ...h.store, doc }, now: () => new Date() }, ref, logger);

    // Assert
    expect(roundTrips).toBe(1);
    expect(cancelled).toMatchObject({ status: 2, errorCode: 'CANCELLED', creditsRefunded: true });
    expect(await refunds(caller.userId, taskId)).toBe(1);
    expect(await auditUser(h.store, caller.userId)).toMatchObject({ ok: true, balance: 10, ledgerSum: 10 });
    expect(await queueEntryOf(queued)).toBeUndefined();
  });

  test('a running task is not cancelled: 409 Task already started, nothing refunded', async () => {
    // Prepare
    await drain();
    const caller = await account(10);
    const taskId = await submit(caller);
    await drain();

    // Act
    const answer = await cancel(caller.apiKey, taskId);

    // Assert
    expect(answer.status).toBe(409);
    expect(await answer.json()).toEqual({ error: 'Task already started' });
    expect(await getTask(h.store, caller.userId, taskId)).toMatchObject({
      status: 0,
      stage: 'running',
      creditsRefunded: false,
    });
    expect(await auditUser(h.store, caller.userId)).toMatchObject({ ok: true, balance: 10 - IMAGE_COST });
    expect(await refunds(caller.userId, taskId)).toBe(0);
  });

  test("another owner's task and an unknown id are 404, and the task stays queued", async () => {
    // Prepare
    const owner = await account(10);
    const stranger = await account(10);
    const taskId = await submit(owner);

    // Act
    const strangers = await cancel(stranger.apiKey, taskId);
    const unknown = await cancel(owner.apiKey, 'no-such-task');

    // Assert
    expect(strangers.status).toBe(404);
    expect(await strangers.json()).toEqual({ error: 'Task not found' });
    expect(unknown.status).toBe(404);
    expect(await owner.client.getTask(taskId)).toMatchObject({ status: 0, stage: 'queued' });
    expect(await auditUser(h.store, owner.userId)).toMatchObject({ ok: true, balance: 10 - IMAGE_COST });
  });

  test('a session cancel without the CSRF token is refused and changes nothing; with it, the task is cancelled', async () => {
    // Prepare
    const caller = await account(10);
    const taskId = await submit(caller);
    const { sessionId } = await createSession(h.store, {
      userId: caller.userId,
      email: 'callers@example.test',
      idleSeconds: 3600,
      absoluteSeconds: 7200,
    });
    const session = { Cookie: `__Host-session=${sessionId}`, Origin: baseUrl };
    const url = `${baseUrl}/api/ai/tasks/${encodeURIComponent(taskId)}/cancel`;

    // Act
    const withoutToken = await fetch(url, { method: 'POST', headers: session });
    const stillQueued = await caller.client.getTask(taskId);
    const withToken = await fetch(url, {
      method: 'POST',
      headers: { ...session, 'X-CSRF-Token': csrfTokenFor(sessionId) },
    });

    // Assert
    expect(withoutToken.status).toBe(403);
    expect(await withoutToken.json()).toEqual({ error: 'Cross-site request refused', reason: 'missing-token' });
    expect(stillQueued).toMatchObject({ status: 0, stage: 'queued' });
    expect(withToken.status).toBe(200);
    expect(await withToken.json()).toMatchObject({ taskId, status: 2, errorCode: 'CANCELLED' });
    expect(await auditUser(h.store, caller.userId)).toMatchObject({ ok: true, balance: 10 });
  });

  test("the typed client's cancelTask resolves with the cancelled task, and rejects with the 409 the second time", async () => {
    // Prepare
    const caller = await account(10);
    const taskId = await submit(caller);

    // Act
    const cancelled = await caller.client.cancelTask(taskId);
    const again = await caller.client.cancelTask(taskId).catch((error: unknown) => error);

    // Assert
    expect(cancelled).toMatchObject({ taskId, status: 2, errorCode: 'CANCELLED', creditsRefunded: true });
    expect(again).toBeInstanceOf(ApiError);
    expect(again).toMatchObject({ status: 409, body: { error: 'Task already finished' } });
    expect(await auditUser(h.store, caller.userId)).toMatchObject({ ok: true, balance: 10 });
  });

  test('the cancel handler answers a stranger like an unknown id (no authorizer here: the context as API Gateway passes it)', async () => {
    // Prepare
    const owner = await account(10);
    const taskId = await submit(owner);
    const stranger: TestUser = await h.createUser(1);

    // Act
    const answer = await invoke(
      cancelTaskHandler,
      apiEvent({
        method: 'POST',
        path: `/api/ai/tasks/${taskId}/cancel`,
        resource: '/api/ai/tasks/{id}/cancel',
        user: stranger,
        pathParameters: { id: taskId },
      }),
    );

    // Assert
    expect(answer.statusCode).toBe(404);
    expect(await getTask(h.store, owner.userId, taskId)).toMatchObject({ status: 0, stage: 'queued' });
  });

  test.each(Array.from({ length: ROUNDS }, (_, round) => [round + 1]))(
    'cancels racing the dispatcher: each task is either sent and not refunded or cancelled and refunded once, never both (round %i)',
    async () => {
      // Prepare: nothing else queued, then one account's tasks queued
      await drain();
      const user = await h.createUser(RACES * IMAGE_COST);
      const taskIds: string[] = [];
      for (let i = 0; i < RACES; i++) {
        const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG)));
        taskIds.push(String(answer.body.taskId));
      }
      const createdBefore = h.provider.stats.tasksCreated;

      // Act: the dispatcher (four steps at once, oldest tasks first) sends while the caller cancels every
      // task, oldest first, one after the other; then the dispatcher empties the queue
      const cancelOne = (taskId: string) =>
        invoke(
          cancelTaskHandler,
          apiEvent({
            method: 'POST',
            path: `/api/ai/tasks/${taskId}/cancel`,
            resource: '/api/ai/tasks/{id}/cancel',
            user,
            pathParameters: { id: taskId },
          }),
        );
      const cancelAll = async () => {
        const answers = [];
        for (const taskId of taskIds) answers.push(await cancelOne(taskId));
        return answers;
      };
      const [answers] = await Promise.all([cancelAll(), dispatchQueued(lc(), DISPATCH, logger, { workers: 4 })]);
      await drain();

      // Assert
      await expectEachEndedOneWay(user, taskIds, answers, createdBefore);
    },
  );
  test('a cancel and a claim for the same task started together: exactly one wins, for every task', async () => {
    // Prepare
    await drain();
    const user = await h.createUser(RACES * IMAGE_COST);
    const taskIds: string[] = [];
    for (let i = 0; i < RACES; i++) {
      const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG)));
      taskIds.push(String(answer.body.taskId));
    }
    const createdBefore = h.provider.stats.tasksCreated;

    // Act: every task's cancel and a dispatcher's claim of it at once; the claimed ones then go on to
    // the provider (their claim given back to the queue, the dispatcher sends them)
    const raced = await Promise.all(
      taskIds.map((taskId) =>
        Promise.all([
          invoke(
            cancelTaskHandler,
            apiEvent({
              method: 'POST',
              path: `/api/ai/tasks/${taskId}/cancel`,
              resource: '/api/ai/tasks/{id}/cancel',
              user,
              pathParameters: { id: taskId },
            }),
          ),
          claimSend(h.store, { userId: user.userId, taskId, now: Date.now() }),
        ]),
      ),
    );
    for (const [index, [, claimed]] of raced.entries()) {
      if (claimed) await releaseSend(h.store, { userId: user.userId, taskId: taskIds[index] ?? '', failed: false });
    }
    await drain();

    // Assert
    expect(raced.every(([answer, claimed]) => (answer.statusCode === 200) !== (claimed !== undefined))).toBe(true);
    await expectEachEndedOneWay(
      user,
      taskIds,
      raced.map(([answer]) => answer),
      createdBefore,
    );
  });
});
