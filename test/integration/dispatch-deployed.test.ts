/**
 * The dispatcher driven as deployed (local/deployed-driver.ts): woken only by the table stream's
 * filtered inserts and by its SQS wake-ups (whole-second delays, at most 900 s, two invocations at
 * once), never by a loop that looks every 50 ms. What the fast loop hides shows here: a run that stops
 * with work left must schedule its wake-up, a wait longer than SQS's 900 s must be chained, and a task
 * the sweeper puts back in the queue (an update, which the stream's filter passes to no one) must be
 * woken for by the sweeper. DynamoDB Local, the mock provider over HTTP with its real limits, the real
 * handlers; the SQS client is the dispatcher's own, talking to the driver's queue over HTTP.
 */
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { QUEUED_STALE_MS } from '../../functions/lifecycle/sweep';
import { nextQueued } from '../../functions/store/dispatch';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as sweeper } from '../../functions/sweeper/handler';
import { scaledClock } from '../../local/deployed-driver';
import { atScale } from '../support/scale';
import {
  imageRequest,
  invoke,
  jestTimeoutFor,
  lambdaContext,
  pollUntilTerminal,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  submitEvent,
  TASK_END_BUDGET_MS,
  type TestUser,
} from '../support/service-harness';

/** The dispatcher's safety margin (functions/dispatcher/handler.ts) plus 400 ms: each run has 400 ms of steps. */
const SHORT_TIMEOUT_MS = 10_400;

async function submit(user: TestUser): Promise<string> {
  const answer = await invoke(submitImage, submitEvent('image', user, imageRequest()));
  expect(answer.statusCode).toBe(202);
  return String(answer.body.taskId);
}

/** Reads until every task has reached the provider (or the wall-clock budget ran out); returns those that have. */
async function sentWithin(h: ServiceHarness, tasks: Array<{ userId: string; taskId: string }>, budgetMs: number) {
  const deadline = Date.now() + budgetMs;
  const sent = new Set<string>();
  while (sent.size < tasks.length && Date.now() < deadline) {
    for (const { userId, taskId } of tasks) {
      if (sent.has(taskId)) continue;
      const stored = await getTask(h.store, userId, taskId);
      if (stored?.providerTaskId !== undefined) sent.add(taskId);
    }
    if (sent.size < tasks.length) await sleep(200);
  }
  return sent;
}

describe('the dispatcher under its deployed triggers, each run with a short budget', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({ dispatchDriver: 'deployed', deployed: { timeoutMs: SHORT_TIMEOUT_MS } });
  });

  afterAll(async () => {
    await h?.dispose();
  });

  test(
    'a burst is sent to the end: each run its budget stops schedules the next, and no wake-up is lost',
    async () => {
      // Prepare
      const users = await Promise.all([h.createUser(1000), h.createUser(1000), h.createUser(1000)]);
      const perUser = atScale(5, 40);
      h.provider.stats.reset();

      // Act: the burst's inserts reach the dispatcher in a few stream batches, each run sends what its
      // budget allows; what is left waits for the wake-ups the runs schedule.
      const tasks = (
        await Promise.all(
          users.map(async (user) => {
            const ids: string[] = [];
            for (let i = 0; i < perUser; i++) ids.push(await submit(user));
            return ids.map((taskId) => ({ userId: user.userId, taskId }));
          }),
        )
      ).flat();
      const sent = await sentWithin(h, tasks, TASK_END_BUDGET_MS);
      // A task's queue entry goes just after its provider id is recorded.
      const deadline = Date.now() + TASK_END_BUDGET_MS;
      let left = await nextQueued(h.store, { limit: 1 });
      while (left.length > 0 && Date.now() < deadline) {
        await sleep(200);
        left = await nextQueued(h.store, { limit: 1 });
      }

      // Assert
      expect(sent.size).toBe(tasks.length);
      expect(h.provider.stats.createTaskCalls).toBe(tasks.length);
      expect(left).toEqual([]);
      expect(h.driver()?.counts().sqs).toBeGreaterThan(0);
      expect(
        h
          .driver()
          ?.sent()
          .every((message) => Number.isInteger(message.delaySeconds)),
      ).toBe(true);
    },
    jestTimeoutFor(1),
  );

  test(
    'a task reaches its end under the deployed triggers: sent by the dispatcher, results copied by the media worker on its deployed mapping',
    async () => {
      // Prepare
      const user = await h.createUser(100);

      // Act
      const taskId = await submit(user);
      const answer = await pollUntilTerminal(getTaskHandler, user, taskId, { intervalMs: 1_000 });

      // Assert
      expect(answer.body).toMatchObject({ status: 1 });
      const stored = await getTask(h.store, user.userId, taskId);
      expect(stored?.resultKeys?.length).toBeGreaterThan(0);
    },
    jestTimeoutFor(1),
  );

  test(
    'a queued task whose wake-up was lost is sent once the sweeper sees it waiting: the sweeper wakes the dispatcher',
    async () => {
      // Prepare: a task queued while no trigger ran, whose insert the mapping never saw (the driver
      // starts again from the stream's newest record): nothing would send it.
      const user = await h.createUser(100);
      const taskId = await h.withoutDispatcher(() => submit(user));
      const driver = h.driver();
      const wakesBefore = driver?.sent().length ?? 0;

      // Act: the sweeper runs once the task has waited past the stale age.
      const waitedLong = () => new Date(Date.now() + QUEUED_STALE_MS + 5_000);
      const report = await h.withClock(waitedLong, () => sweeper({}, lambdaContext('sweeper')));
      const sent = await sentWithin(h, [{ userId: user.userId, taskId }], TASK_END_BUDGET_MS);

      // Assert
      expect(report).toMatchObject({ queuedStale: 1, dispatcherWoken: true });
      expect(driver?.sent().slice(wakesBefore)).toContainEqual(expect.objectContaining({ delaySeconds: 0 }));
      expect(sent.has(taskId)).toBe(true);
      expect(await getTask(h.store, user.userId, taskId)).toMatchObject({ stage: 'running' });
    },
    jestTimeoutFor(1),
  );
});

describe('a wait longer than SQS allows (900 s) is chained', () => {
  // 100 times real time: SQS's seconds, the service's and the mock provider's clocks all agree.
  const SECOND_MS = 10;
  const clock = scaledClock(SECOND_MS);
  const RATE = { requests: 1, windowSeconds: 1200 } as const;
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      dispatchDriver: 'deployed',
      deployed: { secondMs: SECOND_MS },
      providerLimits: { createRateLimit: RATE },
      providerClock: clock.epochMs,
      maxPendingSeconds: 86_400,
    });
  });

  afterAll(async () => {
    await h?.dispose();
  });

  test(
    'the first wake-up asks SQS for 900 s and records that, the run it wakes asks for the rest, and the task is sent',
    async () => {
      await h.withClock(clock.now, async () => {
        // Prepare
        const user = await h.createUser(100);
        const first = await submit(user);
        const firstSent = await sentWithin(h, [{ userId: user.userId, taskId: first }], TASK_END_BUDGET_MS);

        // Act: the next task waits the upstream's 1,200 s window.
        const second = await submit(user);
        const secondSent = await sentWithin(h, [{ userId: user.userId, taskId: second }], TASK_END_BUDGET_MS);

        // Assert
        expect(firstSent.has(first)).toBe(true);
        const wakes = h.driver()?.sent() ?? [];
        const longest = wakes.find((message) => message.delaySeconds === 900);
        expect(longest).toBeDefined();
        const recorded = JSON.parse(longest?.body ?? '{}') as { wakeAt?: number };
        // What was recorded is what SQS was asked for: at most 900 s after the message was sent.
        expect(recorded.wakeAt).toBeLessThanOrEqual(clock.at(longest?.sentAt ?? 0) + 900_000);
        // The run it woke asked again for what was left (a second, shorter wake-up), then sent the task.
        const index = longest ? wakes.indexOf(longest) : -1;
        expect(index).toBeGreaterThanOrEqual(0);
        expect(index).toBeLessThan(wakes.length - 1);
        expect(secondSent.has(second)).toBe(true);
        expect(h.provider.stats.createTaskCalls).toBe(2);
      });
    },
    jestTimeoutFor(2),
  );
});
