/**
 * Whole tasks through the typed client (client/): submit, wait (reads that wait on the service), run
 * (submit with `Prefer: wait`, then wait), read; a failed task rejects with the
 * task; an idempotent retry returns the same task; waiting stops when its signal aborts.
 */
import { GenerationClient, TaskFailedError } from '../../client/src/index';
import { download, isMp4, isPng } from './support/api';
import { loadTarget } from './support/target';

const target = loadTarget();
const TIMEOUT_MS = target.pollTimeoutMs + 20_000;
const client = new GenerationClient({ baseUrl: target.baseUrl, apiKey: target.key('main').apiKey });
const quick = { mockDelayMs: 300 };

describe('the typed client end to end', () => {
  test(
    'an image task: submitImage, then waitForTask resolves with the images',
    async () => {
      // Act
      const submitted = await client.submitImage({
        model: 'image-model-1',
        prompt: 'a client lighthouse',
        providerInput: quick,
      });
      const task = await client.waitForTask(submitted.taskId, { intervalMs: 250 });

      // Assert
      expect(task.status).toBe(1);
      const urls = 'imageUrls' in task ? (task.imageUrls ?? []) : [];
      expect(urls).toHaveLength(1);
      expect(isPng((await download(urls[0] ?? '')).bytes)).toBe(true);
    },
    TIMEOUT_MS,
  );

  test(
    'a video task: submitVideo, then waitForTask resolves with the video',
    async () => {
      // Act
      const submitted = await client.submitVideo({
        model: 'video-b-2-text-to-video',
        inputMode: 'text_to_video',
        prompt: 'a client wave',
        providerInput: quick,
      });
      const task = await client.waitForTask(submitted.taskId, { intervalMs: 250 });

      // Assert
      expect(task.status).toBe(1);
      const url = 'videoUrl' in task ? task.videoUrl : undefined;
      expect(isMp4((await download(url ?? '')).bytes)).toBe(true);
    },
    TIMEOUT_MS,
  );

  test(
    'run: submit with Prefer: wait, then wait; resolves with the images, or rejects with a failed task',
    async () => {
      // Act
      const task = await client.run('image', {
        model: 'image-model-1',
        prompt: 'a run lighthouse',
        providerInput: quick,
      });
      const failure = await client
        .run('image', {
          model: 'image-model-1',
          prompt: 'a failed run',
          providerInput: { ...quick, mockOutcome: 'fail' },
        })
        .catch((error: unknown) => error);

      // Assert
      expect(task.status).toBe(1);
      const urls = 'imageUrls' in task ? (task.imageUrls ?? []) : [];
      expect(isPng((await download(urls[0] ?? '')).bytes)).toBe(true);
      expect(failure).toBeInstanceOf(TaskFailedError);
      expect((failure as TaskFailedError).task).toMatchObject({ status: 2, creditsRefunded: true });
    },
    2 * TIMEOUT_MS,
  );

  test(
    'a failed task rejects waitForTask with the task, refunded',
    async () => {
      // Prepare
      const submitted = await client.submitImage({
        model: 'image-model-1',
        prompt: 'a failing lighthouse',
        providerInput: { ...quick, mockOutcome: 'fail' },
      });

      // Act
      const failure = await client.waitForTask(submitted.taskId, { intervalMs: 250 }).catch((error: unknown) => error);

      // Assert
      expect(failure).toBeInstanceOf(TaskFailedError);
      expect((failure as TaskFailedError).task).toMatchObject({ status: 2, creditsRefunded: true });
    },
    TIMEOUT_MS,
  );

  test(
    'the same Idempotency-Key twice is one task; listings and models answer',
    async () => {
      // Prepare
      const idempotencyKey = `client-${Date.now()}`;

      // Act
      const first = await client.submitImage({ model: 'image-model-4', prompt: 'once' }, { idempotencyKey });
      const second = await client.submitImage({ model: 'image-model-4', prompt: 'once' }, { idempotencyKey });
      const listed = await client.listTasks({ limit: 10, type: 'image' });
      const models = await client.models();

      // Assert
      expect(second.taskId).toBe(first.taskId);
      expect(listed.tasks.map((task) => task.taskId)).toContain(first.taskId);
      expect(models.models).toHaveLength(20);
    },
    TIMEOUT_MS,
  );

  test(
    'waitForTask stops when its signal aborts',
    async () => {
      // Prepare
      const submitted = await client.submitImage({
        model: 'image-model-1',
        prompt: 'a slow lighthouse',
        providerInput: { mockDelayMs: 60_000 },
      });
      const controller = new AbortController();

      // Act
      const waiting = client.waitForTask(submitted.taskId, { intervalMs: 200, signal: controller.signal });
      controller.abort(new Error('stop waiting'));

      // Assert
      await expect(waiting).rejects.toThrow('stop waiting');
    },
    TIMEOUT_MS,
  );
});
