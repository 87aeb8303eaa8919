/**
 * The upstream's refusals through the real dispatcher loop (docs/design/dispatching.md, "Backoff"):
 * DynamoDB Local, the handlers, and the mock provider over HTTP with Kie's create rate enforced. A
 * `Retry-After` of an hour is honoured only up to the bound; a refusal of one model backs off that model
 * only, and its tasks end `PROVIDER_UNAVAILABLE`, refunded, after their refusal limit; an HTML
 * maintenance page is a refusal like any 503. Money is exact throughout (ledger audit).
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { TaskRecord } from '../../functions/core/task';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { readCapacity } from '../../functions/store/dispatch';
import { auditUser } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as submitVideo } from '../../functions/submit-video/handler';
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
  type TestUser,
  VIDEO_COST,
  videoRequest,
} from '../support/service-harness';

jest.setTimeout(jestTimeoutFor(2));

/** Short, so a test waits seconds for what deployed is a minute; the hour asked is far beyond either. */
const MAX_RETRY_AFTER_SECONDS = 3;
const MAX_REFUSALS_PER_TASK = 3;
const INITIAL_CREDITS = 1000;
const INTERVAL_MS = 1000;
/** Our model id of {@link imageRequest}, and the name the mock profile gives it upstream. */
const IMAGE_MODEL = 'image-model-1';
const IMAGE_PROVIDER_MODEL = `provider/${IMAGE_MODEL}`;

describe('upstream backoff: bounded, scoped to the refused model, limited per task', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      refreshIntervalSeconds: INTERVAL_MS / 1000,
      maxRetryAfterSeconds: MAX_RETRY_AFTER_SECONDS,
      maxRefusalsPerTask: MAX_REFUSALS_PER_TASK,
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

  async function submit(user: TestUser, kind: 'image' | 'video'): Promise<string> {
    const answer =
      kind === 'image'
        ? await invoke(submitImage, submitEvent('image', user, imageRequest()))
        : await invoke(submitVideo, submitEvent('video', user, videoRequest()));
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  /** GETs each task (one refresh interval apart) until it ends or the budget passes; the stored tasks. */
  async function ended(user: TestUser, taskIds: string[]): Promise<(TaskRecord | undefined)[]> {
    await Promise.all(
      taskIds.map((taskId) => pollUntilTerminal(getTaskHandler, user, taskId, { intervalMs: INTERVAL_MS + 100 })),
    );
    return Promise.all(taskIds.map((taskId) => getTask(h.store, user.userId, taskId)));
  }

  /** The ledger invariant, and the balance: the initial credits less those of the tasks kept. */
  async function expectExactMoney(user: TestUser, tasks: (TaskRecord | undefined)[]): Promise<void> {
    const kept = tasks.reduce((sum, task) => sum + (task && !task.creditsRefunded ? task.creditsUsed : 0), 0);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: INITIAL_CREDITS - kept });
  }

  it('a 503 asking for an hour is honoured up to the bound: the tasks are sent again and complete', async () => {
    // Prepare: the upstream's first create answers 503 with Retry-After: 3600, then it serves again.
    const user = await h.createUser(INITIAL_CREDITS);
    h.provider.setFaults({ createFault: 'http_503', createFaultTimes: 1, faultRetryAfter: '3600' });
    const calls = h.provider.stats.createTaskCalls;

    // Act
    const taskIds = [await submit(user, 'image'), await submit(user, 'image'), await submit(user, 'image')];
    const tasks = await ended(user, taskIds);
    const capacity = await readCapacity(h.store);

    // Assert: refused once, then every task sent and completed within the budget (not after an hour)
    for (const task of tasks) expect(task).toMatchObject({ status: 1, creditsRefunded: false });
    expect(h.provider.stats.createTaskCalls - calls).toBe(taskIds.length + 1);
    expect(capacity.modelBackoff[IMAGE_MODEL]?.ms).toBe(MAX_RETRY_AFTER_SECONDS * 1000);
    // One model refused: no backoff of the whole service.
    expect(capacity.backoffUntil).toBeUndefined();
    await expectExactMoney(user, tasks);
    expect((await auditUser(h.store, user.userId)).balance).toBe(INITIAL_CREDITS - 3 * IMAGE_COST);
  });

  it("every create of one model refused: other models' tasks complete, the refused ones end PROVIDER_UNAVAILABLE refunded", async () => {
    // Prepare: every create of the image model answers 503 (Retry-After: 1); the video model is served.
    const refusedUser = await h.createUser(INITIAL_CREDITS);
    const otherUser = await h.createUser(INITIAL_CREDITS);
    h.provider.setFaults({ createFault: 'http_503', createFaultModel: IMAGE_PROVIDER_MODEL, faultRetryAfter: '1' });
    const calls = h.provider.stats.createTaskCalls;

    // Act: the refused account's image tasks queued ahead of its own video task, another account's videos
    const refused = [await submit(refusedUser, 'image'), await submit(refusedUser, 'image')];
    const ownVideo = await submit(refusedUser, 'video');
    const submittedAt = Date.now();
    const others = [
      await submit(otherUser, 'video'),
      await submit(otherUser, 'video'),
      await submit(otherUser, 'video'),
    ];
    // The figure for the record (not asserted: a loaded machine stretches it): until the last one was sent.
    await Promise.all(others.map((taskId) => storedWhenSent(h, otherUser.userId, taskId)));
    const otherModelMs = Date.now() - submittedAt;
    const [otherTasks, ownVideoTask] = await Promise.all([ended(otherUser, others), ended(refusedUser, [ownVideo])]);
    const refusedTasks = await ended(refusedUser, refused);
    const capacity = await readCapacity(h.store);

    // Assert
    for (const task of [...otherTasks, ...ownVideoTask])
      expect(task).toMatchObject({ status: 1, creditsRefunded: false });
    for (const task of refusedTasks) {
      expect(task).toMatchObject({ status: 2, errorCode: 'PROVIDER_UNAVAILABLE', creditsRefunded: true });
      // The last refusal failed it; the ones before put it back in its place, counted.
      expect(task?.sendRefusals).toBe(MAX_REFUSALS_PER_TASK - 1);
      expect(task?.providerTaskId).toBeUndefined();
    }
    // Each refused task was tried exactly its limit; every other task once.
    expect(h.provider.stats.createTaskCalls - calls).toBe(refused.length * MAX_REFUSALS_PER_TASK + others.length + 1);
    expect(capacity.backoffUntil).toBeUndefined();
    expect(h.provider.stats.createTaskRefused).toBe(0);
    await expectExactMoney(otherUser, otherTasks);
    await expectExactMoney(refusedUser, [...refusedTasks, ...ownVideoTask]);
    expect((await auditUser(h.store, otherUser.userId)).balance).toBe(INITIAL_CREDITS - 3 * VIDEO_COST);
    expect((await auditUser(h.store, refusedUser.userId)).balance).toBe(INITIAL_CREDITS - VIDEO_COST);
    console.info(`Another model's tasks were all sent ${otherModelMs} ms after their submits, one model refused`);
  });

  it('an HTML maintenance page is a refusal like a 503: no crash, and the tasks complete once it clears', async () => {
    // Prepare: the next two creates (whatever their model) meet a CDN's maintenance page.
    const user = await h.createUser(INITIAL_CREDITS);
    h.provider.setFaults({ createFault: 'maintenance_html', createFaultTimes: 2 });
    const calls = h.provider.stats.createTaskCalls;
    const errorsBefore = h.logs.length;

    // Act
    const taskIds = [await submit(user, 'image'), await submit(user, 'video'), await submit(user, 'image')];
    const tasks = await ended(user, taskIds);

    // Assert: both pages met, each task then sent once more and completed, charged once
    for (const task of tasks) expect(task).toMatchObject({ status: 1, creditsRefunded: false });
    expect(h.provider.stats.createTaskCalls - calls).toBe(taskIds.length + 2);
    // No dispatch step failed on the page (the harness keeps error lines only).
    expect(h.logs.slice(errorsBefore).filter((line) => line.includes('dispatch step failed'))).toEqual([]);
    await expectExactMoney(user, tasks);
    expect((await auditUser(h.store, user.userId)).balance).toBe(INITIAL_CREDITS - 2 * IMAGE_COST - VIDEO_COST);
  });

  it("a model waiting out a refusal's Retry-After does not hold a task of another model submitted after it", async () => {
    await h.withEnv({ PROVIDER_MAX_RETRY_AFTER_SECONDS: '120' }, async () => {
      // Prepare: the image model's next create answers 503 asking for an hour: it backs off 120 s.
      const user = await h.createUser(INITIAL_CREDITS);
      h.provider.setFaults({
        createFault: 'http_503',
        createFaultModel: IMAGE_PROVIDER_MODEL,
        createFaultTimes: 1,
        faultRetryAfter: '3600',
      });
      const submittedAt = Date.now();
      const image = await submit(user, 'image');
      // The refusal's backoff (an earlier test's, of the same model, ended long ago).
      const refusedNow = (backoff?: { until: number }) => backoff !== undefined && backoff.until > submittedAt;
      let backoff = (await readCapacity(h.store)).modelBackoff[IMAGE_MODEL];
      for (let read = 0; read < 1200 && !refusedNow(backoff); read++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        backoff = (await readCapacity(h.store)).modelBackoff[IMAGE_MODEL];
      }

      // Act: a video task is submitted while the image model waits.
      const video = await submit(user, 'video');
      const sent = await storedWhenSent(h, user.userId, video, 1500);

      // Assert: sent (its send is its last update, or the completion right after) before the backoff ended.
      expect(backoff?.ms).toBe(120_000);
      expect(sent?.providerTaskId).toBeDefined();
      expect(Date.parse(sent?.updatedAt ?? '')).toBeLessThan(backoff?.until ?? 0);

      // Then: the backoff lifted, both end, charged once each.
      await h.store.doc.send(
        new UpdateCommand({
          TableName: h.store.tableName,
          Key: { PK: 'DISPATCH#CAPACITY', SK: 'CREATE' },
          UpdateExpression: 'REMOVE modelBackoff',
        }),
      );
      const tasks = await ended(user, [image, video]);
      for (const task of tasks) expect(task).toMatchObject({ status: 1, creditsRefunded: false });
      await expectExactMoney(user, tasks);
    });
  });
});
