/**
 * The 30 s rule through the GET handler: a pending task triggers at most one provider query per
 * interval, whatever the number of concurrent pollers. The interval here is the deployed 30 s, so
 * "within the interval" needs no timing luck; "after the interval" moves the lifecycle's clock. The
 * acceptance counts as the first contact with the provider, so a task is first due for a query one
 * interval after it was accepted.
 */
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { refreshTask } from '../../functions/lifecycle/refresh-task';
import { logger } from '../../functions/observability/logger';
import { storeFromEnv } from '../../functions/store/from-env';
import { auditUser } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { attachRequestCounter } from '../support/request-counter';
import {
  getTaskEvent,
  IMAGE_COST,
  imageRequest,
  invoke,
  type ServiceHarness,
  startServiceHarness,
  storedWhenSent,
  submitEvent,
  type TestUser,
} from '../support/service-harness';

const INTERVAL_SECONDS = 30;
const POLLERS = 20;

// Real servers and DynamoDB Local; some tests wait out a refresh interval or two.
jest.setTimeout(30_000);

describe('the refresh interval through the GET handler', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({ refreshIntervalSeconds: INTERVAL_SECONDS });
  });

  afterAll(async () => {
    await h.dispose();
  });

  /**
   * A pending task the mock will not finish for ten minutes, its provider task id, and `dueAt`: one
   * interval after its acceptance, when its first provider query may be claimed.
   */
  async function pendingTask(user: TestUser): Promise<{ taskId: string; providerTaskId: string; dueAt: Date }> {
    const answer = await invoke(submitImage, submitEvent('image', user, imageRequest({ mockDelayMs: 600_000 })));
    const taskId = String(answer.body.taskId);
    const stored = await storedWhenSent(h, user.userId, taskId);
    if (!stored?.providerTaskId) throw new Error('the dispatcher did not send the task');
    const dueAt = new Date(Date.parse(stored.createdAt) + INTERVAL_SECONDS * 1000);
    return { taskId, providerTaskId: stored.providerTaskId, dueAt };
  }

  const getMany = (user: TestUser, taskId: string) =>
    Promise.all(Array.from({ length: POLLERS }, () => invoke(getTaskHandler, getTaskEvent(user, taskId))));

  it(`${POLLERS} concurrent GETs of a task due for a query make exactly one provider query`, async () => {
    // Prepare: never queried, and the clock one interval after the acceptance, so a query is due.
    const user = await h.createUser(10);
    const { taskId, providerTaskId, dueAt } = await pendingTask(user);

    // Act
    const answers = await h.withClock(
      () => dueAt,
      () => getMany(user, taskId),
    );

    // Assert
    expect(h.provider.stats.getTaskCalls(providerTaskId)).toBe(1);
    for (const answer of answers) {
      expect(answer.statusCode).toBe(200);
      expect(answer.body).toMatchObject({ taskId, status: 0 });
    }
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 10 - IMAGE_COST });
  });

  it('GETs within the interval make no provider query', async () => {
    // Prepare: a GET once the task is due claims the first query.
    const user = await h.createUser(10);
    const { taskId, providerTaskId, dueAt } = await pendingTask(user);
    await h.withClock(
      () => dueAt,
      () => invoke(getTaskHandler, getTaskEvent(user, taskId)),
    );
    const queries = h.provider.stats.getTaskCalls(providerTaskId);
    // The last instant of that query's interval.
    const withinInterval = new Date(dueAt.getTime() + INTERVAL_SECONDS * 1000 - 1);

    // Act
    const { concurrent, sequential } = await h.withClock(
      () => withinInterval,
      async () => {
        const concurrent = await getMany(user, taskId);
        const sequential = [];
        for (let i = 0; i < 5; i++) sequential.push(await invoke(getTaskHandler, getTaskEvent(user, taskId)));
        return { concurrent, sequential };
      },
    );

    // Assert
    expect(queries).toBe(1);
    expect(h.provider.stats.getTaskCalls(providerTaskId)).toBe(1);
    for (const answer of [...concurrent, ...sequential]) expect(answer.body).toMatchObject({ status: 0 });
  });

  it(`once the interval has passed, ${POLLERS} racing refreshes make exactly one more query`, async () => {
    // Prepare: a GET once the task is due claims the first query.
    const user = await h.createUser(10);
    const { taskId, providerTaskId, dueAt } = await pendingTask(user);
    await h.withClock(
      () => dueAt,
      () => invoke(getTaskHandler, getTaskEvent(user, taskId)),
    );
    const checked = await getTask(h.store, user.userId, taskId);
    // Acceptance already set lastCheckedAt; only the claim moves it to dueAt.
    if (!checked || checked.lastCheckedAt !== dueAt.getTime()) throw new Error('the first GET did not claim a query');
    const later = new Date(dueAt.getTime() + INTERVAL_SECONDS * 1000);
    const lc = h.lifecycle(() => later);

    // Act
    const results = await Promise.all(Array.from({ length: POLLERS }, () => refreshTask(lc, checked, logger)));

    // Assert
    expect(h.provider.stats.getTaskCalls(providerTaskId)).toBe(2);
    for (const result of results) expect(result.status).toBe(0);
  });

  it('a GET within the interval costs one DynamoDB request: the read, no claim attempt', async () => {
    // Prepare
    const user = await h.createUser(10);
    const { taskId } = await pendingTask(user);
    await invoke(getTaskHandler, getTaskEvent(user, taskId));

    // Act: the dispatcher's own requests (it shares the client) are left out of the count
    const { answer, counter } = await h.withoutDispatcher(async () => {
      const counting = attachRequestCounter(storeFromEnv().doc);
      const read = await invoke(getTaskHandler, getTaskEvent(user, taskId));
      counting.detach();
      return { answer: read, counter: counting };
    });

    // Assert
    expect(answer.body).toMatchObject({ status: 0 });
    expect(counter.counts).toEqual({ GetItemCommand: 1 });
  });
});
