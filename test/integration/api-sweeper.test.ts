/**
 * The sweeper handler finishes tasks nobody polls: every task reaches a terminal state, every failed
 * one is refunded, and the ledger invariant holds. Tasks are submitted through the API handler and
 * then only read from the store (a GET would refresh them).
 */
import { sweepPendingTasks } from '../../functions/lifecycle/sweep';
import { logger } from '../../functions/observability/logger';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { allPendingTasks, getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as submitVideo } from '../../functions/submit-video/handler';
import { handler as sweeper } from '../../functions/sweeper/handler';
import {
  IMAGE_COST,
  imageRequest,
  invoke,
  jestTimeoutFor,
  lambdaContext,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  storedWhenEnded,
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
  VIDEO_COST,
  videoRequest,
} from '../support/service-harness';

const INTERVAL_MS = 1000;
const MAX_PENDING_SECONDS = 1800;

// Real servers and DynamoDB Local; some tests wait out a refresh interval or two, and the tasks' ends
// (the media worker on the stream) on the wall-clock budget of a loaded machine.
jest.setTimeout(jestTimeoutFor());

describe('the sweeper handler', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      refreshIntervalSeconds: INTERVAL_MS / 1000,
      maxPendingSeconds: MAX_PENDING_SECONDS,
      maxSendAttempts: 2,
      // The upstream as it is: Kie's create rate, enforced by the mock, kept to by the dispatcher.
      providerLimits: { createRateLimit: { requests: 20, windowSeconds: 10 } },
    });
  });

  afterEach(() => {
    h.provider.clearFaults();
  });

  afterAll(async () => {
    await h.dispose();
  });

  async function submit(kind: 'image' | 'video', user: TestUser, body: unknown): Promise<string> {
    const answer = await invoke(kind === 'image' ? submitImage : submitVideo, submitEvent(kind, user, body));
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  async function pendingCount(): Promise<number> {
    let count = 0;
    for await (const _ref of allPendingTasks(h.store)) count++;
    return count;
  }

  /**
   * Runs the sweeper handler, one refresh interval apart (the product's: each run may then query the
   * provider), until nothing is pending or {@link TASK_END_BUDGET_MS} of wall clock passed; returns the
   * runs (the caller asserts on what is left pending).
   */
  async function sweepUntilIdle(): Promise<number> {
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    let runs = 0;
    while (Date.now() < deadline && (await pendingCount()) > 0) {
      if (runs > 0) await sleep(INTERVAL_MS + 100);
      await sweeper({}, lambdaContext('sweeper'));
      runs++;
    }
    return runs;
  }

  it('drives tasks nobody polls to terminal states and refunds every failure', async () => {
    // Prepare: one user, tasks of every outcome; one task whose send fails once.
    const user = await h.createUser(200);
    const expected = new Map<string, { status: 1 | 2; errorCode?: string; cost: number }>();
    expected.set(await submit('image', user, imageRequest()), { status: 1, cost: IMAGE_COST });
    expected.set(await submit('image', user, imageRequest({}, { numOutputs: 3 })), { status: 1, cost: 3 * IMAGE_COST });
    expected.set(await submit('video', user, videoRequest()), { status: 1, cost: VIDEO_COST });
    expected.set(await submit('image', user, imageRequest({ mockOutcome: 'fail' })), {
      status: 2,
      errorCode: 'PROVIDER_ERROR',
      cost: IMAGE_COST,
    });
    expected.set(await submit('video', user, videoRequest({ mockOutcome: 'broken_result' })), {
      status: 2,
      errorCode: 'STORAGE_ERROR',
      cost: VIDEO_COST,
    });
    expected.set(await submit('image', user, imageRequest({ mockOutcome: 'reject' })), {
      status: 2,
      errorCode: 'PROVIDER_REJECTED',
      cost: IMAGE_COST,
    });
    h.provider.setFaults({ createFault: 'http_500', createFaultTimes: 1 });
    expected.set(await submit('image', user, imageRequest()), { status: 1, cost: IMAGE_COST });
    const pendingBefore = await pendingCount();

    // Act
    const runs = await sweepUntilIdle();

    // Assert
    expect(pendingBefore).toBeGreaterThan(0);
    expect(runs).toBeGreaterThan(0);
    expect(await pendingCount()).toBe(0);
    let spent = 0;
    for (const [taskId, want] of expected) {
      const task = await getTask(h.store, user.userId, taskId);
      expect(task).toMatchObject({ taskId, status: want.status, creditsRefunded: want.status === 2 });
      if (want.status === 1) {
        expect(task?.resultKeys?.length).toBeGreaterThan(0);
        spent += want.cost;
      } else {
        expect(task?.errorCode).toBe(want.errorCode);
      }
    }
    const ledger = await listLedger(h.store, user.userId);
    expect(ledger.filter((entry) => entry.kind === 'refund')).toHaveLength(3);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 200 - spent });
  });

  it('a run with nothing pending changes nothing', async () => {
    // Prepare
    const user = await h.createUser(10);
    const rejected = await submit('image', user, imageRequest({ mockOutcome: 'reject' }));
    await storedWhenEnded(h, user.userId, rejected);
    const createCalls = h.provider.stats.createTaskCalls;
    const queries = h.provider.stats.totalGetTaskCalls;

    // Act
    const report = await sweeper({}, lambdaContext('sweeper'));

    // Assert
    expect(report).toMatchObject({ seen: 0, completed: 0, failed: 0, pending: 0, errors: 0, truncated: false });
    // Nothing found: the local stack's timer may sweep less often (local/scheduled-runs.ts).
    expect(report.idle).toBe(true);
    expect(h.provider.stats.createTaskCalls).toBe(createCalls);
    expect(h.provider.stats.totalGetTaskCalls).toBe(queries);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 10 });
  });

  it('times out and refunds tasks pending past the maximum age (clock moved, nobody polling)', async () => {
    // Prepare: two users' tasks the mock would not finish for ten minutes.
    const alice = await h.createUser(10);
    const bob = await h.createUser(30);
    const aliceTask = await submit('image', alice, imageRequest({ mockDelayMs: 600_000 }));
    const bobTask = await submit('video', bob, videoRequest({ mockDelayMs: 600_000 }));
    const later = new Date(Date.now() + MAX_PENDING_SECONDS * 1000);

    // Act
    const report = await sweepPendingTasks(
      h.lifecycle(() => later),
      logger,
    );

    // Assert
    expect(report).toMatchObject({ seen: 2, failed: 2, pending: 0, errors: 0 });
    expect(await getTask(h.store, alice.userId, aliceTask)).toMatchObject({
      status: 2,
      errorCode: 'TIMEOUT',
      creditsRefunded: true,
    });
    expect(await getTask(h.store, bob.userId, bobTask)).toMatchObject({
      status: 2,
      errorCode: 'TIMEOUT',
      creditsRefunded: true,
    });
    expect(await auditUser(h.store, alice.userId)).toMatchObject({ ok: true, balance: 10 });
    expect(await auditUser(h.store, bob.userId)).toMatchObject({ ok: true, balance: 30 });
  });

  it("a task the provider never accepts fails after the dispatcher's bounded sends; the sweeper sends nothing", async () => {
    // Prepare
    const user = await h.createUser(10);
    const createCalls = h.provider.stats.createTaskCalls;
    // Answered refusals: an unanswered create (a reset, a timeout) is never sent again (outcome-unknown.test.ts).
    h.provider.setFaults({ createFault: 'http_500' });

    // Act
    const taskId = await submit('image', user, imageRequest());
    const report = await sweeper({}, lambdaContext('sweeper'));
    await storedWhenEnded(h, user.userId, taskId);

    // Assert: two sends (PROVIDER_MAX_SEND_ATTEMPTS), both the dispatcher's
    expect(report).toMatchObject({ errors: 0 });
    expect(h.provider.stats.createTaskCalls - createCalls).toBe(2);
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({
      status: 2,
      errorCode: 'PROVIDER_UNAVAILABLE',
      creditsRefunded: true,
    });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 10 });
  });

  // Last: its task stays at the provider for the rest of the file.
  it('a run that finds a task pending is not idle (the local timer keeps its interval)', async () => {
    // Prepare
    const user = await h.createUser(10);
    const taskId = await submit('image', user, imageRequest({ mockDelayMs: 600_000 }));

    // Act
    const report = await sweeper({}, lambdaContext('sweeper'));

    // Assert
    expect(report.seen).toBeGreaterThan(0);
    expect(report.idle).toBe(false);
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({ status: 0 });
  });
});
