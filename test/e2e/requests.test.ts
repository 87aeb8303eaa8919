/**
 * How the API answers requests it cannot accept (validation, media type, malformed JSON, unknown
 * routes, oversized bodies, credits, ownership) and idempotent submissions.
 */
import { randomUUID } from 'node:crypto';
import { type ApiResponse, createApi, IMAGE_PATH, REFERENCE_IMAGE, taskPath, VIDEO_PATH } from './support/api';
import { expectGatewayAnswer as gatewayAnswer } from './support/gateway-answer';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);
const mainKey = target.key('main').apiKey;
const TEST_TIMEOUT_MS = target.pollTimeoutMs + 10_000;
/** Requests only, no task followed: still room for a loaded machine's slow answers. */
const QUICK_TIMEOUT_MS = 60_000;

/** The most expensive request in the catalog (320 credits): its 402 answer tells a user's balance. */
const PROBE = { model: 'video-a/v2-1-master-text-to-video', prompt: 'probe', inputMode: 'text_to_video', duration: 10 };
const PROBE_COST = 320;

const expectGatewayAnswer = (response: ApiResponse, status: number, body: unknown) =>
  gatewayAnswer(target, response, status, body);

/** A user's balance, read from the 402 answer to a request that costs more than it has. */
async function balanceOf(apiKey: string): Promise<number> {
  const response = await api.request(VIDEO_PATH, { apiKey, json: PROBE });
  if (response.status !== 402) {
    throw new Error(`The balance probe (${PROBE_COST} credits) answered ${response.status}: ${response.text}`);
  }
  return (response.body as { balance: number }).balance;
}

describe('validation: 400 with the failing path named', () => {
  const cases: [string, string, Record<string, unknown>, string][] = [
    ['unknown field', IMAGE_PATH, { model: 'image-model-1', prompt: 'x', colour: 'red' }, 'colour'],
    ['missing prompt', IMAGE_PATH, { model: 'image-model-1' }, 'prompt'],
    ['prompt over image-model-4 cap', IMAGE_PATH, { model: 'image-model-4', prompt: 'a'.repeat(5001) }, 'prompt'],
    [
      'too many reference images for image-model-1',
      IMAGE_PATH,
      { model: 'image-model-1', prompt: 'x', inputImageUrls: Array.from({ length: 5 }, () => REFERENCE_IMAGE) },
      'inputImageUrls',
    ],
    ['numOutputs over 10', IMAGE_PATH, { model: 'image-model-1', prompt: 'x', numOutputs: 11 }, 'numOutputs'],
    ['unknown model', IMAGE_PATH, { model: 'image-model-9', prompt: 'x' }, 'model'],
    [
      'image_to_video on a -text-to-video model',
      VIDEO_PATH,
      {
        model: 'video-b-2-text-to-video',
        prompt: 'x',
        inputMode: 'image_to_video',
        inputImageUrls: [REFERENCE_IMAGE],
      },
      'inputMode',
    ],
    [
      'image_to_video without inputImageUrls',
      VIDEO_PATH,
      { model: 'video-e/2-6-image-to-video', prompt: 'x', inputMode: 'image_to_video' },
      'inputImageUrls',
    ],
    [
      'family D duration other than 8',
      VIDEO_PATH,
      { model: 'video-d3', prompt: 'x', inputMode: 'text_to_video', duration: 10 },
      'duration',
    ],
    // What is generated is what is priced: billed provider keys may only repeat the priced value.
    [
      'more images than paid for',
      IMAGE_PATH,
      { model: 'image-model-2', prompt: 'x', providerInput: { num_images: 10 } },
      'providerInput.num_images',
    ],
    [
      'a larger size than priced',
      IMAGE_PATH,
      { model: 'image-model-2', prompt: 'x', providerInput: { width: 4096, height: 4096 } },
      'providerInput.width',
    ],
    [
      'an unknown image tier',
      IMAGE_PATH,
      { model: 'image-model-3', prompt: 'x', providerInput: { resolution: '4K ' } },
      'providerInput.resolution',
    ],
    [
      'an unknown video resolution',
      VIDEO_PATH,
      {
        model: 'video-b-2-text-to-video',
        prompt: 'x',
        inputMode: 'text_to_video',
        providerInput: { resolution: '1080' },
      },
      'providerInput.resolution',
    ],
    [
      'a longer video than priced',
      VIDEO_PATH,
      {
        model: 'video-b-2-text-to-video',
        prompt: 'x',
        inputMode: 'text_to_video',
        providerInput: { params: { duration: 10 } },
      },
      'providerInput.params.duration',
    ],
    // Values a task item cannot hold.
    [
      'a number too large to store',
      IMAGE_PATH,
      { model: 'image-model-1', prompt: 'x', providerInput: { a: 1e300 } },
      'providerInput.a',
    ],
    [
      'a fraction too small to store',
      IMAGE_PATH,
      { model: 'image-model-1', prompt: 'x', guidanceScale: 1e-200 },
      'guidanceScale',
    ],
    [
      'an empty key',
      IMAGE_PATH,
      { model: 'image-model-1', prompt: 'x', providerInput: { b: { '': 1 } } },
      'providerInput.b.',
    ],
  ];

  test.concurrent.each(cases)(
    '%s',
    async (_name, path, json, failingPath) => {
      const response = await api.request(path, { apiKey: mainKey, json });

      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: expect.any(Object), formErrors: expect.any(Array) },
      });
      const { fieldErrors } = (response.body as { details: { fieldErrors: Record<string, string[]> } }).details;
      expect(fieldErrors[failingPath]).toEqual([expect.any(String)]);
    },
    QUICK_TIMEOUT_MS,
  );

  test.concurrent(
    'a body that is not a JSON object is a form error',
    async () => {
      const response = await api.request(IMAGE_PATH, { apiKey: mainKey, json: ['image-model-1'] });

      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: {}, formErrors: [expect.any(String)] },
      });
    },
    QUICK_TIMEOUT_MS,
  );

  test.concurrent(
    'malformed JSON -> 400 Invalid request',
    async () => {
      const response = await api.request(IMAGE_PATH, {
        apiKey: mainKey,
        body: '{"model": "image-model-1", "prompt": ',
        headers: { 'Content-Type': 'application/json' },
      });

      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: {}, formErrors: [expect.any(String)] },
      });
    },
    QUICK_TIMEOUT_MS,
  );
});

describe('requests the API does not take', () => {
  test.concurrent(
    'a body that is not JSON by Content-Type -> 415',
    async () => {
      const response = await api.request(VIDEO_PATH, {
        apiKey: mainKey,
        body: 'model=video-d3&prompt=x',
        headers: { 'Content-Type': 'text/plain' },
      });

      expect(response.status).toBe(415);
      expect(response.body).toEqual({ error: 'Unsupported Media Type' });
    },
    QUICK_TIMEOUT_MS,
  );

  test.concurrent(
    'an unknown route -> 404 Not found',
    async () => {
      const response = await api.request('/api/ai/audio/generate', { apiKey: mainKey, json: { prompt: 'x' } });

      expectGatewayAnswer(response, 404, { error: 'Not found' });
    },
    QUICK_TIMEOUT_MS,
  );

  test.concurrent(
    'a body over 10 MB -> 413',
    async () => {
      const prompt = 'a'.repeat(10 * 1024 * 1024);

      const response = await api.request(IMAGE_PATH, { apiKey: mainKey, json: { model: 'image-model-1', prompt } });

      expectGatewayAnswer(response, 413, { error: 'Payload too large' });
    },
    QUICK_TIMEOUT_MS,
  );

  test.concurrent(
    'an unknown task id -> 404 Task not found',
    async () => {
      const response = await api.request(taskPath(randomUUID()), { apiKey: mainKey });

      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: 'Task not found' });
    },
    QUICK_TIMEOUT_MS,
  );
});

if (target.runs('insufficientCredits')) {
  test.concurrent(
    'not enough credits -> 402 with the price and the balance',
    async () => {
      const poor = target.key('poor');

      const response = await api.request(IMAGE_PATH, {
        apiKey: poor.apiKey,
        json: { model: 'image-model-1', prompt: 'too expensive for me' },
      });

      expect(response.status).toBe(402);
      expect(response.body).toEqual({
        error: 'Insufficient credits',
        required: 3,
        balance: poor.balance ?? expect.any(Number),
      });
      expect((response.body as { balance: number }).balance).toBeLessThan(3);
    },
    QUICK_TIMEOUT_MS,
  );
}

if (target.runs('ownership')) {
  test.concurrent(
    "another user's GET of a task -> 404 Task not found",
    async () => {
      const submitted = await api.submit(IMAGE_PATH, { model: 'image-model-1', prompt: 'mine only' });

      const foreign = await api.request(taskPath(submitted.taskId), { apiKey: target.key('other').apiKey });
      const own = await api.request(taskPath(submitted.taskId), { apiKey: mainKey });

      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({ error: 'Task not found' });
      expect(own.status).toBe(200);
      expect(own.body).toMatchObject({ taskId: submitted.taskId });
      expect([1, 2]).toContain((await api.pollUntilDone(submitted.taskId)).status);
    },
    TEST_TIMEOUT_MS,
  );
}

describe('Idempotency-Key', () => {
  if (target.runs('idempotentDebit')) {
    test.concurrent(
      'the same key and body -> the same task, debited once',
      async () => {
        const other = target.key('other');
        const idempotencyKey = randomUUID();
        const body = { model: 'image-model-1', prompt: 'only once' };
        const before = await balanceOf(other.apiKey);
        if (other.balance !== undefined) expect(before).toBe(other.balance);

        const first = await api.submit(IMAGE_PATH, body, other.apiKey, { 'Idempotency-Key': idempotencyKey });
        const replay = await api.submit(IMAGE_PATH, body, other.apiKey, { 'Idempotency-Key': idempotencyKey });
        const after = await balanceOf(other.apiKey);

        expect(replay.taskId).toBe(first.taskId);
        expect(replay.creditsUsed).toBe(first.creditsUsed);
        expect(after).toBe(before - first.creditsUsed);
        const task = await api.pollUntilDone(first.taskId, { apiKey: other.apiKey });
        expect([1, 2]).toContain(task.status);
      },
      TEST_TIMEOUT_MS,
    );
  }

  test.concurrent(
    'the same key with another body -> 409',
    async () => {
      const idempotencyKey = randomUUID();
      const headers = { 'Idempotency-Key': idempotencyKey };
      const first = await api.submit(IMAGE_PATH, { model: 'image-model-4', prompt: 'first' }, mainKey, headers);

      const conflict = await api.request(IMAGE_PATH, {
        apiKey: mainKey,
        json: { model: 'image-model-4', prompt: 'second' },
        headers,
      });

      expect(conflict.status).toBe(409);
      expect(conflict.body).toEqual({ error: 'Idempotency key reused with a different request' });
      expect([1, 2]).toContain((await api.pollUntilDone(first.taskId)).status);
    },
    TEST_TIMEOUT_MS,
  );
});
