/**
 * Every row of the error tables in docs/api/errors.md, through the real API handlers (API Gateway REST proxy events)
 * on DynamoDB Local and the mock provider over HTTP. After every request that could move money, the
 * ledger invariant and the exact balance are checked.
 */
import { createServer } from 'node:net';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { getBalance } from '../../functions/store/accounts';
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
  startServiceHarness,
  storedWhenEnded,
  storedWhenSent,
  submitEvent,
  TASK_BASE_FIELDS,
  TASK_INTERNALS,
  type TestUser,
  VIDEO_COST,
  videoRequest,
} from '../support/service-harness';

const INTERVAL_MS = 1000;
const LONG_DELAY = { mockDelayMs: 600_000 };

// Real servers and DynamoDB Local; some tests wait out a refresh interval or two.
jest.setTimeout(jestTimeoutFor());

describe('the API handlers answer every case of the HTTP table', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({ refreshIntervalSeconds: INTERVAL_MS / 1000 });
  });

  afterAll(async () => {
    await h.dispose();
  });

  /** The ledger invariant holds for the user and the balance is exactly `balance`. */
  async function expectLedger(user: TestUser, balance: number): Promise<void> {
    const audit = await auditUser(h.store, user.userId);
    expect(audit).toMatchObject({ ok: true, balance, ledgerSum: balance });
  }

  describe('202 task accepted', () => {
    it('accepts an image task: Location, { taskId, status 0, creditsUsed }, one debit', async () => {
      // Prepare
      const user = await h.createUser(20);
      const event = submitEvent('image', user, imageRequest(LONG_DELAY));

      // Act
      const answer = await invoke(submitImage, event);

      // Assert
      expect(answer.statusCode).toBe(202);
      expect(answer.body).toEqual({ taskId: expect.any(String), status: 0, creditsUsed: IMAGE_COST });
      const taskId = String(answer.body.taskId);
      // The harness's events are those of an execute-api stage URL (`/prod/...`): the task is under it too.
      expect(answer.headers.Location).toBe(`/prod/api/ai/tasks/${encodeURIComponent(taskId)}`);
      expect(answer.headers['Content-Type']).toBe('application/json');
      expect(answer.headers['X-Request-Id']).toBe(event.requestContext.requestId);
      expect(answer.headers['Idempotent-Replayed']).toBeUndefined();
      const stored = await getTask(h.store, user.userId, taskId);
      expect(stored).toMatchObject({ status: 0, type: 'image', creditsUsed: IMAGE_COST, keyId: user.keyId });
      // Queued by the submit; the dispatcher sends it.
      expect((await storedWhenSent(h, user.userId, taskId))?.providerTaskId).toEqual(expect.any(String));
      await expectLedger(user, 20 - IMAGE_COST);
    });

    it('accepts a video task: Location, { taskId, status 0, creditsUsed }, one debit', async () => {
      // Prepare
      const user = await h.createUser(50);

      // Act
      const answer = await invoke(submitVideo, submitEvent('video', user, videoRequest(LONG_DELAY)));

      // Assert
      expect(answer.statusCode).toBe(202);
      expect(answer.body).toEqual({ taskId: expect.any(String), status: 0, creditsUsed: VIDEO_COST });
      expect(answer.headers.Location).toBe(`/prod/api/ai/tasks/${encodeURIComponent(String(answer.body.taskId))}`);
      const stored = await getTask(h.store, user.userId, String(answer.body.taskId));
      expect(stored).toMatchObject({ status: 0, type: 'video', creditsUsed: VIDEO_COST });
      await expectLedger(user, 50 - VIDEO_COST);
    });
  });

  describe('200 task read', () => {
    it('shows a pending task with the base fields and its stage only, never internals', async () => {
      // Prepare: once the dispatcher has sent it (a queued one also says how many are ahead of it)
      const user = await h.createUser(10);
      const submitted = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG_DELAY)));
      const taskId = String(submitted.body.taskId);
      await storedWhenSent(h, user.userId, taskId);

      // Act
      const answer = await invoke(getTaskHandler, getTaskEvent(user, taskId));

      // Assert
      expect(answer.statusCode).toBe(200);
      expect(Object.keys(answer.body).sort()).toEqual([...TASK_BASE_FIELDS, 'stage'].sort());
      expect(answer.body.stage).toBe('running');
      expect(answer.body).toMatchObject({
        taskId,
        type: 'image',
        status: 0,
        model: 'image-model-1',
        prompt: 'a lighthouse at dusk',
        creditsUsed: IMAGE_COST,
        creditsRefunded: false,
      });
      expect(Number.isNaN(Date.parse(String(answer.body.createdAt)))).toBe(false);
      expect(Number.isNaN(Date.parse(String(answer.body.updatedAt)))).toBe(false);
      for (const internal of TASK_INTERNALS) expect(answer.body).not.toHaveProperty(internal);
      expect(answer.headers['Cache-Control']).toBe('no-store');
    });

    it('shows a completed image task with imageUrls and no error fields', async () => {
      // Prepare
      const user = await h.createUser(10);
      const submitted = await invoke(submitImage, submitEvent('image', user, imageRequest()));
      const taskId = String(submitted.body.taskId);

      // Act
      const answer = await pollUntilTerminal(getTaskHandler, user, taskId, { intervalMs: INTERVAL_MS });

      // Assert
      expect(answer.statusCode).toBe(200);
      expect(answer.body.status).toBe(1);
      expect(Object.keys(answer.body).sort()).toEqual([...TASK_BASE_FIELDS, 'imageUrls'].sort());
      expect(answer.body.imageUrls).toEqual([expect.stringMatching(`^${h.mediaBaseUrl}/media/`)]);
      expect(answer.body.creditsRefunded).toBe(false);
      for (const internal of TASK_INTERNALS) expect(answer.body).not.toHaveProperty(internal);
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('shows a completed video task with videoUrl and no error fields', async () => {
      // Prepare
      const user = await h.createUser(30);
      const submitted = await invoke(submitVideo, submitEvent('video', user, videoRequest()));
      const taskId = String(submitted.body.taskId);

      // Act
      const answer = await pollUntilTerminal(getTaskHandler, user, taskId, { intervalMs: INTERVAL_MS });

      // Assert
      expect(answer.body.status).toBe(1);
      expect(Object.keys(answer.body).sort()).toEqual([...TASK_BASE_FIELDS, 'videoUrl'].sort());
      expect(answer.body.videoUrl).toEqual(expect.stringMatching(`^${h.mediaBaseUrl}/media/.+\\.mp4$`));
      for (const internal of TASK_INTERNALS) expect(answer.body).not.toHaveProperty(internal);
      await expectLedger(user, 30 - VIDEO_COST);
    });

    it('shows a failed task with errorCode and errorMessage and no result fields', async () => {
      // Prepare
      const user = await h.createUser(10);
      const submitted = await invoke(submitImage, submitEvent('image', user, imageRequest({ mockOutcome: 'fail' })));
      const taskId = String(submitted.body.taskId);

      // Act
      const answer = await pollUntilTerminal(getTaskHandler, user, taskId, { intervalMs: INTERVAL_MS });

      // Assert
      expect(answer.body.status).toBe(2);
      expect(Object.keys(answer.body).sort()).toEqual(
        [...TASK_BASE_FIELDS, 'errorCode', 'errorMessage', 'providerErrorCode'].sort(),
      );
      expect(answer.body).toMatchObject({
        errorCode: 'PROVIDER_ERROR',
        providerErrorCode: 'MOCK_FAILURE',
        creditsRefunded: true,
      });
      expect(answer.body.errorMessage).toEqual(expect.any(String));
      for (const internal of TASK_INTERNALS) expect(answer.body).not.toHaveProperty(internal);
      await expectLedger(user, 10);
    });
  });

  describe('400 invalid request', () => {
    it('lists field errors as { fieldErrors, formErrors } and debits nothing', async () => {
      // Prepare
      const user = await h.createUser(10);
      const body = { model: 'image-model-9', prompt: '', numOutputs: 11 };

      // Act
      const answer = await invoke(submitImage, submitEvent('image', user, body));

      // Assert
      expect(answer.statusCode).toBe(400);
      expect(answer.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: expect.any(Object), formErrors: expect.any(Array) },
      });
      const details = answer.body.details as { fieldErrors: Record<string, string[]> };
      expect(Object.keys(details.fieldErrors)).toEqual(expect.arrayContaining(['model', 'prompt', 'numOutputs']));
      for (const messages of Object.values(details.fieldErrors)) {
        expect(messages).toEqual(expect.arrayContaining([expect.any(String)]));
      }
      await expectLedger(user, 10);
      expect(await listLedger(h.store, user.userId)).toHaveLength(1);
    });

    it('rejects a video request whose input mode does not fit the model', async () => {
      // Prepare
      const user = await h.createUser(50);
      const body = videoRequest({}, { inputMode: 'image_to_video' });

      // Act
      const answer = await invoke(submitVideo, submitEvent('video', user, body));

      // Assert
      expect(answer.statusCode).toBe(400);
      expect(answer.body.error).toBe('Invalid request');
      await expectLedger(user, 50);
    });

    const deepArray = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const deepObject = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const notJsonBodies: [string, string | null][] = [
      ['malformed JSON', '{"model":"image-model-1","prompt":'],
      ['an empty body', ''],
      ['a whitespace body', '  \n '],
      ['a null body', null],
      ['deeply nested arrays', deepArray],
      ['deeply nested objects', deepObject],
      ['a JSON array', '[{"model":"image-model-1","prompt":"x"}]'],
      ['a JSON string', '"image-model-1"'],
      ['a JSON number', '42'],
      ['the JSON null literal', 'null'],
      ['an object of garbage', '{"\\u0000":[[[{}]]],"model":{"$ne":null},"prompt":[null,true]}'],
    ];

    it.each(notJsonBodies)('answers 400 for %s, never 5xx, and debits nothing', async (_name, body) => {
      // Prepare
      const user = await h.createUser(10);
      const createCalls = h.provider.stats.createTaskCalls;

      // Act
      const answer = await invoke(submitImage, submitEvent('image', user, body));

      // Assert
      expect(answer.statusCode).toBe(400);
      expect(answer.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: expect.any(Object), formErrors: expect.any(Array) },
      });
      expect(h.provider.stats.createTaskCalls).toBe(createCalls);
      await expectLedger(user, 10);
    });

    it('answers 4xx, never 5xx, for deeply nested garbage inside providerInput', async () => {
      // Prepare: providerInput is "not schema-validated", but it is stored with the task and sent on.
      const user = await h.createUser(10);
      const nested = JSON.parse(`${'{"a":'.repeat(100)}1${'}'.repeat(100)}`) as unknown;
      const body = imageRequest({ garbage: nested });

      // Act
      const answer = await invoke(
        submitImage,
        submitEvent('image', user, body, {
          'Content-Type': 'application/json',
          'Idempotency-Key': 'nested-garbage',
        }),
      );

      // Assert
      expect(answer.statusCode).toBeGreaterThanOrEqual(400);
      expect(answer.statusCode).toBeLessThan(500);
      await expectLedger(user, 10);
    });

    it('answers 4xx, never 5xx, for a providerInput too large to store with the task', async () => {
      // Prepare: well under API Gateway's 10 MB payload limit, over DynamoDB's 400 KB item limit.
      const user = await h.createUser(10);
      const body = imageRequest({ padding: 'x'.repeat(300_000) });

      // Act
      const answer = await invoke(submitImage, submitEvent('image', user, body));

      // Assert
      expect(answer.statusCode).toBeGreaterThanOrEqual(400);
      expect(answer.statusCode).toBeLessThan(500);
      await expectLedger(user, 10);
    });
  });

  describe('415 unsupported media type', () => {
    const wrongTypes: [string, Record<string, string>][] = [
      ['no Content-Type', {}],
      ['text/plain', { 'Content-Type': 'text/plain' }],
      ['a form', { 'Content-Type': 'application/x-www-form-urlencoded' }],
      ['application/jsonp', { 'content-type': 'application/jsonp' }],
    ];

    it.each(wrongTypes)('answers 415 for %s and debits nothing', async (_name, headers) => {
      // Prepare
      const user = await h.createUser(10);

      // Act
      const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(), headers));

      // Assert
      expect(answer.statusCode).toBe(415);
      expect(answer.body).toEqual({ error: 'Unsupported Media Type' });
      await expectLedger(user, 10);
    });

    const acceptedTypes: [string, Record<string, string>][] = [
      ['CONTENT-TYPE: application/json', { 'CONTENT-TYPE': 'application/json' }],
      ['content-type: application/json; charset=utf-8', { 'content-type': 'application/json; charset=utf-8' }],
      ['Content-Type: Application/JSON', { 'Content-Type': 'Application/JSON' }],
    ];

    it.each(acceptedTypes)('accepts %s', async (_name, headers) => {
      // Prepare
      const user = await h.createUser(10);

      // Act
      const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG_DELAY), headers));

      // Assert
      expect(answer.statusCode).toBe(202);
      await expectLedger(user, 10 - IMAGE_COST);
    });
  });

  describe('401 unauthorized', () => {
    it('answers 401 on both routes when the authorizer context is missing, whatever the body', async () => {
      // Prepare
      const owner = await h.createUser(10);
      const submitted = await invoke(submitImage, submitEvent('image', owner, imageRequest(LONG_DELAY)));
      const createCalls = h.provider.stats.createTaskCalls;

      // Act
      const post = await invoke(submitImage, submitEvent('image', null, imageRequest()));
      const garbage = await invoke(submitImage, submitEvent('image', null, '{not json', {}));
      const get = await invoke(getTaskHandler, getTaskEvent(null, String(submitted.body.taskId)));

      // Assert
      for (const answer of [post, garbage, get]) {
        expect(answer.statusCode).toBe(401);
        expect(answer.body).toEqual({ error: 'Unauthorized' });
      }
      expect(h.provider.stats.createTaskCalls).toBe(createCalls);
      await expectLedger(owner, 10 - IMAGE_COST);
    });

    it('answers 401 when a cached Allow outlives the key (expiresAt in the past)', async () => {
      // Prepare
      const user = await h.createUser(10);
      const expired: TestUser = { ...user, expiresAt: Math.floor(Date.now() / 1000) - 1 };
      const submitted = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG_DELAY)));

      // Act
      const post = await invoke(submitImage, submitEvent('image', expired, imageRequest()));
      const get = await invoke(getTaskHandler, getTaskEvent(expired, String(submitted.body.taskId)));

      // Assert
      expect(post.statusCode).toBe(401);
      expect(post.body).toEqual({ error: 'Unauthorized' });
      expect(get.statusCode).toBe(401);
      expect(get.body).toEqual({ error: 'Unauthorized' });
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('accepts a key whose expiresAt is still in the future', async () => {
      // Prepare
      const user: TestUser = { ...(await h.createUser(10)), expiresAt: Math.floor(Date.now() / 1000) + 3600 };

      // Act
      const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG_DELAY)));

      // Assert
      expect(answer.statusCode).toBe(202);
      await expectLedger(user, 10 - IMAGE_COST);
    });
  });

  describe('402 insufficient credits', () => {
    it('answers { error, required, balance } and debits nothing', async () => {
      // Prepare
      const user = await h.createUser(2);

      // Act: with the dispatcher paused, so earlier tests' queued tasks are not sent meanwhile
      const { answer, createCalls, createCallsAfter } = await h.withoutDispatcher(async () => {
        const calls = h.provider.stats.createTaskCalls;
        const submitted = await invoke(submitImage, submitEvent('image', user, imageRequest()));
        return { answer: submitted, createCalls: calls, createCallsAfter: h.provider.stats.createTaskCalls };
      });

      // Assert
      expect(answer.statusCode).toBe(402);
      expect(answer.body).toEqual({ error: 'Insufficient credits', required: IMAGE_COST, balance: 2 });
      expect(createCallsAfter).toBe(createCalls);
      expect(await listLedger(h.store, user.userId)).toHaveLength(1);
      await expectLedger(user, 2);
    });

    it('answers 402 with balance 0 for a caller without an account', async () => {
      // Prepare
      const user: TestUser = { userId: `user-without-account-${Date.now()}`, keyId: 'key-x' };

      // Act
      const answer = await invoke(submitVideo, submitEvent('video', user, videoRequest()));

      // Assert
      expect(answer.statusCode).toBe(402);
      expect(answer.body).toEqual({ error: 'Insufficient credits', required: VIDEO_COST, balance: 0 });
      expect(await getBalance(h.store, user.userId)).toBe(0);
      expect(await listLedger(h.store, user.userId)).toEqual([]);
    });
  });

  describe('Idempotency-Key', () => {
    const withKey = (key: string) => ({ 'Content-Type': 'application/json', 'Idempotency-Key': key });

    it('replays the same key with the same body: same taskId, Idempotent-Replayed, one debit', async () => {
      // Prepare
      const user = await h.createUser(10);
      const body = imageRequest(LONG_DELAY);
      const reordered = { providerInput: body.providerInput, prompt: body.prompt, model: body.model };
      const createCalls = h.provider.stats.createTaskCalls;
      const first = await invoke(submitImage, submitEvent('image', user, body, withKey('order-42')));

      // Act
      const again = await invoke(submitImage, submitEvent('image', user, body, withKey('order-42')));
      const reorderedAgain = await invoke(submitImage, submitEvent('image', user, reordered, withKey('order-42')));

      await storedWhenSent(h, user.userId, String(first.body.taskId));

      // Assert
      expect(first.statusCode).toBe(202);
      expect(first.headers['Idempotent-Replayed']).toBeUndefined();
      for (const replay of [again, reorderedAgain]) {
        expect(replay.statusCode).toBe(202);
        expect(replay.body).toEqual(first.body);
        expect(replay.headers.Location).toBe(first.headers.Location);
        expect(replay.headers['Idempotent-Replayed']).toBe('true');
      }
      expect(h.provider.stats.createTaskCalls).toBe(createCalls + 1);
      expect((await listLedger(h.store, user.userId)).filter((entry) => entry.kind === 'debit')).toHaveLength(1);
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('replays concurrent requests with one key as one task and one debit', async () => {
      // Prepare
      const user = await h.createUser(10);
      const body = imageRequest(LONG_DELAY);

      // Act
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => invoke(submitImage, submitEvent('image', user, body, withKey('burst-1')))),
      );

      // Assert
      expect(answers.map((answer) => answer.statusCode)).toEqual([202, 202, 202, 202, 202]);
      expect(new Set(answers.map((answer) => answer.body.taskId)).size).toBe(1);
      expect(answers.filter((answer) => answer.headers['Idempotent-Replayed'] === 'true')).toHaveLength(4);
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it("replays a submission the provider refused with the task's current status (2), debiting nothing", async () => {
      // Prepare
      const user = await h.createUser(10);
      const body = imageRequest({ mockOutcome: 'reject' });
      const first = await invoke(submitImage, submitEvent('image', user, body, withKey('refused-1')));
      await storedWhenEnded(h, user.userId, String(first.body.taskId));

      // Act
      const replay = await invoke(submitImage, submitEvent('image', user, body, withKey('refused-1')));

      // Assert
      expect(first.body).toMatchObject({ status: 0 });
      expect(replay.statusCode).toBe(202);
      expect(replay.body).toEqual({ ...first.body, status: 2 });
      expect(replay.headers['Idempotent-Replayed']).toBe('true');
      await expectLedger(user, 10);
    });

    it('answers 409 for the same key with another body, and debits nothing more', async () => {
      // Prepare
      const user = await h.createUser(10);
      await invoke(submitImage, submitEvent('image', user, imageRequest(LONG_DELAY), withKey('order-43')));

      // Act
      const answer = await invoke(
        submitImage,
        submitEvent('image', user, imageRequest(LONG_DELAY, { prompt: 'another prompt' }), withKey('order-43')),
      );

      // Assert
      expect(answer.statusCode).toBe(409);
      expect(answer.body).toEqual({ error: 'Idempotency key reused with a different request' });
      await expectLedger(user, 10 - IMAGE_COST);
    });

    it('scopes keys per user: another user with the same key gets their own task', async () => {
      // Prepare
      const alice = await h.createUser(10);
      const bob = await h.createUser(10);
      const first = await invoke(submitImage, submitEvent('image', alice, imageRequest(LONG_DELAY), withKey('shared')));

      // Act
      const answer = await invoke(submitImage, submitEvent('image', bob, imageRequest(LONG_DELAY), withKey('shared')));

      // Assert
      expect(answer.statusCode).toBe(202);
      expect(answer.body.taskId).not.toBe(first.body.taskId);
      expect(answer.headers['Idempotent-Replayed']).toBeUndefined();
      await expectLedger(alice, 10 - IMAGE_COST);
      await expectLedger(bob, 10 - IMAGE_COST);
    });

    it.each([
      ['empty', ''],
      ['with a space', 'order 44'],
      ['non-ASCII', 'bestellung-ä'],
      ['256 characters long', 'k'.repeat(256)],
    ])('answers 400 for an Idempotency-Key that is %s, and debits nothing', async (_name, key) => {
      // Prepare
      const user = await h.createUser(10);

      // Act
      const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(), withKey(key)));

      // Assert
      expect(answer.statusCode).toBe(400);
      expect(answer.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: { 'headers.Idempotency-Key': [expect.any(String)] }, formErrors: [] },
      });
      await expectLedger(user, 10);
    });
  });

  describe('404 task not found', () => {
    it('answers 404 for a task id that does not exist', async () => {
      // Prepare
      const user = await h.createUser(1);

      // Act
      const answer = await invoke(getTaskHandler, getTaskEvent(user, 'no-such-task'));

      // Assert
      expect(answer.statusCode).toBe(404);
      expect(answer.body).toEqual({ error: 'Task not found' });
    });

    it('answers the same 404 for an existing task of another user, and leaves it alone', async () => {
      // Prepare
      const owner = await h.createUser(10);
      const stranger = await h.createUser(10);
      const submitted = await invoke(submitImage, submitEvent('image', owner, imageRequest(LONG_DELAY)));
      const taskId = String(submitted.body.taskId);
      // Once the dispatcher has sent it: from then on only a read of its owner could change it.
      const before = await storedWhenSent(h, owner.userId, taskId);

      // Act
      const answer = await invoke(getTaskHandler, getTaskEvent(stranger, taskId));

      // Assert
      expect(answer.statusCode).toBe(404);
      expect(answer.body).toEqual({ error: 'Task not found' });
      expect(await getTask(h.store, owner.userId, taskId)).toEqual(before);
      expect((await invoke(getTaskHandler, getTaskEvent(owner, taskId))).statusCode).toBe(200);
      await expectLedger(owner, 10 - IMAGE_COST);
      await expectLedger(stranger, 10);
    });
  });

  describe('500 internal error', () => {
    /** A port nothing listens on: bound, then released. */
    async function closedPort(): Promise<number> {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      return port;
    }

    function expectInternalError(answer: { statusCode: number; body: unknown; rawBody: string }, requestId: string) {
      expect(answer.statusCode).toBe(500);
      expect(answer.body).toEqual({ error: 'Internal error', requestId });
      expect(answer.rawBody).not.toMatch(/stack|\bat .+:\d+|Exception|ECONNREFUSED|\.ts\b/i);
    }

    it('answers { error: "Internal error", requestId } without a stack when the table is unreachable', async () => {
      // Prepare
      const user = await h.createUser(10);
      const port = await closedPort();
      const post = submitEvent('image', user, imageRequest());
      const get = getTaskEvent(user, 'any-task');
      h.logs.length = 0;

      // Act
      const { postAnswer, getAnswer } = await h.withEnv(
        { DYNAMODB_ENDPOINT: `http://127.0.0.1:${port}` },
        async () => ({
          postAnswer: await invoke(submitImage, post),
          getAnswer: await invoke(getTaskHandler, get),
        }),
      );

      // Assert
      expectInternalError(postAnswer, post.requestContext.requestId);
      expectInternalError(getAnswer, get.requestContext.requestId);
      const errorLines = h.logs.filter((line) => line.includes('Unexpected error'));
      expect(errorLines).toHaveLength(2);
      expect(errorLines[0]).toContain(post.requestContext.requestId);
      await expectLedger(user, 10);
    });

    it('answers 500 without a stack when the table does not exist', async () => {
      // Prepare
      const user = await h.createUser(10);
      const post = submitEvent('video', user, videoRequest());

      // Act
      const answer = await h.withEnv({ TABLE_NAME: 'no-such-table' }, () => invoke(submitVideo, post));

      // Assert
      expectInternalError(answer, post.requestContext.requestId);
      await expectLedger(user, 10);
    });
  });
});
