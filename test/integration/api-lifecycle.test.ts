/**
 * Every errorCode end to end through the API handlers, with the refund and the ledger invariant after
 * each; faults of the provider that must lose nothing; and completed results that really download.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { presentTask } from '../../functions/lifecycle/present-task';
import { refreshTask } from '../../functions/lifecycle/refresh-task';
import { logger } from '../../functions/observability/logger';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as submitVideo } from '../../functions/submit-video/handler';
import {
  getTaskEvent,
  IMAGE_COST,
  imageRequest,
  invoke,
  jestTimeoutFor,
  pollUntilTerminal,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  storedWhenEnded,
  storedWhenSent,
  submitEvent,
  type TestUser,
  VIDEO_COST,
  videoRequest,
} from '../support/service-harness';

const INTERVAL_MS = 1000;
const MAX_SEND_ATTEMPTS = 2;
const MAX_PENDING_SECONDS = 1800;
/** Waiting a little more than one interval, so the next poll may claim a provider query. */
const NEXT_INTERVAL_MS = INTERVAL_MS + 100;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// Real servers and DynamoDB Local; some tests wait out a refresh interval or two, and a task's end
// (the media worker on the stream) on the wall-clock budget of a loaded machine.
jest.setTimeout(jestTimeoutFor());

describe('the task lifecycle through the API handlers', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      refreshIntervalSeconds: INTERVAL_MS / 1000,
      maxSendAttempts: MAX_SEND_ATTEMPTS,
      maxPendingSeconds: MAX_PENDING_SECONDS,
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

  async function expectLedger(user: TestUser, balance: number): Promise<void> {
    const audit = await auditUser(h.store, user.userId);
    expect(audit).toMatchObject({ ok: true, balance, ledgerSum: balance });
  }

  /** The user's ledger kinds in order, e.g. ['grant', 'debit', 'refund']. */
  async function ledgerKinds(user: TestUser): Promise<string[]> {
    return (await listLedger(h.store, user.userId)).map((entry) => entry.kind);
  }

  async function submit(kind: 'image' | 'video', user: TestUser, body: unknown) {
    const answer = await invoke(kind === 'image' ? submitImage : submitVideo, submitEvent(kind, user, body));
    expect(answer.statusCode).toBe(202);
    return { answer, taskId: String(answer.body.taskId) };
  }

  const poll = (user: TestUser, taskId: string) =>
    pollUntilTerminal(getTaskHandler, user, taskId, { intervalMs: NEXT_INTERVAL_MS });

  /** The stored result files of a task, by name. */
  async function filesOf(user: TestUser, taskId: string): Promise<string[]> {
    const dir = join(h.mediaDir, 'results', encodeURIComponent(user.userId), taskId);
    return (await readdir(dir).catch(() => [])).sort();
  }

  async function download(url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
    const response = await fetch(url);
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      bytes: Buffer.from(await response.arrayBuffer()),
    };
  }

  describe('completed results', () => {
    it('stores every image result; the URLs download real PNG files', async () => {
      // Prepare
      const user = await h.createUser(20);
      const { taskId } = await submit('image', user, imageRequest({}, { numOutputs: 2 }));

      // Act
      const answer = await poll(user, taskId);
      const urls = answer.body.imageUrls as string[];
      const files = await Promise.all(urls.map(download));

      // Assert
      expect(answer.body).toMatchObject({ status: 1, creditsUsed: 2 * IMAGE_COST, creditsRefunded: false });
      expect(urls).toHaveLength(2);
      expect(new Set(urls).size).toBe(2);
      for (const file of files) {
        expect(file.status).toBe(200);
        expect(file.type).toBe('image/png');
        expect(file.bytes.subarray(0, 8).equals(PNG_MAGIC)).toBe(true);
      }
      expect(files[0]?.bytes.equals(files[1]?.bytes ?? Buffer.alloc(0))).toBe(false);
      expect(await ledgerKinds(user)).toEqual(['grant', 'debit']);
      await expectLedger(user, 20 - 2 * IMAGE_COST);
    });

    it('stores the video result; the URL downloads a real MP4 file', async () => {
      // Prepare
      const user = await h.createUser(20);
      const { taskId } = await submit('video', user, videoRequest());

      // Act
      const answer = await poll(user, taskId);
      const file = await download(String(answer.body.videoUrl));

      // Assert
      expect(answer.body).toMatchObject({ status: 1, type: 'video', creditsRefunded: false });
      expect(file.status).toBe(200);
      expect(file.type).toBe('video/mp4');
      // An ISO base media file starts with a box whose type, at bytes 4-7, is "ftyp".
      expect(file.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
      await expectLedger(user, 20 - VIDEO_COST);
    });

    it('serves a terminal task from the store without asking the provider again', async () => {
      // Prepare
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest());
      const completed = await poll(user, taskId);
      const providerTaskId = (await getTask(h.store, user.userId, taskId))?.providerTaskId ?? '';
      const queries = h.provider.stats.getTaskCalls(providerTaskId);
      // The product's refresh interval passes: were the task pending, the next GET would query again.
      await sleep(NEXT_INTERVAL_MS);

      // Act
      const again = await invoke(getTaskHandler, getTaskEvent(user, taskId));

      // Assert
      expect(completed.body.status).toBe(1);
      expect(again.body).toEqual(completed.body);
      expect(h.provider.stats.getTaskCalls(providerTaskId)).toBe(queries);
    });
  });

  describe('every errorCode, with the credits refunded', () => {
    it("PROVIDER_REJECTED: the submit answers queued, the dispatcher's send is refused, the balance is restored", async () => {
      // Prepare
      const user = await h.createUser(10);

      // Act
      const { answer, taskId } = await submit('image', user, imageRequest({ mockOutcome: 'reject' }));
      await storedWhenEnded(h, user.userId, taskId);
      const read = await invoke(getTaskHandler, getTaskEvent(user, taskId));

      // Assert
      expect(answer.body).toEqual({ taskId, status: 0, creditsUsed: IMAGE_COST });
      expect(answer.headers.Location).toBe(`/prod/api/ai/tasks/${taskId}`);
      expect(read.body).toMatchObject({ status: 2, errorCode: 'PROVIDER_REJECTED', creditsRefunded: true });
      expect(read.body.errorMessage).toEqual(expect.stringContaining('refused'));
      expect(await ledgerKinds(user)).toEqual(['grant', 'debit', 'refund']);
      await expectLedger(user, 10);
    });

    it('PROVIDER_ERROR: the provider fails the task; its message is shown and the credits come back', async () => {
      // Prepare
      const user = await h.createUser(30);
      const { taskId } = await submit(
        'video',
        user,
        videoRequest({ mockOutcome: 'fail', mockFailCode: 'NSFW', mockFailMsg: 'Prompt flagged' }),
      );

      // Act
      const answer = await poll(user, taskId);

      // Assert
      expect(answer.body).toMatchObject({ status: 2, errorCode: 'PROVIDER_ERROR', creditsRefunded: true });
      expect(answer.body.errorMessage).toBe('The provider could not generate the result: Prompt flagged');
      expect(answer.body.providerErrorCode).toBe('NSFW');
      expect(await ledgerKinds(user)).toEqual(['grant', 'debit', 'refund']);
      await expectLedger(user, 30);
    });

    it('STORAGE_ERROR: a result that cannot be fetched fails the task and refunds it', async () => {
      // Prepare
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest({ mockOutcome: 'broken_result' }));

      // Act
      const answer = await poll(user, taskId);

      // Assert
      expect(answer.body).toMatchObject({ status: 2, errorCode: 'STORAGE_ERROR', creditsRefunded: true });
      // No internal URL, object key or status of ours reaches the client.
      expect(answer.body.errorMessage).toBe('The result could not be stored');
      expect(answer.body).not.toHaveProperty('imageUrls');
      expect(await ledgerKinds(user)).toEqual(['grant', 'debit', 'refund']);
      await expectLedger(user, 10);
    });

    it('TIMEOUT: a task pending past the maximum age fails and is refunded', async () => {
      // Prepare: the provider would take ten minutes; the clock is moved to the maximum age.
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest({ mockDelayMs: 600_000 }));
      const stored = await storedWhenSent(h, user.userId, taskId);
      if (!stored) throw new Error('the accepted task is not in the store');
      const tooOld = new Date(Date.parse(stored.createdAt) + MAX_PENDING_SECONDS * 1000);

      // Act
      await refreshTask(
        h.lifecycle(() => tooOld),
        stored,
        logger,
      );
      const answer = await invoke(getTaskHandler, getTaskEvent(user, taskId));

      // Assert
      expect(answer.body).toMatchObject({ status: 2, errorCode: 'TIMEOUT', creditsRefunded: true });
      expect(answer.body.errorMessage).toBe('The task did not finish in time');
      // The last query was made: the provider was asked once more before the task was given up.
      expect(h.provider.stats.getTaskCalls(String(stored.providerTaskId))).toBe(1);
      expect(await ledgerKinds(user)).toEqual(['grant', 'debit', 'refund']);
      await expectLedger(user, 10);
    });

    it('TIMEOUT is not declared when the last query finds the result: the task completes and is kept', async () => {
      // Prepare: the provider finished; nobody asked before the maximum age.
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest({ mockDelayMs: 0 }));
      const stored = await storedWhenSent(h, user.userId, taskId);
      if (!stored) throw new Error('the accepted task is not in the store');
      const tooOld = new Date(Date.parse(stored.createdAt) + MAX_PENDING_SECONDS * 1000 + 60_000);

      // Act
      const after = await refreshTask(
        h.lifecycle(() => tooOld),
        stored,
        logger,
      );

      // Assert: the results are ready to copy, and the media worker completes the task
      expect(after).toMatchObject({ status: 0, creditsRefunded: false, resultsToCopy: [expect.any(String)] });
      expect(await storedWhenEnded(h, user.userId, taskId)).toMatchObject({ status: 1, creditsRefunded: false });
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('TIMEOUT: a task just under the maximum age stays pending', async () => {
      // Prepare
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest({ mockDelayMs: 600_000 }));
      const stored = await storedWhenSent(h, user.userId, taskId);
      if (!stored) throw new Error('the accepted task is not in the store');
      const almost = new Date(Date.parse(stored.createdAt) + MAX_PENDING_SECONDS * 1000 - 1);

      // Act
      const after = await refreshTask(
        h.lifecycle(() => almost),
        stored,
        logger,
      );

      // Assert
      expect(after.status).toBe(0);
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('PROVIDER_UNAVAILABLE: a task that never reaches the provider fails after the bounded retries', async () => {
      // Prepare
      const user = await h.createUser(10);
      h.provider.setFaults({ createFault: 'http_500' });
      const createCalls = h.provider.stats.createTaskCalls;

      // Act
      const { answer, taskId } = await submit('image', user, imageRequest());
      const pending = await getTask(h.store, user.userId, taskId);
      const final = await poll(user, taskId);

      // Assert
      expect(answer.body).toMatchObject({ status: 0, creditsUsed: IMAGE_COST });
      expect(pending?.providerTaskId).toBeUndefined();
      expect(final.body).toMatchObject({ status: 2, errorCode: 'PROVIDER_UNAVAILABLE', creditsRefunded: true });
      // The dispatcher's sends, up to the bound (the submit sends nothing).
      expect(h.provider.stats.createTaskCalls - createCalls).toBe(MAX_SEND_ATTEMPTS);
      expect(await ledgerKinds(user)).toEqual(['grant', 'debit', 'refund']);
      await expectLedger(user, 10);
    });
  });

  describe('provider answers are untrusted', () => {
    it.each([
      ['a redirect to the cloud metadata address', { mockOutcome: 'redirect_result' }],
      ['a redirect to loopback', { mockOutcome: 'redirect_result', mockRedirectTo: 'https://127.0.0.1:1/x.png' }],
      ['an SVG', { mockOutcome: 'svg_result' }],
      ['an SVG sent as image/png', { mockOutcome: 'disguised_result' }],
    ])('%s: STORAGE_ERROR, refunded, nothing stored, a clean message', async (_case, input) => {
      // Prepare
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest(input));

      // Act
      const answer = await poll(user, taskId);

      // Assert
      expect(answer.body).toMatchObject({
        status: 2,
        errorCode: 'STORAGE_ERROR',
        errorMessage: 'The result could not be stored',
        creditsRefunded: true,
      });
      expect(await filesOf(user, taskId)).toEqual([]);
      await expectLedger(user, 10);
    });

    it('stores no more results than were paid for: extra image URLs are ignored', async () => {
      // Prepare: two images paid for, the provider returns five.
      const user = await h.createUser(30);
      const { taskId } = await submit('image', user, imageRequest({ mockExtraResults: 3 }, { numOutputs: 2 }));

      // Act
      const answer = await poll(user, taskId);

      // Assert
      expect(answer.body.status).toBe(1);
      expect(answer.body.imageUrls).toHaveLength(2);
      expect(await filesOf(user, taskId)).toEqual(['0.png', '1.png']);
    });

    it('stores one video when the provider returns several', async () => {
      // Prepare
      const user = await h.createUser(30);
      const { taskId } = await submit('video', user, videoRequest({ mockExtraResults: 2 }));

      // Act
      const answer = await poll(user, taskId);

      // Assert
      expect(answer.body.status).toBe(1);
      expect(answer.body.videoUrl).toEqual(expect.any(String));
      expect(await filesOf(user, taskId)).toEqual(['0.mp4']);
    });

    it('a provider failure message of any size is bounded, and the refund still goes through', async () => {
      // Prepare: about 400 KB of message (more than a DynamoDB item may hold), with URLs in it.
      const user = await h.createUser(10);
      const { taskId } = await submit(
        'image',
        user,
        imageRequest({
          mockOutcome: 'fail',
          mockFailMsg: 'see https://internal.provider/x?token=abc yyy ',
          mockFailMsgRepeat: 9000,
        }),
      );

      // Act
      const answer = await poll(user, taskId);

      // Assert
      expect(answer.body).toMatchObject({ status: 2, errorCode: 'PROVIDER_ERROR', creditsRefunded: true });
      const message = String(answer.body.errorMessage);
      expect(message.startsWith('The provider could not generate the result: see [url] yyy')).toBe(true);
      expect(message.length).toBeLessThanOrEqual(300);
      await expectLedger(user, 10);
    });

    it('completed results say until when they exist, and no URL is handed out after that', async () => {
      // Prepare: storage that deletes results after 30 days (the bucket's rule when deployed).
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest());
      const completed = await poll(user, taskId);
      const lc = {
        ...h.lifecycle(() => new Date()),
        config: { ...h.lifecycle(() => new Date()).config, resultRetentionDays: 30 },
      };
      const task = await getTask(h.store, user.userId, taskId);
      if (!task) throw new Error('the task is not in the store');
      const expiresAt = Date.parse(task.updatedAt) + 30 * 86_400_000;

      // Act
      const fresh = await presentTask({ ...lc, now: () => new Date(expiresAt - 2 * 86_400_000) }, task);
      const expired = await presentTask({ ...lc, now: () => new Date(expiresAt) }, task);

      // Assert
      expect(completed.body).not.toHaveProperty('resultsExpireAt');
      expect(fresh.imageUrls).toHaveLength(1);
      expect(fresh.resultsExpireAt).toBe(new Date(expiresAt - (expiresAt % 86_400_000)).toISOString());
      expect(expired.imageUrls).toEqual([]);
      expect(expired.resultsExpireAt).toBe(fresh.resultsExpireAt);
    });

    it('serves results as downloads that browsers do not sniff', async () => {
      // Prepare
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest());
      const answer = await poll(user, taskId);

      // Act
      const response = await fetch(String((answer.body.imageUrls as string[])[0]));

      // Assert
      expect(response.headers.get('content-type')).toBe('image/png');
      expect(response.headers.get('content-disposition')).toBe('attachment');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      await response.arrayBuffer();
    });
  });

  describe('provider faults lose nothing', () => {
    it('a send that failed once is retried by the next poll and the task completes', async () => {
      // Prepare
      const user = await h.createUser(10);
      h.provider.setFaults({ createFault: 'http_500', createFaultTimes: 1 });
      const { taskId } = await submit('image', user, imageRequest());

      // Act
      const answer = await poll(user, taskId);

      // Assert
      expect(answer.body).toMatchObject({ status: 1, creditsRefunded: false });
      expect((await getTask(h.store, user.userId, taskId))?.providerTaskId).toEqual(expect.any(String));
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('a provider unavailable while querying leaves the task pending; it completes once the fault clears', async () => {
      // Prepare
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest());
      const providerTaskId = (await storedWhenSent(h, user.userId, taskId))?.providerTaskId ?? '';
      h.provider.setFaults({ getFault: 'http_500' });
      // The submission was the first contact: the first query is due one interval after it.
      await sleep(NEXT_INTERVAL_MS);

      // Act
      const duringFault = await invoke(getTaskHandler, getTaskEvent(user, taskId));
      const queriesDuringFault = h.provider.stats.getTaskCalls(providerTaskId);
      h.provider.clearFaults();
      // The product's refresh interval: only then may the next GET query the provider again.
      await sleep(NEXT_INTERVAL_MS);
      const afterFault = await poll(user, taskId);

      // Assert
      expect(duringFault.statusCode).toBe(200);
      expect(duringFault.body).toMatchObject({ status: 0, creditsRefunded: false });
      expect(queriesDuringFault).toBeGreaterThanOrEqual(1);
      expect(afterFault.body).toMatchObject({ status: 1, creditsRefunded: false });
      expect(await ledgerKinds(user)).toEqual(['grant', 'debit']);
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('an answer outside the protocol leaves the task pending instead of failing it', async () => {
      // Prepare
      const user = await h.createUser(10);
      const { taskId } = await submit('image', user, imageRequest({ mockOutcome: 'unknown_state' }));

      // Act
      const answer = await invoke(getTaskHandler, getTaskEvent(user, taskId));

      // Assert
      expect(answer.statusCode).toBe(200);
      expect(answer.body).toMatchObject({ status: 0, creditsRefunded: false });
      await expectLedger(user, 10 - IMAGE_COST);
    });
  });
});
