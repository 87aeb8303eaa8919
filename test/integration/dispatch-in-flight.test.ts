/**
 * The cap on tasks in flight (docs/design/dispatching.md) on real parts: DynamoDB Local, the
 * submit and GET handlers, the dispatcher loop, the media worker on the stream, and the mock provider
 * over HTTP refusing creates beyond `MOCK_PROVIDER_MAX_IN_FLIGHT`. The service is told the same cap
 * (`PROVIDER_MAX_IN_FLIGHT`), so the mock never refuses: what is asserted is the mock's own count of
 * tasks in flight, its refusals, the tasks' ends and the money, never a duration.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { handler as dispatcher } from '../../functions/dispatcher/handler';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { IN_FLIGHT_WAIT_MS } from '../../functions/lifecycle/dispatch';
import { setMetricSink } from '../../functions/observability/metrics';
import { readCapacity } from '../../functions/store/dispatch';
import { auditUser } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import {
  IMAGE_COST,
  imageRequest,
  invoke,
  jestTimeoutFor,
  pollUntilTerminal,
  type ServiceHarness,
  startServiceHarness,
  storedWhenSent,
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
} from '../support/service-harness';

const CAP = 2;
const INTERVAL_MS = 1000;
const CAPACITY_KEY = { PK: 'DISPATCH#CAPACITY', SK: 'CREATE' };

jest.setTimeout(jestTimeoutFor(2));

describe('the cap on tasks in flight', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      refreshIntervalSeconds: INTERVAL_MS / 1000,
      providerLimits: { maxInFlight: CAP },
    });
  });

  afterAll(async () => {
    await h.dispose();
  });

  async function submit(user: TestUser, providerInput: Record<string, unknown> = {}): Promise<string> {
    const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(providerInput)));
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  /** Polls every task through GET (each refresh may finish one) until all have ended. */
  async function allEnded(user: TestUser, taskIds: string[]) {
    return Promise.all(
      taskIds.map((taskId) => pollUntilTerminal(getTaskHandler, user, taskId, { intervalMs: INTERVAL_MS + 100 })),
    );
  }

  /** Writes entries into the capacity item's `running` map, as a dispatcher's take-and-hold leaves them. */
  async function writeRunning(entries: Record<string, { sentAt: number; userId?: string }>): Promise<void> {
    const keys = Object.keys(entries);
    await h.store.doc.send(
      new UpdateCommand({
        TableName: h.store.tableName,
        Key: CAPACITY_KEY,
        UpdateExpression: `SET ${keys.map((_, i) => `#running.#k${i} = :v${i}`).join(', ')}`,
        ExpressionAttributeNames: {
          '#running': 'running',
          ...Object.fromEntries(keys.map((key, i) => [`#k${i}`, key])),
        },
        ExpressionAttributeValues: Object.fromEntries(keys.map((key, i) => [`:v${i}`, entries[key]])),
      }),
    );
  }

  /** The capacity item's `running` map, read until `done` holds (or the task-end budget passes). */
  async function runningWhen(done: (keys: string[]) => boolean): Promise<string[]> {
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    let keys = Object.keys((await readCapacity(h.store)).running ?? {});
    while (!done(keys) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      keys = Object.keys((await readCapacity(h.store)).running ?? {});
    }
    return keys;
  }

  it('keeps at most the cap at the provider: 6 tasks, never more than 2 in flight, none refused, all completed, money exact', async () => {
    // Prepare
    const user = await h.createUser(100);
    h.provider.stats.reset();

    // Act
    const taskIds: string[] = [];
    for (let i = 0; i < 6; i++) taskIds.push(await submit(user, { mockDelayMs: 1_500 }));
    const ended = await allEnded(user, taskIds);
    const stats = (await (await fetch(`${h.provider.url}/__stats`)).json()) as Record<string, unknown>;

    // Assert
    expect(ended.map((answer) => answer.body.status)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(stats).toMatchObject({ createTaskCalls: 6, createTaskRefused: 0, tasksCreated: 6 });
    expect(stats.peakInFlight).toBeLessThanOrEqual(CAP);
    expect(stats.peakInFlight).toBeGreaterThanOrEqual(1);
    for (const taskId of taskIds) {
      expect(await getTask(h.store, user.userId, taskId)).toMatchObject({ status: 1, inFlightSlot: true });
    }
    expect(await runningWhen((keys) => keys.length === 0)).toEqual([]);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - 6 * IMAGE_COST });
  });

  it("heals entries whose finish's removal was lost: the cap held by ended tasks frees up and the next task is sent", async () => {
    // Prepare: two tasks that ended, still listed as in flight (their removals lost to a crash), and a
    // slot reserved long ago by a dispatcher that died before claiming its task
    const user = await h.createUser(100);
    const done = [await submit(user, { mockDelayMs: 100 }), await submit(user, { mockDelayMs: 100 })];
    await allEnded(user, done);
    await runningWhen((keys) => keys.length === 0);
    const longAgo = Date.now() - 3_600_000;
    await writeRunning({
      [done[0] ?? '']: { sentAt: longAgo, userId: user.userId },
      [done[1] ?? '']: { sentAt: longAgo, userId: user.userId },
      slot999999: { sentAt: longAgo },
    });
    h.provider.stats.reset();

    // Act
    const next = await submit(user, { mockDelayMs: 100 });
    const [answer] = await allEnded(user, [next]);

    // Assert
    expect(answer?.body.status).toBe(1);
    expect(await runningWhen((keys) => keys.length === 0)).toEqual([]);
    expect(h.provider.stats.createTaskRefused).toBe(0);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - 3 * IMAGE_COST });
  });

  it('keeps an entry of a task still at the provider while healing', async () => {
    // Prepare: one task running long, one stale entry of an ended task: the cap (2) is reached
    const user = await h.createUser(100);
    const ended = await submit(user, { mockDelayMs: 100 });
    await allEnded(user, [ended]);
    await runningWhen((keys) => keys.length === 0);
    const long = await submit(user, { mockDelayMs: 600_000 });
    expect((await storedWhenSent(h, user.userId, long))?.providerTaskId).toEqual(expect.any(String));
    await writeRunning({ [ended]: { sentAt: Date.now() - 3_600_000, userId: user.userId } });

    // Act: the next task can only go once the stale entry is healed
    const next = await submit(user, { mockDelayMs: 100 });
    const [answer] = await allEnded(user, [next]);

    // Assert
    expect(answer?.body.status).toBe(1);
    expect(await runningWhen((keys) => keys.length === 1)).toEqual([long]);
    expect(h.provider.stats.createTaskRefused).toBe(0);
  });

  it('at the cap the dispatcher sends nothing, answers a short wait and reports the age of the queue; it sends once a place frees up', async () => {
    // Prepare: the cap held by two slots just taken (fresh: no heal touches them), the loop stopped
    const user = await h.createUser(10);
    const metricLines: string[] = [];
    setMetricSink((line) => metricLines.push(line));
    try {
      const { atCap, taskId, stats } = await h.withoutDispatcher(async () => {
        await writeRunning({ slot900001: { sentAt: Date.now() }, slot900002: { sentAt: Date.now() } });
        // Nothing queued: idle, no wait (deployed, a wait would wake it every second until a task ends)
        const empty = await dispatcher({ Records: [] });
        expect(empty).toMatchObject({ idle: true, sent: 0, oldestQueuedAgeMs: 0 });
        expect(empty.waitMs).toBeUndefined();
        const queued = await submit(user, { mockDelayMs: 100 });
        h.provider.stats.reset();

        // Act
        const run = await dispatcher({ Records: [] });
        const createCalls = h.provider.stats.createTaskCalls;
        await h.store.doc.send(
          new UpdateCommand({
            TableName: h.store.tableName,
            Key: CAPACITY_KEY,
            UpdateExpression: 'REMOVE #running.#a, #running.#b',
            ExpressionAttributeNames: { '#running': 'running', '#a': 'slot900001', '#b': 'slot900002' },
          }),
        );
        return { atCap: run, taskId: queued, stats: { createCalls } };
      });
      const [answer] = await allEnded(user, [taskId]);

      // Assert
      expect(atCap).toMatchObject({ sent: 0, failed: 0, idle: false, waitMs: IN_FLIGHT_WAIT_MS });
      expect(atCap.oldestQueuedAgeMs).toBeGreaterThanOrEqual(0);
      expect(stats.createCalls).toBe(0);
      const ages = metricLines.map((line) => JSON.parse(line)).filter((line) => 'DispatchQueueAge' in line);
      expect(ages).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            DispatchQueueAge: atCap.oldestQueuedAgeMs,
            _aws: expect.objectContaining({
              CloudWatchMetrics: [
                expect.objectContaining({ Metrics: [{ Name: 'DispatchQueueAge', Unit: 'Milliseconds' }] }),
              ],
            }),
          }),
        ]),
      );
      expect(answer?.body.status).toBe(1);
      expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 10 - IMAGE_COST });
    } finally {
      setMetricSink(undefined);
    }
  });

  it('a task the provider refused leaves the count with its refund', async () => {
    // Prepare
    const user = await h.createUser(10);
    const before = Object.keys((await readCapacity(h.store)).running ?? {});

    // Act
    const taskId = await submit(user, { mockOutcome: 'reject' });
    const [answer] = await allEnded(user, [taskId]);

    // Assert
    expect(answer?.body).toMatchObject({ status: 2, errorCode: 'PROVIDER_REJECTED' });
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({ inFlightSlot: true, creditsRefunded: true });
    expect(await runningWhen((keys) => !keys.includes(taskId))).toEqual(before);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 10 });
  });

  it('without a cap configured, no finish touches the capacity item and no task carries the flag', async () => {
    await h.withEnv({ PROVIDER_MAX_IN_FLIGHT: undefined }, async () => {
      // Prepare: an entry under the task's id, which a finish with a cap would remove
      const user = await h.createUser(10);
      const taskId = await submit(user, { mockDelayMs: 1_000 });
      const sent = await storedWhenSent(h, user.userId, taskId);
      await writeRunning({ [taskId]: { sentAt: Date.now(), userId: user.userId } });

      // Act
      const [answer] = await allEnded(user, [taskId]);

      // Assert
      expect(sent?.providerTaskId).toEqual(expect.any(String));
      expect(answer?.body.status).toBe(1);
      const stored = await getTask(h.store, user.userId, taskId);
      expect(stored?.inFlightSlot).toBeUndefined();
      expect(Object.keys((await readCapacity(h.store)).running ?? {})).toContain(taskId);
      expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 10 - IMAGE_COST });
    });
  });
});
