/**
 * `resultRetention` on submit (issue 40): validated (a whole number of hours or days, at most 30 days),
 * and once it has passed, the sweeper's retention step removes the task's results as a delete does
 * (the result file the media server served is gone) and the Task resource says `resultsExpiredAt`, with
 * no URL. Time is moved with the harness's clock, never slept.
 */

import { handler as getTask } from '../../functions/get-task/handler';
import { getBalance } from '../../functions/store/accounts';
import { getTask as getStoredTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as sweeper } from '../../functions/sweeper/handler';
import {
  getTaskEvent,
  imageRequest,
  invoke,
  jestTimeoutFor,
  lambdaContext,
  pollUntilTerminal,
  type ServiceHarness,
  startServiceHarness,
  submitEvent,
  type TestUser,
} from '../support/service-harness';

jest.setTimeout(jestTimeoutFor());

const HOUR_MS = 3_600_000;

let h: ServiceHarness;
let user: TestUser;

beforeAll(async () => {
  h = await startServiceHarness();
  user = await h.createUser(100);
});

afterAll(async () => {
  await h?.dispose();
});

async function completedWithRetention(retention: string): Promise<string> {
  const submitted = await invoke(
    submitImage,
    submitEvent('image', user, imageRequest({}, { resultRetention: retention })),
  );
  if (submitted.statusCode !== 202) throw new Error(`Submit answered ${submitted.statusCode}: ${submitted.rawBody}`);
  const taskId = String(submitted.body.taskId);
  // GETs move the task (the mock answers at once; the media worker then copies the result).
  const ended = await pollUntilTerminal(getTask, user, taskId, { intervalMs: 1000 });
  if (ended.body.status !== 1) throw new Error(`Task ${taskId} did not complete: ${ended.rawBody}`);
  return taskId;
}

describe('resultRetention', () => {
  test.each([
    ['31d', 'at most 30 days'],
    ['721h', 'at most 30 days'],
    ['1w', 'hours or days'],
    ['0h', 'hours or days'],
    ['', 'hours or days'],
  ])('%j is refused with a 400 naming the field (%s), nothing debited', async (value, message) => {
    // Prepare
    const other = await h.createUser(10);

    // Act
    const answer = await invoke(submitImage, submitEvent('image', other, imageRequest({}, { resultRetention: value })));

    // Assert
    expect(answer.statusCode).toBe(400);
    const details = answer.body.details as { fieldErrors: Record<string, string[]> } | undefined;
    expect(JSON.stringify(details?.fieldErrors?.resultRetention ?? answer.body)).toContain(message);
    expect(await getBalance(h.store, other.userId)).toBe(10);
  });

  test('the Task says until when the results stay; after the retention the sweep removes them and the Task says they expired', async () => {
    // Prepare
    const taskId = await completedWithRetention('1h');
    const before = await invoke(getTask, getTaskEvent(user, taskId));
    const resultUrl = (before.body.imageUrls as string[])[0] ?? '';
    const created = Date.parse(String(before.body.createdAt));
    const downloadBefore = await fetch(resultUrl);
    await downloadBefore.body?.cancel();
    // A sweep before the hour is up leaves them.
    const early = await h.withClock(
      () => new Date(created + HOUR_MS / 2),
      () => sweeper({}, lambdaContext('sweeper')),
    );

    // Act
    const late = await h.withClock(
      () => new Date(created + HOUR_MS + 1000),
      () => sweeper({}, lambdaContext('sweeper')),
    );
    const after = await invoke(getTask, getTaskEvent(user, taskId));

    // Assert
    expect(before.body.resultsExpireAt).toBe(new Date(created + HOUR_MS).toISOString());
    expect(downloadBefore.status).toBe(200);
    expect(early.retention).toEqual(expect.objectContaining({ expired: 0 }));
    expect(late.retention).toEqual(expect.objectContaining({ expired: 1, errors: 0 }));
    expect(after.statusCode).toBe(200);
    expect(after.body.status).toBe(1);
    expect(after.body.imageUrls).toEqual([]);
    expect(after.body.resultsExpireAt).toBeUndefined();
    expect(typeof after.body.resultsExpiredAt).toBe('string');
    const download = await fetch(resultUrl);
    await download.body?.cancel();
    expect(download.status).toBe(404);
    const stored = await getStoredTask(h.store, user.userId, taskId);
    expect(stored?.resultKeys).toBeUndefined();
    expect(stored?.creditsUsed).toBe(3);
  });

  test('past its retention but not swept yet, the Task already hands out no URL and says they expired', async () => {
    // Prepare
    const taskId = await completedWithRetention('2h');
    const stored = await getStoredTask(h.store, user.userId, taskId);
    const created = Date.parse(stored?.createdAt ?? '');

    // Act
    const answer = await h.withClock(
      () => new Date(created + 2 * HOUR_MS),
      () => invoke(getTask, getTaskEvent(user, taskId)),
    );

    // Assert
    expect(answer.body.imageUrls).toEqual([]);
    expect(answer.body.resultsExpiredAt).toBe(new Date(created + 2 * HOUR_MS).toISOString());
  });
});
