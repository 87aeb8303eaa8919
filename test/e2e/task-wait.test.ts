/**
 * Waiting in one request, black box over HTTP (the local gateway, the mock provider's callbacks, the
 * media worker): `Prefer: wait=N` on both submits and `?wait=N` on a task read. No durations are
 * asserted: a wait that runs out before the task ends on a loaded machine is asked again (an idempotent
 * replay of the submit, another read), until the state the test checks is reached.
 */
import { randomUUID } from 'node:crypto';
import { type ApiResponse, createApi, IMAGE_PATH, type TaskBody, taskPath, VIDEO_PATH } from './support/api';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);

if (target.runs('taskLoops')) {
  const apiKey = () => target.key('main').apiKey;

  /** Submits with `Prefer: wait=20` and an Idempotency-Key, replaying until the answer is a 200. */
  async function submitAndWait(path: string, json: Record<string, unknown>, key = randomUUID()) {
    const deadline = Date.now() + target.pollTimeoutMs;
    const send = () =>
      api.request(path, { apiKey: apiKey(), json, headers: { Prefer: 'wait=20', 'Idempotency-Key': key } });
    const first = await send();
    let last: ApiResponse = first;
    while (last.status === 202 && Date.now() < deadline) last = await send();
    return { first, last };
  }

  test.concurrent(
    'Prefer: wait on an image submit: 200 with the finished task, its credits and result URLs',
    async () => {
      // Act
      const { first, last } = await submitAndWait(IMAGE_PATH, {
        model: 'image-model-1',
        prompt: 'a kettle, answered in one request',
        providerInput: { mockDelayMs: 300 },
      });

      // Assert
      expect(first.headers.get('preference-applied')).toBe('wait=20');
      expect(last.status).toBe(200);
      expect(last.headers.get('preference-applied')).toBe('wait=20');
      const task = last.body as TaskBody;
      expect(task).toMatchObject({ status: 1, creditsUsed: 3, creditsRefunded: false });
      expect(task.imageUrls).toHaveLength(1);
      expect(last.headers.get('location')).toMatch(new RegExp(`/api/ai/tasks/${task.taskId}$`));
    },
    target.pollTimeoutMs + 30_000,
  );

  test.concurrent(
    'Prefer: wait on a video submit: 200 with the finished task and its video URL',
    async () => {
      // Act
      const { last } = await submitAndWait(VIDEO_PATH, {
        model: 'video-b-2-text-to-video',
        prompt: 'a pier, answered in one request',
        inputMode: 'text_to_video',
        providerInput: { mockDelayMs: 300 },
      });

      // Assert
      expect(last.status).toBe(200);
      const task = last.body as TaskBody;
      expect(task).toMatchObject({ status: 1, creditsUsed: 10 });
      expect(task.videoUrl).toMatch(/^https?:\/\//);
    },
    target.pollTimeoutMs + 30_000,
  );

  test.concurrent(
    'an idempotent replay of an ended task with Prefer: wait answers 200 at once with the same task',
    async () => {
      // Prepare
      const key = randomUUID();
      const json = { model: 'image-model-1', prompt: 'replayed after its end', providerInput: { mockDelayMs: 300 } };
      const { last: ended } = await submitAndWait(IMAGE_PATH, json, key);

      // Act
      const replay = await api.request(IMAGE_PATH, {
        apiKey: apiKey(),
        json,
        headers: { Prefer: 'wait=5', 'Idempotency-Key': key },
      });
      const plain = await api.request(IMAGE_PATH, { apiKey: apiKey(), json, headers: { 'Idempotency-Key': key } });

      // Assert
      expect(ended.status).toBe(200);
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.headers.get('preference-applied')).toBe('wait=5');
      expect(replay.body).toEqual(expect.objectContaining({ taskId: (ended.body as TaskBody).taskId, status: 1 }));
      // Without the preference a replay answers as it always did: 202 with the submission body.
      expect(plain.status).toBe(202);
      expect(plain.headers.get('preference-applied')).toBeNull();
      expect(plain.body).toEqual({ taskId: (ended.body as TaskBody).taskId, status: 1, creditsUsed: 3 });
    },
    target.pollTimeoutMs + 30_000,
  );

  test.concurrent('a task that does not end within the wait: 202 as without it, Preference-Applied says the wait', async () => {
    // Act
    const answer = await api.request(IMAGE_PATH, {
      apiKey: apiKey(),
      json: { model: 'image-model-1', prompt: 'still running', providerInput: { mockDelayMs: 3_600_000 } },
      headers: { Prefer: 'respond-async, wait=1' },
    });

    // Assert
    expect(answer.status).toBe(202);
    expect(answer.headers.get('preference-applied')).toBe('wait=1');
    expect(answer.body).toEqual({ taskId: expect.any(String), status: 0, creditsUsed: 3 });
  });

  test.concurrent('a wait above 20 s is honoured as 20; a wait that is not a number is a 400', async () => {
    // Act
    const capped = await api.request(IMAGE_PATH, {
      apiKey: apiKey(),
      json: { model: 'image-model-1', prompt: 'capped wait', providerInput: { mockDelayMs: 300 } },
      headers: { Prefer: 'wait=600' },
    });
    const bad = await api.request(IMAGE_PATH, {
      apiKey: apiKey(),
      json: { model: 'image-model-1', prompt: 'bad wait' },
      headers: { Prefer: 'wait=soon' },
    });

    // Assert
    expect(capped.headers.get('preference-applied')).toBe('wait=20');
    expect([200, 202]).toContain(capped.status);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: 'Invalid request',
      details: {
        fieldErrors: { 'headers.Prefer': ['wait must be a whole number of seconds, e.g. Prefer: wait=10'] },
        formErrors: [],
      },
    });
  });

  test.concurrent(
    'GET ?wait answers with the ended task through the gateway; a bad wait is a 400',
    async () => {
      // Prepare
      const submitted = await api.submit(IMAGE_PATH, {
        model: 'image-model-1',
        prompt: 'read with a wait',
        providerInput: { mockDelayMs: 300 },
      });

      // Act
      const deadline = Date.now() + target.pollTimeoutMs;
      let read = await api.request(`${taskPath(submitted.taskId)}?wait=20`, { apiKey: apiKey() });
      while (read.status === 200 && (read.body as TaskBody).status === 0 && Date.now() < deadline) {
        read = await api.request(`${taskPath(submitted.taskId)}?wait=20`, { apiKey: apiKey() });
      }
      const bad = await api.request(`${taskPath(submitted.taskId)}?wait=25`, { apiKey: apiKey() });

      // Assert
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ taskId: submitted.taskId, status: 1 });
      expect(bad.status).toBe(400);
    },
    target.pollTimeoutMs + 30_000,
  );
}
