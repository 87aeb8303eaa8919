/**
 * Uploads (issue 27) against the target: the presigned POST straight to storage (the local stand-in,
 * LocalStack's S3 or S3 itself), and every refused reference a 400 naming its `inputImageUrls` entry
 * with no task made (so nothing debited): another account's upload, a missing one, one never sent,
 * mislabelled bytes (text or JPEG under a PNG label), an inline image whose bytes or encoding are wrong;
 * a file over the limit is refused before storage. An expired upload needs the store's clock: it is
 * covered on the local stack by test/integration/uploads.test.ts, as is one over the limit at submit.
 */
import { randomUUID } from 'node:crypto';
import { tinyPng } from '../support/png';
import { createApi, IMAGE_PATH } from './support/api';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);
const mainKey = target.key('main').apiKey;
const QUICK_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = target.pollTimeoutMs + 30_000;
const UNKNOWN = 'Unknown upload: no upload of yours has this id (it may have expired)';

interface CreatedUpload {
  uploadId: string;
  uploadUrl: string;
  uploadFields: Record<string, string>;
  url: string;
}

const JPEG_START = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00]);

/** Both steps: the presigned POST asked for with `apiKey`, then `bytes` sent straight to storage. */
async function upload(bytes: Buffer | undefined, apiKey = mainKey, contentType = 'image/png'): Promise<CreatedUpload> {
  const size = bytes?.length ?? 100;
  const created = await api.request('/api/ai/uploads', { apiKey, json: { contentType, size } });
  if (created.status !== 201) throw new Error(`POST /api/ai/uploads answered ${created.status}: ${created.text}`);
  const answer = created.body as CreatedUpload;
  if (bytes) {
    const form = new FormData();
    for (const [name, value] of Object.entries(answer.uploadFields)) form.append(name, value);
    form.append('file', new Blob([bytes], { type: contentType }), 'file');
    const stored = await fetch(answer.uploadUrl, { method: 'POST', body: form });
    if (stored.status !== 204) throw new Error(`The presigned POST answered ${stored.status}: ${await stored.text()}`);
  }
  return answer;
}

/** True when the main user has a task with this prompt (a refused submit makes none, so debits nothing). */
async function hasTaskWithPrompt(prompt: string): Promise<boolean> {
  const listed = await api.request('/api/ai/tasks?limit=100&type=image', { apiKey: mainKey });
  return (listed.body as { tasks: { prompt: string }[] }).tasks.some((task) => task.prompt === prompt);
}

const refusal = (fieldErrors: Record<string, string[]>) => ({
  error: 'Invalid request',
  details: { fieldErrors, formErrors: [] },
});

describe('uploads', () => {
  test(
    'missing, never-sent and mislabelled uploads (text or JPEG bytes under a PNG label) are each a 400 naming the entry, and no task is made',
    async () => {
      // Prepare
      const notSent = await upload(undefined);
      const textAsPng = await upload(Buffer.from('plain text, not a picture at all'));
      const jpegAsPng = await upload(JPEG_START);
      const prompt = `e2e uploads refused ${randomUUID()}`;

      // Act
      const refused = await api.request(IMAGE_PATH, {
        apiKey: mainKey,
        json: {
          model: 'image-model-1',
          prompt,
          inputImageUrls: [`upload://${randomUUID()}`, notSent.url, textAsPng.url, jpegAsPng.url],
        },
      });

      // Assert
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual(
        refusal({
          'inputImageUrls.0': [UNKNOWN],
          'inputImageUrls.1': ['The upload has no file yet: send it with the uploadUrl and uploadFields first'],
          'inputImageUrls.2': [
            'The uploaded file is not image/png (checked on its bytes: not a PNG, JPEG or WebP image)',
          ],
          'inputImageUrls.3': ['The uploaded file is not image/png (checked on its bytes: image/jpeg)'],
        }),
      );
      expect(await hasTaskWithPrompt(prompt)).toBe(false);
    },
    QUICK_TIMEOUT_MS,
  );

  test(
    'a file over the limit is refused before it reaches storage: POST /api/ai/uploads answers 400 naming size',
    async () => {
      // Act (1 GB: over any limit a deployment may set, 100 MB at most)
      const refused = await api.request('/api/ai/uploads', {
        apiKey: mainKey,
        json: { contentType: 'image/png', size: 1024 * 1024 * 1024 },
      });

      // Assert
      expect(refused.status).toBe(400);
      expect(Object.keys((refused.body as { details: { fieldErrors: object } }).details.fieldErrors)).toEqual(['size']);
    },
    QUICK_TIMEOUT_MS,
  );

  test(
    'bad inline data: entries are each a 400 naming the entry, and no task is made',
    async () => {
      // Prepare
      const prompt = `e2e inline refused ${randomUUID()}`;

      // Act
      const refused = await api.request(IMAGE_PATH, {
        apiKey: mainKey,
        json: {
          model: 'image-model-1',
          prompt,
          inputImageUrls: [
            `data:image/png;base64,${JPEG_START.toString('base64')}`,
            'data:image/png;base64,%%%',
            `data:image/gif;base64,${tinyPng().toString('base64')}`,
          ],
        },
      });

      // Assert
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual(
        refusal({
          'inputImageUrls.0': ['The inline image is not image/png (checked on its bytes: image/jpeg)'],
          'inputImageUrls.1': ['The inline image is not valid base64'],
          'inputImageUrls.2': ['Inline images must be image/png, image/jpeg or image/webp, not image/gif'],
        }),
      );
      expect(await hasTaskWithPrompt(prompt)).toBe(false);
    },
    QUICK_TIMEOUT_MS,
  );

  if (target.runs('uploadOwnership')) {
    test(
      "another account's upload reads exactly as a missing one: the same 400, and no task is made",
      async () => {
        // Prepare
        const foreign = await upload(tinyPng(), target.key('other').apiKey);
        const prompt = `e2e foreign upload ${randomUUID()}`;

        // Act
        const refused = await api.request(IMAGE_PATH, {
          apiKey: mainKey,
          json: { model: 'image-model-1', prompt, inputImageUrls: [foreign.url, `upload://${randomUUID()}`] },
        });

        // Assert
        expect(refused.status).toBe(400);
        expect(refused.body).toEqual(refusal({ 'inputImageUrls.0': [UNKNOWN], 'inputImageUrls.1': [UNKNOWN] }));
        expect(await hasTaskWithPrompt(prompt)).toBe(false);
      },
      QUICK_TIMEOUT_MS,
    );
  }

  if (target.runs('uploadTask')) {
    test(
      'an uploaded PNG and an inline data: PNG make an image-to-image task that completes; the task links to neither',
      async () => {
        // Prepare
        const png = tinyPng();
        const uploaded = await upload(png);

        // Act
        const submitted = await api.submit(IMAGE_PATH, {
          model: 'image-model-1',
          prompt: 'e2e: the reference, in winter',
          inputImageUrls: [uploaded.url, `data:image/png;base64,${png.toString('base64')}`],
          providerInput: { mockDelayMs: 0 },
        });
        const done = await api.pollUntilDone(submitted.taskId);

        // Assert
        expect(done.status).toBe(1);
        expect(done.imageUrls?.length).toBeGreaterThan(0);
        // No link to the uploads (the provider got them signed, at send), nor the inline bytes.
        expect(JSON.stringify(done)).not.toContain('/uploads/');
        expect(JSON.stringify(done)).not.toContain('data:image');
      },
      TEST_TIMEOUT_MS,
    );
  }
});
