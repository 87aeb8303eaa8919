/**
 * The whole loop over HTTP: submit -> 202 + Location -> poll -> completed with result URLs that
 * download as real PNG / MP4 files; and the provider's failures -> status 2, errorCode, refunded.
 */
import { createApi, download, IMAGE_PATH, isMp4, isPng, REFERENCE_IMAGE, taskPath, VIDEO_PATH } from './support/api';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);
const TEST_TIMEOUT_MS = target.pollTimeoutMs + 10_000;

/** The mock provider finishes a bit sooner than its default 1.5 s: the suite has many loops to run. */
const QUICK_PROVIDER = { mockDelayMs: 300 };

/** `Location` resolved against the submit URL: where a client following it lands (any stage prefix included). */
function resolvedLocation(response: { headers: Headers }): string {
  return new URL(response.headers.get('location') ?? '', `${target.baseUrl}${IMAGE_PATH}`).href;
}

/** Submits, checks the acceptance answer, polls to the end; returns the final task. */
async function runTask(path: typeof IMAGE_PATH | typeof VIDEO_PATH, body: Record<string, unknown>) {
  const submitted = await api.submit(path, { ...body, providerInput: QUICK_PROVIDER });
  expect(resolvedLocation(submitted.response)).toBe(`${target.baseUrl}${taskPath(submitted.taskId)}`);
  expect(submitted.status).toBe(0);
  expect(submitted.creditsUsed).toBeGreaterThan(0);
  const task = await api.pollUntilDone(submitted.taskId);
  expect(task).toMatchObject({
    taskId: submitted.taskId,
    model: body.model,
    prompt: body.prompt,
    creditsUsed: submitted.creditsUsed,
  });
  return task;
}

async function expectPng(url: string): Promise<void> {
  const file = await download(url);
  expect(file.status).toBe(200);
  expect(file.contentType).toMatch(/^image\/png\b/);
  expect(isPng(file.bytes)).toBe(true);
}

async function expectMp4(url: string): Promise<void> {
  const file = await download(url);
  expect(file.status).toBe(200);
  expect(file.contentType).toMatch(/^video\/mp4\b/);
  expect(isMp4(file.bytes)).toBe(true);
}

describe('acceptance', () => {
  test.concurrent(
    'a submitted task is answered 202 with Location and is readable by its owner at once',
    async () => {
      const body = { model: 'image-model-1', prompt: 'a quiet harbour' };

      const submitted = await api.submit(IMAGE_PATH, body);
      const task = await api.getTask(submitted.taskId);

      expect(resolvedLocation(submitted.response)).toBe(`${target.baseUrl}${taskPath(submitted.taskId)}`);
      expect(submitted.response.body).toEqual({ taskId: submitted.taskId, status: 0, creditsUsed: 3 });
      expect(task).toMatchObject({ taskId: submitted.taskId, type: 'image', ...body, creditsUsed: 3 });
      expect([0, 1, 2]).toContain(task.status);
      expect(Number.isNaN(Date.parse(task.createdAt))).toBe(false);
      expect(Number.isNaN(Date.parse(task.updatedAt))).toBe(false);
      // Ends the task, so nothing is left moving credits after the run.
      expect([1, 2]).toContain((await api.pollUntilDone(submitted.taskId)).status);
    },
    TEST_TIMEOUT_MS,
  );
});

if (target.runs('taskLoops')) {
  describe('image tasks complete with downloadable PNGs', () => {
    const cases: [string, Record<string, unknown>][] = [
      ['image-model-1 text-to-image', { model: 'image-model-1', prompt: 'a lighthouse at dusk' }],
      [
        'image-model-1 image-to-image (edit)',
        { model: 'image-model-1', prompt: 'make it snow', inputImageUrls: [REFERENCE_IMAGE] },
      ],
      ['image-model-2', { model: 'image-model-2', prompt: 'a fox in a forest', width: 1536, height: 1024 }],
      ['image-model-3', { model: 'image-model-3', prompt: 'a city skyline', aspectRatio: '16:9' }],
      ['image-model-4', { model: 'image-model-4', prompt: 'a bowl of fruit', negativePrompt: 'blur' }],
    ];

    test.concurrent.each(cases)(
      '%s',
      async (_name, body) => {
        const task = await runTask(IMAGE_PATH, body);

        expect(task).toMatchObject({ type: 'image', status: 1, creditsRefunded: false });
        expect(task.errorCode).toBeUndefined();
        expect(task.imageUrls).toHaveLength(1);
        await expectPng(task.imageUrls?.[0] ?? '');
      },
      TEST_TIMEOUT_MS,
    );

    test.concurrent(
      'numOutputs 2 gives two distinct PNGs',
      async () => {
        const task = await runTask(IMAGE_PATH, { model: 'image-model-4', prompt: 'two cats', numOutputs: 2 });

        expect(task.status).toBe(1);
        expect(task.creditsUsed).toBe(6);
        const urls = task.imageUrls ?? [];
        expect(urls).toHaveLength(2);
        expect(new Set(urls).size).toBe(2);
        for (const url of urls) await expectPng(url);
      },
      TEST_TIMEOUT_MS,
    );
  });

  describe('video tasks of every family complete with a downloadable MP4', () => {
    const textToVideo = (model: string) => ({ model, prompt: 'waves on a beach', inputMode: 'text_to_video' });
    const imageToVideo = (model: string, images = 1) => ({
      model,
      prompt: 'the picture comes alive',
      inputMode: 'image_to_video',
      inputImageUrls: Array.from({ length: images }, (_, i) => `${REFERENCE_IMAGE}?n=${i}`),
    });
    const cases: [string, Record<string, unknown>][] = [
      ['A image_to_video', imageToVideo('video-a/v2-1-standard')],
      ['A text_to_video', textToVideo('video-a/v2-1-master-text-to-video')],
      ['B text_to_video', textToVideo('video-b-2-text-to-video')],
      ['B image_to_video', imageToVideo('video-b-2-image-to-video')],
      ['C text_to_video', textToVideo('video-c/02-text-to-video-standard')],
      ['C image_to_video', imageToVideo('video-c/02-image-to-video-pro')],
      ['D text_to_video', { ...textToVideo('video-d3_fast'), duration: 8 }],
      ['D image_to_video with 3 images', imageToVideo('video-d3_lite', 3)],
      ['E text_to_video', { ...textToVideo('video-e/2-6-text-to-video'), duration: 10 }],
      ['E image_to_video', imageToVideo('video-e/2-6-image-to-video')],
      ['F text_to_video', textToVideo('video-f/1.5-pro')],
      ['F image_to_video', imageToVideo('video-f/1.5-pro')],
    ];

    test.concurrent.each(cases)(
      'family %s',
      async (_name, body) => {
        const task = await runTask(VIDEO_PATH, body);

        expect(task).toMatchObject({ type: 'video', status: 1, creditsRefunded: false });
        expect(task.imageUrls).toBeUndefined();
        expect(typeof task.videoUrl).toBe('string');
        await expectMp4(task.videoUrl ?? '');
      },
      TEST_TIMEOUT_MS,
    );
  });
}

if (target.runs('providerFailures')) {
  describe('provider failures end the task with status 2 and a refund', () => {
    const cases: [string, string, string, Record<string, unknown>][] = [
      ['the provider fails the task', 'fail', 'PROVIDER_ERROR', { model: 'image-model-1', prompt: 'fail me' }],
      [
        'the provider refuses the input',
        'reject',
        'PROVIDER_REJECTED',
        { model: 'image-model-2', prompt: 'refuse me' },
      ],
      [
        'the result cannot be fetched',
        'broken_result',
        'STORAGE_ERROR',
        { model: 'video-f/1.5-pro', prompt: 'lose my result', inputMode: 'text_to_video' },
      ],
    ];

    test.concurrent.each(cases)(
      '%s (mockOutcome %s) -> %s',
      async (_name, mockOutcome, errorCode, body) => {
        const path = 'inputMode' in body ? VIDEO_PATH : IMAGE_PATH;

        const submitted = await api.submit(path, { ...body, providerInput: { mockOutcome } });
        const task = await api.pollUntilDone(submitted.taskId);

        expect(task).toMatchObject({
          taskId: submitted.taskId,
          status: 2,
          errorCode,
          creditsUsed: submitted.creditsUsed,
          creditsRefunded: true,
        });
        expect(typeof task.errorMessage).toBe('string');
        expect(task.errorMessage).not.toBe('');
        expect(task.imageUrls).toBeUndefined();
        expect(task.videoUrl).toBeUndefined();
      },
      TEST_TIMEOUT_MS,
    );
  });
}
