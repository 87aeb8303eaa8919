/**
 * A task at the provider when its account closes (issue 40): the closure leaves it to end as usual and
 * counts it in `tasksStillRunning`; once the provider has ended it, its results are never copied in
 * (nothing of it readable), a failure is refunded as usual, and the sweeper deletes the task whole, as
 * the closure deletes an ended task: money exact, the ledger kept. On the in-process harness with the
 * mock provider over HTTP; the mock's clock holds the tasks at the provider until the test moves it.
 */
import { readdir } from 'node:fs/promises';
import { endAccountCredentials } from '../../functions/auth/end-account-credentials';
import { closeAccount } from '../../functions/lifecycle/close-account';
import { logger } from '../../functions/observability/logger';
import { removalFromEnv } from '../../functions/runtime/removal-from-env';
import { getBalance } from '../../functions/store/accounts';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { getTask as getStoredTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
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
  storedWhenSent,
  submitEvent,
  TASK_END_BUDGET_MS,
} from '../support/service-harness';

jest.setTimeout(jestTimeoutFor());

/** How long the mock takes to end a task, on its own clock (which the test moves). */
const PROVIDER_DELAY_MS = 60_000;

let h: ServiceHarness;
let providerNow = Date.now();

beforeAll(async () => {
  h = await startServiceHarness({ providerClock: () => providerNow });
});

afterAll(async () => {
  await h?.dispose();
});

/** Every file name under the media directory (results are written there by the fs media store). */
async function mediaFiles(): Promise<string[]> {
  try {
    return (await readdir(h.mediaDir, { recursive: true })).map(String);
  } catch {
    return [];
  }
}

describe('a task at the provider when its account closes', () => {
  it('ends as usual, then the sweeper deletes it whole: no result copied, a failure refunded, money exact', async () => {
    // Prepare: two tasks at the provider, one that will complete and one that will fail.
    const user = await h.createUser(20);
    const submit = async (providerInput: Record<string, unknown>) => {
      const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(providerInput)));
      if (answer.statusCode !== 202) throw new Error(`Submit answered ${answer.statusCode}: ${answer.rawBody}`);
      return String(answer.body.taskId);
    };
    const completing = await submit({ mockDelayMs: PROVIDER_DELAY_MS });
    const failing = await submit({ mockDelayMs: PROVIDER_DELAY_MS, mockOutcome: 'fail' });
    const sent = await Promise.all([completing, failing].map((taskId) => storedWhenSent(h, user.userId, taskId)));
    const downloadsBefore = h.provider.stats.fileDownloads;
    const filesBefore = await mediaFiles();
    const actor = { type: 'operator' as const };
    const report = await closeAccount(
      {
        ...removalFromEnv(),
        endCredentials: ({ now }) => endAccountCredentials(h.store, undefined, { userId: user.userId, now, actor }),
      },
      { userId: user.userId, actor },
      logger,
    );
    const afterClose = await Promise.all(
      [completing, failing].map((taskId) => getStoredTask(h.store, user.userId, taskId)),
    );

    // Act: the provider ends both; sweeps move them (a refresh ends each, the next deletes it).
    providerNow += PROVIDER_DELAY_MS + 1000;
    const sweeps: Array<Awaited<ReturnType<typeof sweeper>>> = [];
    const deadline = Date.now() + TASK_END_BUDGET_MS;
    const stillThere = async () =>
      (await Promise.all([completing, failing].map((taskId) => getStoredTask(h.store, user.userId, taskId)))).filter(
        (task) => task !== undefined,
      );
    while ((await stillThere()).length > 0 && Date.now() < deadline) {
      sweeps.push(await sweeper({}, lambdaContext('sweeper')));
      await sleep(200);
    }

    // Assert
    expect(sent.map((task) => [task?.status, typeof task?.providerTaskId])).toEqual([
      [0, 'string'],
      [0, 'string'],
    ]);
    expect(report).toMatchObject({ tasksStillRunning: 2, tasksCancelled: 0, tasksDeleted: 0 });
    expect(afterClose.map((task) => task?.status)).toEqual([0, 0]);
    expect(await stillThere()).toEqual([]);
    expect(sweeps.reduce((sum, sweep) => sum + sweep.retention.deleted, 0)).toBe(2);
    // Nothing of it readable: its results were never fetched from the provider nor written to storage.
    expect(h.provider.stats.fileDownloads).toBe(downloadsBefore);
    expect((await mediaFiles()).filter((file) => file.includes(completing) || file.includes(failing))).toEqual([]);
    expect(filesBefore.filter((file) => file.includes(completing))).toEqual([]);
    // Money: the completed task's charge stands, the failed one's is refunded; the ledger keeps both.
    const ledger = await listLedger(h.store, user.userId);
    expect(
      ledger
        .filter((entry) => entry.taskId !== undefined)
        .map((entry) => [entry.taskId, entry.kind])
        .sort(),
    ).toEqual(
      [
        [completing, 'debit'],
        [failing, 'debit'],
        [failing, 'refund'],
      ].sort(),
    );
    expect(await getBalance(h.store, user.userId)).toBe(20 - IMAGE_COST);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 20 - IMAGE_COST });
  });
});
