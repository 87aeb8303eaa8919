/**
 * Provider faults from the mock provider (5xx, 429, 401, timeouts, malformed JSON, connection resets,
 * missing fields, unknown states, result URLs that hang), several tasks at once, through the real
 * handlers: every task either ends failed and refunded or stays pending and recovers once the fault
 * clears, and no credit is ever lost (audit ok; balance = initial - cost of the tasks not refunded).
 *
 * The media copy timeout is not settable through the environment (runtime/lifecycle-from-env.ts builds
 * the fs media store with the 120 s default), so the hanging-result case drives the lifecycle's refresh
 * with the handlers' own wiring and a media store whose copy deadline is short.
 */
import { TaskStatus } from '../../functions/core/task';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { copyResults } from '../../functions/lifecycle/copy-results';
import { refreshTask } from '../../functions/lifecycle/refresh-task';
import { sweepPendingTasks } from '../../functions/lifecycle/sweep';
import { createFsMediaStore } from '../../functions/media/fs-media-store';
import { sourcePolicyFromEnv } from '../../functions/media/source-policy';
import { logger } from '../../functions/observability/logger';
import { readCapacity } from '../../functions/store/dispatch-capacity';
import { auditUser } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as submitVideo } from '../../functions/submit-video/handler';
import type { MockFault } from '../../local/mock-provider';
import {
  getTaskEvent,
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
  videoRequest,
} from '../support/service-harness';

// Fault scenarios wait out refresh intervals and provider timeouts, one after the other (the faults
// are server-wide), then for the tasks' ends on the wall-clock budget of a loaded machine.
jest.setTimeout(jestTimeoutFor());

/**
 * The product's refresh interval here (PROVIDER_REFRESH_INTERVAL_SECONDS takes fractions): each poll
 * round below waits one, so that it may query the provider.
 */
const INTERVAL_MS = 500;
/**
 * The dispatcher's shortest backoff (PROVIDER_MIN_BACKOFF_MS, deployed 1 s): the pause after every
 * failed send and the first step of a refusal's doubling backoff. Short, so the many failed sends below
 * cost little; the rules on it are the deployed ones.
 */
const MIN_BACKOFF_MS = 200;
const MAX_SEND_ATTEMPTS = 2;
/**
 * Short, so the `timeout` fault costs little; the adapter reads PROVIDER_TIMEOUT_MS. Not shorter: on a
 * machine busy with the rest of the suite a healthy call can take most of a second, and at 700 ms such a
 * call counted as a failed send (a task that was to recover failed instead) or left a refresh undone.
 * Beside a second copy of the suite and other work (load 12 on two cores) a healthy create outlasted
 * 2 s: its outcome unknown, the task could not be confirmed while recordInfo was faulted, and failed
 * refunded instead of completing.
 */
const PROVIDER_TIMEOUT_MS = 4000;
const TASKS_AT_ONCE = 3;
/** How long a create whose answer never came waits for a callback (none here: callbacks are off). */
const UNKNOWN_OUTCOME_LIMIT_SECONDS = 1;
/**
 * Create faults that leave the outcome unknown: the request went out and no answer came back, or a
 * success status came back that names no task (unreadable, or without its id).
 */
const UNANSWERED: readonly MockFault[] = ['timeout', 'connection_reset', 'malformed_json', 'missing_fields'];
const INITIAL_CREDITS = 1000;

const FAULTS: MockFault[] = [
  'http_500',
  'http_429',
  'http_401',
  'timeout',
  'malformed_json',
  'connection_reset',
  'missing_fields',
];

describe('provider faults: tasks fail refunded or stay pending and recover; never a lost credit', () => {
  let h: ServiceHarness;
  let previousTimeout: string | undefined;

  beforeAll(async () => {
    previousTimeout = process.env.PROVIDER_TIMEOUT_MS;
    process.env.PROVIDER_TIMEOUT_MS = String(PROVIDER_TIMEOUT_MS);
    h = await startServiceHarness({
      refreshIntervalSeconds: INTERVAL_MS / 1000,
      maxSendAttempts: MAX_SEND_ATTEMPTS,
      minBackoffMs: MIN_BACKOFF_MS,
      unknownOutcomeLimitSeconds: UNKNOWN_OUTCOME_LIMIT_SECONDS,
      // The upstream as it is: Kie's create rate, enforced by the mock, kept to by the dispatcher.
      providerLimits: { createRateLimit: { requests: 20, windowSeconds: 10 } },
    });
  });

  afterEach(() => {
    h.provider.clearFaults();
  });

  afterAll(async () => {
    await h.dispose();
    if (previousTimeout === undefined) delete process.env.PROVIDER_TIMEOUT_MS;
    else process.env.PROVIDER_TIMEOUT_MS = previousTimeout;
  });

  /** Submits `count` tasks at once; every one must be accepted (202). */
  async function submitMany(user: TestUser, count: number, providerInput: Record<string, unknown> = {}) {
    const answers = await Promise.all(
      Array.from({ length: count }, (_, index) =>
        index % 2 === 0
          ? invoke(submitImage, submitEvent('image', user, imageRequest(providerInput)))
          : invoke(submitVideo, submitEvent('video', user, videoRequest(providerInput))),
      ),
    );
    for (const answer of answers) expect(answer.statusCode).toBe(202);
    return answers.map((answer) => String(answer.body.taskId));
  }

  /**
   * GETs every task (in parallel), one refresh interval apart (the product's, so that each round may
   * query the provider), until all are terminal: for `rounds` rounds when given (a fault that must
   * keep them pending that long), otherwise until they end or {@link TASK_END_BUDGET_MS} of wall clock
   * passed. The caller asserts on the last answers.
   */
  async function pollAll(user: TestUser, taskIds: string[], rounds?: number) {
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    const more = (round: number) => (rounds === undefined ? Date.now() < deadline : round < rounds);
    let tasks = await Promise.all(taskIds.map((id) => invoke(getTaskHandler, getTaskEvent(user, id))));
    for (let round = 1; more(round) && tasks.some((task) => task.body.status === 0); round++) {
      await sleep(INTERVAL_MS + 100);
      tasks = await Promise.all(taskIds.map((id) => invoke(getTaskHandler, getTaskEvent(user, id))));
    }
    for (const task of tasks) expect(task.statusCode).toBe(200);
    return tasks.map((task) => task.body);
  }

  /** The ledger invariant, and balance = initial - credits of the tasks that were not refunded. */
  async function expectNoLostCredit(user: TestUser, taskIds: string[]): Promise<void> {
    const records = await Promise.all(taskIds.map((id) => getTask(h.store, user.userId, id)));
    const charged = records.reduce((sum, task) => sum + (task && !task.creditsRefunded ? task.creditsUsed : 0), 0);
    for (const task of records) {
      expect(task).toBeDefined();
      // Failed means refunded, by construction (one transaction).
      if (task?.status === TaskStatus.FAILED) expect(task.creditsRefunded).toBe(true);
      if (task?.status !== TaskStatus.FAILED) expect(task?.creditsRefunded).toBe(false);
    }
    const audit = await auditUser(h.store, user.userId);
    expect(audit).toMatchObject({ ok: true, balance: INITIAL_CREDITS - charged });
  }

  // A 429 only says "later": it backs the dispatcher off and never fails a task (below).
  describe.each(FAULTS.filter((fault) => fault !== 'http_429'))('createTask answering %s', (fault) => {
    it('while it lasts, the tasks stay pending, then fail PROVIDER_UNAVAILABLE and are refunded', async () => {
      // Prepare
      const user = await h.createUser(INITIAL_CREDITS);
      h.provider.setFaults({ createFault: fault });

      // Act
      const taskIds = await submitMany(user, TASKS_AT_ONCE);
      const tasks = await pollAll(user, taskIds);

      // Assert
      for (const task of tasks) {
        expect(task).toMatchObject({ status: 2, errorCode: 'PROVIDER_UNAVAILABLE', creditsRefunded: true });
      }
      await expectNoLostCredit(user, taskIds);
      expect((await auditUser(h.store, user.userId)).balance).toBe(INITIAL_CREDITS);
    });

    if (UNANSWERED.includes(fault)) {
      // An unanswered create may have created the task upstream: it is never sent again
      // (outcome-unknown.test.ts); here the upstream had not, and no callback comes.
      it('once it clears, the task it met fails refunded at its limit, never sent again; the others complete', async () => {
        // Prepare
        const user = await h.createUser(INITIAL_CREDITS);
        const createCalls = h.provider.stats.createTaskCalls;
        h.provider.setFaults({ createFault: fault, createFaultTimes: 1 });

        // Act
        const taskIds = await submitMany(user, TASKS_AT_ONCE);
        const tasks = await pollAll(user, taskIds);

        // Assert: one create per task; the unanswered one failed and refunded, the others completed
        expect(tasks.filter((task) => task.status === 2)).toEqual([
          expect.objectContaining({ errorCode: 'PROVIDER_UNAVAILABLE', creditsRefunded: true }),
        ]);
        expect(tasks.filter((task) => task.status === 1)).toHaveLength(TASKS_AT_ONCE - 1);
        expect(h.provider.stats.createTaskCalls - createCalls).toBe(TASKS_AT_ONCE);
        await expectNoLostCredit(user, taskIds);
      });
      return;
    }

    it('once it clears, the same tasks are sent again and complete, charged once', async () => {
      // Prepare: the fault hits the dispatcher's first send, then clears.
      const user = await h.createUser(INITIAL_CREDITS);
      const createCalls = h.provider.stats.createTaskCalls;
      h.provider.setFaults({ createFault: fault, createFaultTimes: 1 });

      // Act
      const taskIds = await submitMany(user, TASKS_AT_ONCE);
      const afterSubmit = await Promise.all(taskIds.map((id) => getTask(h.store, user.userId, id)));
      const tasks = await pollAll(user, taskIds);

      // Assert: the failed send was made again (a dispatcher that claimed a task before the pause began
      // may still send it), each task completed once and is charged once
      for (const task of afterSubmit) expect(task).toMatchObject({ status: 0, creditsRefunded: false });
      for (const task of tasks) expect(task).toMatchObject({ status: 1, creditsRefunded: false });
      expect(h.provider.stats.createTaskCalls - createCalls).toBeGreaterThanOrEqual(TASKS_AT_ONCE + 1);
      expect(h.provider.stats.createTaskCalls - createCalls).toBeLessThanOrEqual(2 * TASKS_AT_ONCE);
      await expectNoLostCredit(user, taskIds);
    });
  });

  describe('createTask answering 429 (over capacity)', () => {
    it('the tasks stay queued and charged, the dispatcher backs off instead of retrying at once, then they complete', async () => {
      // Prepare
      const user = await h.createUser(INITIAL_CREDITS);
      const createCalls = h.provider.stats.createTaskCalls;
      h.provider.setFaults({ createFault: 'http_429' });

      // Act: polls (each waits one refresh interval) while the upstream refuses, until the dispatcher's
      // backoff has doubled twice (its state, not a time: the refusals that led there are counted)
      const taskIds = await submitMany(user, TASKS_AT_ONCE);
      let during = await pollAll(user, taskIds, 1);
      const deadline = Date.now() + TASK_END_BUDGET_MS;
      const doubledTwice = async () =>
        h.provider.stats.createTaskCalls > createCalls &&
        ((await readCapacity(h.store)).backoffMs ?? 0) >= 4 * MIN_BACKOFF_MS;
      while (!(await doubledTwice()) && Date.now() < deadline) {
        await sleep(INTERVAL_MS + 100);
        during = await pollAll(user, taskIds, 1);
      }
      const backoffMs = (await readCapacity(h.store)).backoffMs;
      const refusedCalls = h.provider.stats.createTaskCalls - createCalls;
      await expectNoLostCredit(user, taskIds);
      h.provider.clearFaults();
      const after = await pollAll(user, taskIds);

      // Assert: a backoff of the shortest one, then twice that, ...: a handful of refused calls (those
      // sent at once before the first backoff was written, then one per backoff), not one per poll or task
      for (const task of during) expect(task).toMatchObject({ status: 0, creditsRefunded: false });
      expect(backoffMs).toBeGreaterThanOrEqual(4 * MIN_BACKOFF_MS);
      expect(refusedCalls).toBeGreaterThan(0);
      expect(refusedCalls).toBeLessThanOrEqual(6);
      for (const task of after) expect(task).toMatchObject({ status: 1, creditsRefunded: false });
      await expectNoLostCredit(user, taskIds);
    });
  });

  describe.each(FAULTS)('recordInfo answering %s', (fault) => {
    it('the tasks stay pending and charged while it lasts, and complete once it clears', async () => {
      // Prepare: the tasks reach the provider; only reading them fails.
      const user = await h.createUser(INITIAL_CREDITS);
      const taskIds = await submitMany(user, TASKS_AT_ONCE);
      h.provider.setFaults({ getFault: fault });

      // Act
      const during = await pollAll(user, taskIds, 3);
      const callsDuring = h.provider.stats.totalGetTaskCalls;
      await expectNoLostCredit(user, taskIds);
      h.provider.clearFaults();
      const after = await pollAll(user, taskIds);

      // Assert
      for (const task of during) expect(task).toMatchObject({ status: 0, creditsRefunded: false });
      expect(callsDuring).toBeGreaterThan(0);
      for (const task of after) expect(task).toMatchObject({ status: 1, creditsRefunded: false });
      await expectNoLostCredit(user, taskIds);
    });
  });

  it('a fault that never clears ends in TIMEOUT at the maximum age, refunded by the sweeper', async () => {
    // Prepare
    const user = await h.createUser(INITIAL_CREDITS);
    const taskIds = await submitMany(user, TASKS_AT_ONCE);
    h.provider.setFaults({ getFault: 'http_500' });
    await pollAll(user, taskIds, 2);
    const later = new Date(Date.now() + 24 * 3600 * 1000);

    // Act
    await sweepPendingTasks(
      h.lifecycle(() => later),
      logger,
    );

    // Assert
    const tasks = await Promise.all(taskIds.map((id) => getTask(h.store, user.userId, id)));
    for (const task of tasks) expect(task).toMatchObject({ status: 2, errorCode: 'TIMEOUT', creditsRefunded: true });
    await expectNoLostCredit(user, taskIds);
  });

  it('a state outside the protocol leaves the tasks pending and charged, then TIMEOUT refunds them', async () => {
    // Prepare
    const user = await h.createUser(INITIAL_CREDITS);
    const taskIds = await submitMany(user, TASKS_AT_ONCE, { mockOutcome: 'unknown_state' });

    // Act
    const during = await pollAll(user, taskIds, 3);
    await expectNoLostCredit(user, taskIds);
    const later = new Date(Date.now() + 24 * 3600 * 1000);
    await sweepPendingTasks(
      h.lifecycle(() => later),
      logger,
    );

    // Assert
    for (const task of during) expect(task).toMatchObject({ status: 0, creditsRefunded: false });
    const tasks = await Promise.all(taskIds.map((id) => getTask(h.store, user.userId, id)));
    for (const task of tasks) expect(task).toMatchObject({ status: 2, errorCode: 'TIMEOUT', creditsRefunded: true });
    await expectNoLostCredit(user, taskIds);
  });

  it('a result URL that never answers fails the copy at its deadline: STORAGE_ERROR, refunded', async () => {
    // Prepare: the handlers' wiring, with a media store whose copy deadline is short.
    const user = await h.createUser(INITIAL_CREDITS);
    const taskIds = await submitMany(user, TASKS_AT_ONCE, { mockOutcome: 'hang_result' });
    const lc = {
      ...h.lifecycle(() => new Date()),
      media: createFsMediaStore({
        dir: h.mediaDir,
        publicBaseUrl: h.mediaBaseUrl,
        timeoutMs: 500,
        sourcePolicy: sourcePolicyFromEnv(h.env),
      }),
    };
    // The product's refresh interval: the refreshes below may then query the provider.
    await sleep(INTERVAL_MS + 100);

    // Act: several refreshes of the same tasks at once, as racing pollers and a sweeper would, and the
    // same copies by the media worker (on the stream) and directly, with the short deadline. Round after
    // round, one refresh interval apart, until every task has ended: on a loaded machine the provider may
    // not have finished a task by the first round, and nothing else here refreshes it.
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    let open = taskIds;
    while (open.length > 0 && Date.now() < deadline) {
      const stored = await Promise.all(open.map((id) => getTask(h.store, user.userId, id)));
      await Promise.all(
        stored.flatMap((task) =>
          task?.status === 0 ? [refreshTask(lc, task, logger), refreshTask(lc, task, logger)] : [],
        ),
      );
      await Promise.all(open.map((taskId) => copyResults(lc, { userId: user.userId, taskId }, logger)));
      const after = await Promise.all(open.map((id) => getTask(h.store, user.userId, id)));
      open = open.filter((_, index) => after[index]?.status === 0);
      if (open.length > 0) await sleep(INTERVAL_MS + 100);
    }

    // Assert
    const tasks = await Promise.all(taskIds.map((id) => storedWhenEnded(h, user.userId, id)));
    for (const task of tasks) {
      expect(task).toMatchObject({ status: 2, errorCode: 'STORAGE_ERROR', creditsRefunded: true });
      // Clients read the stable message; the cause (with the source's address) is in the logs only.
      expect(task?.errorMessage).toBe('The result could not be stored');
    }
    await expectNoLostCredit(user, taskIds);
  });

  it('a mixed load under flapping faults: every task ends, and the balance matches what was kept', async () => {
    // Prepare: outcomes of every kind, submitted at once while both calls fail now and then.
    const user = await h.createUser(INITIAL_CREDITS);
    const outcomes = ['success', 'fail', 'reject', 'broken_result', 'success', 'fail'];
    // One failed create (answered: an unanswered one is never resent, and fails at its limit): with
    // MAX_SEND_ATTEMPTS 2, two failures may both meet the oldest task (it goes back
    // to its place in the queue), which then rightly fails PROVIDER_UNAVAILABLE whatever its outcome was
    // to be (tested on its own above); which task is oldest depends on the machine's timing.
    h.provider.setFaults({
      createFault: 'http_500',
      createFaultTimes: 1,
      getFault: 'http_500',
      getFaultTimes: 3,
    });

    // Act
    const taskIds = (
      await Promise.all(outcomes.map((mockOutcome) => submitMany(user, 1, { mockOutcome, mockDelayMs: 200 })))
    ).flat();
    h.provider.setFaults({ getFault: 'malformed_json', getFaultTimes: 2 });
    const tasks = await pollAll(user, taskIds);

    // Assert
    for (const task of tasks) expect([1, 2]).toContain(task.status);
    const byOutcome = new Map(taskIds.map((id, index) => [id, outcomes[index]]));
    for (const task of tasks) {
      const outcome = byOutcome.get(String(task.taskId));
      if (outcome === 'success') expect(task.status).toBe(1);
      else expect(task).toMatchObject({ status: 2, creditsRefunded: true });
    }
    await expectNoLostCredit(user, taskIds);
  });
});
