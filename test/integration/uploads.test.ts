/**
 * Uploads (issue 27) on the local stack, over real HTTP: POST /api/ai/uploads, the presigned POST to
 * the gateway's S3 stand-in (local/upload-bucket.ts, the same policy and signature checks as S3), an
 * image-to-image task whose provider downloads the upload through its signed GET URL, and every refused
 * reference a 400 naming its `inputImageUrls` entry with nothing debited.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ApiError, GenerationClient } from '../../client/src/index';
import { presignPost, presignUrl } from '../../functions/aws/signer';
import { createS3UploadReader } from '../../functions/media/uploads';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { putUpload } from '../../functions/store/uploads';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { freePorts } from '../../local/spawn-local-stack';
import { tinyPng } from '../support/png';
import { spawnTestStack, type TestStack } from '../support/test-stack';

/** The stack's upload limit for this file: small, so a too-big file is cheap to send. */
const MAX_BYTES = 4096;
/** The stack's quota of open uploads per account: above what `owner` makes in this file. */
const MAX_OPEN = 30;
const IMAGE_PATH = '/api/ai/image/generate';
const UNKNOWN = 'Unknown upload: no upload of yours has this id (it may have expired)';

let stack: TestStack;
let store: StoreContext;
let mockUrl: string;
let owner: string;
let stranger: string;

interface CreatedUpload {
  uploadId: string;
  uploadUrl: string;
  uploadFields: Record<string, string>;
  expiresAt: string;
  url: string;
}

async function api(
  path: string,
  apiKey: string,
  json: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; replayed?: string }> {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(json),
  });
  const replayed = response.headers.get('idempotent-replayed');
  return { status: response.status, body: (await response.json()) as unknown, ...(replayed ? { replayed } : {}) };
}

async function get(path: string, apiKey: string): Promise<{ status: number; body: unknown; text: string }> {
  const response = await fetch(`${stack.baseUrl}${path}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as unknown, text };
}

async function startUpload(apiKey: string, contentType = 'image/png', size = 100): Promise<CreatedUpload> {
  const answer = await api('/api/ai/uploads', apiKey, { contentType, size });
  if (answer.status !== 201) throw new Error(`POST /api/ai/uploads answered ${answer.status}`);
  return answer.body as CreatedUpload;
}

/** The browser-form POST S3 takes: the fields as given, then the file. */
async function postForm(
  uploadUrl: string,
  fields: Record<string, string>,
  bytes: Buffer,
  fileType = 'image/png',
): Promise<{ status: number; text: string; contentType: string }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([bytes], { type: fileType }), 'file');
  const response = await fetch(uploadUrl, { method: 'POST', body: form });
  return {
    status: response.status,
    text: await response.text(),
    contentType: response.headers.get('content-type') ?? '',
  };
}

/** How many upload records the account holds. */
async function uploadCount(userId: string): Promise<number> {
  const out = await store.doc.send(
    new QueryCommand({
      TableName: store.tableName,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
      ExpressionAttributeValues: { ':pk': `USER#${userId}`, ':sk': 'UPLOAD#' },
      Select: 'COUNT',
    }),
  );
  return out.Count ?? 0;
}

async function balanceOf(apiKey: string): Promise<number> {
  return ((await get('/api/ai/credits?limit=1', apiKey)).body as { balance: number }).balance;
}

async function pollUntilDone(taskId: string, apiKey: string): Promise<{ status: number; text: string }> {
  // Bounded polling of a real task (the mock finishes in 300 ms; the media worker copies the result).
  for (let attempt = 0; attempt < 600; attempt++) {
    const task = await get(`/api/ai/tasks/${taskId}`, apiKey);
    if ((task.body as { status: number }).status !== 0)
      return { status: (task.body as { status: number }).status, text: task.text };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`Task ${taskId} still pending`);
}

/** Sets (or, with nulls, clears) the mock provider's server-wide faults. */
async function mockFaults(faults: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${mockUrl}/__control`, { method: 'POST', body: JSON.stringify(faults) });
  if (!response.ok) throw new Error(`POST /__control answered ${response.status}`);
}

/** The reference downloads the mock made since `from` (an earlier count). */
async function referenceDownloadsSince(from: number): Promise<{ status: number; bytes: number; sha256: string }[]> {
  const stats = (await (await fetch(`${mockUrl}/__stats`)).json()) as {
    referenceDownloads: { status: number; bytes: number; sha256: string }[];
  };
  return stats.referenceDownloads.slice(from);
}

/**
 * The files the S3 stand-in holds under `uploads/<userId>/` (sidecars aside), in every in-memory stack's
 * folder: user ids are unique to a test, so only this file's stack can hold any.
 */
function storedFilesOf(userId: string): string[] {
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith('generation-uploads-'))
    .map((name) => join(tmpdir(), name, 'uploads', userId))
    .filter((dir) => existsSync(dir))
    .flatMap((dir) => readdirSync(dir).filter((file) => !file.startsWith('.')))
    .sort();
}

/** A new account with `credits` and its API key. */
async function newAccount(name: string, credits: number): Promise<{ userId: string; apiKey: string }> {
  const userId = `uploads-${name}-${randomUUID()}`;
  if (credits > 0) await grantCredits(store, { userId, amount: credits });
  return { userId, apiKey: (await putApiKey(store, { userId, name })).apiKey };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

beforeAll(async () => {
  const [mockPort] = await freePorts(1);
  mockUrl = `http://127.0.0.1:${mockPort}`;
  stack = await spawnTestStack({
    env: {
      DATA_DIR: ':memory:',
      MOCK_PROVIDER_PORT: String(mockPort),
      UPLOAD_MAX_BYTES: String(MAX_BYTES),
      MAX_OPEN_UPLOADS: String(MAX_OPEN),
      PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
    },
  });
  store = {
    doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint }),
    tableName: stack.tableName,
  };
  await grantCredits(store, { userId: 'uploads-owner', amount: 100 });
  await grantCredits(store, { userId: 'uploads-stranger', amount: 100 });
  owner = (await putApiKey(store, { userId: 'uploads-owner', name: 'owner' })).apiKey;
  stranger = (await putApiKey(store, { userId: 'uploads-stranger', name: 'stranger' })).apiKey;
}, 240_000);

afterAll(async () => {
  store?.doc.destroy();
  await stack?.stop();
});

describe('uploading a reference image', () => {
  test('a real PNG goes through the presigned POST and an image-to-image task using it completes; the provider downloaded it through a signed URL', async () => {
    // Prepare
    const png = tinyPng();
    const upload = await startUpload(owner, 'image/png', png.length);
    const posted = await postForm(upload.uploadUrl, upload.uploadFields, png);
    const before = await balanceOf(owner);
    const statsBefore = (await (await fetch(`${mockUrl}/__stats`)).json()) as { referenceDownloads: unknown[] };

    // Act
    const submitted = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'make it snow',
      inputImageUrls: [upload.url],
      providerInput: { mockDelayMs: 300 },
    });
    const taskId = (submitted.body as { taskId: string }).taskId;
    const done = await pollUntilDone(taskId, owner);

    // Assert
    expect(upload.url).toBe(`upload://${upload.uploadId}`);
    expect(Date.parse(upload.expiresAt) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    expect(posted.status).toBe(204);
    expect(submitted.status).toBe(202);
    expect(done.status).toBe(1);
    // The task shows the caller's own reference, never a signing query (the provider got one, made at
    // send time).
    expect((JSON.parse(done.text) as { inputImageUrls?: string[] }).inputImageUrls).toEqual([upload.url]);
    expect(done.text).not.toContain('X-Amz-Signature');
    expect(await balanceOf(owner)).toBe(before - (submitted.body as { creditsUsed: number }).creditsUsed);
    const stats = (await (await fetch(`${mockUrl}/__stats`)).json()) as {
      referenceDownloads: { status: number; bytes: number }[];
    };
    expect(stats.referenceDownloads.slice(statsBefore.referenceDownloads.length)).toEqual([
      { status: 200, bytes: png.length, sha256: sha256(png) },
    ]);
  });

  test('the provider reads the bytes the submit checked: bytes sent again through the same upload form before the task is sent do not reach it', async () => {
    // Prepare: creates refused (429) until cleared, so the task waits in the queue; the upload form
    // stays usable for its 15 minutes.
    const checked = tinyPng([0, 255, 0]);
    const replacement = tinyPng([255, 0, 0]);
    const upload = await startUpload(owner, 'image/png', checked.length);
    await postForm(upload.uploadUrl, upload.uploadFields, checked);
    const downloadsBefore = (await referenceDownloadsSince(0)).length;
    await mockFaults({ createFault: 'http_429', faultRetryAfter: '1' });
    let submitted: { status: number; body: unknown };
    let replaced: { status: number };
    try {
      submitted = await api(IMAGE_PATH, owner, {
        model: 'image-model-1',
        prompt: 'the checked bytes',
        inputImageUrls: [upload.url],
        providerInput: { mockDelayMs: 200 },
      });

      // Act: the same form stores other (valid) bytes under the upload's key, then the upstream is back.
      replaced = await postForm(upload.uploadUrl, upload.uploadFields, replacement);
    } finally {
      await mockFaults({ createFault: null, faultRetryAfter: null });
    }
    const done = await pollUntilDone((submitted.body as { taskId: string }).taskId, owner);

    // Assert
    expect(submitted.status).toBe(202);
    expect(replaced.status).toBe(204);
    expect(done.status).toBe(1);
    expect(await referenceDownloadsSince(downloadsBefore)).toEqual([
      { status: 200, bytes: checked.length, sha256: sha256(checked) },
    ]);
  });

  test('an upstream that fetches references after answering the create reads them through the signed URL and the task completes', async () => {
    // Prepare
    const png = tinyPng([0, 0, 255]);
    const upload = await startUpload(owner, 'image/png', png.length);
    await postForm(upload.uploadUrl, upload.uploadFields, png);
    const downloadsBefore = (await referenceDownloadsSince(0)).length;
    const before = await balanceOf(owner);
    await mockFaults({ referenceFetchDelayMs: 1500 });
    let done: { status: number; text: string };
    let submitted: { status: number; body: unknown };
    try {
      // Act
      submitted = await api(IMAGE_PATH, owner, {
        model: 'image-model-1',
        prompt: 'fetched late',
        inputImageUrls: [upload.url],
        providerInput: { mockDelayMs: 100 },
      });
      done = await pollUntilDone((submitted.body as { taskId: string }).taskId, owner);
    } finally {
      await mockFaults({ referenceFetchDelayMs: null });
    }

    // Assert
    expect(submitted.status).toBe(202);
    expect(done.status).toBe(1);
    expect(await referenceDownloadsSince(downloadsBefore)).toEqual([
      { status: 200, bytes: png.length, sha256: sha256(png) },
    ]);
    expect(await balanceOf(owner)).toBe(before - (submitted.body as { creditsUsed: number }).creditsUsed);
  });

  test('the submit refuses foreign, expired, missing, not-yet-uploaded, mislabelled (text or JPEG bytes as PNG) and oversize uploads, each a 400 naming its entry, and debits nothing', async () => {
    // Prepare
    const png = tinyPng();
    const jpegBytes = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00]);
    const jpegAsPng = await startUpload(owner, 'image/png', jpegBytes.length);
    const jpegPosted = await postForm(jpegAsPng.uploadUrl, jpegAsPng.uploadFields, jpegBytes);
    // Stored within the limit of its day, over the one its record holds now (a limit lowered since):
    // the size is checked again at the submit, on the stored file.
    const oversize = await startUpload(owner, 'image/png', png.length);
    await postForm(oversize.uploadUrl, oversize.uploadFields, png);
    await store.doc.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { PK: 'USER#uploads-owner', SK: `UPLOAD#${oversize.uploadId}` },
        UpdateExpression: 'SET maxBytes = :small',
        ExpressionAttributeValues: { ':small': png.length - 1 },
      }),
    );
    const foreign = await startUpload(stranger, 'image/png', png.length);
    await postForm(foreign.uploadUrl, foreign.uploadFields, png);
    const mislabelled = await startUpload(owner, 'image/png', 40);
    await postForm(mislabelled.uploadUrl, mislabelled.uploadFields, Buffer.from('this is text, not a PNG at all'));
    const notSent = await startUpload(owner);
    const expiredId = randomUUID();
    await putUpload(store, {
      userId: 'uploads-owner',
      uploadId: expiredId,
      key: `uploads/uploads-owner/${expiredId}`,
      contentType: 'image/png',
      declaredBytes: 10,
      maxBytes: MAX_BYTES,
      createdAt: new Date(Date.now() - 2 * 86_400_000).toISOString(),
      expiresAt: new Date(Date.now() - 86_400_000).toISOString(),
    });
    const good = await startUpload(owner, 'image/png', png.length);
    await postForm(good.uploadUrl, good.uploadFields, png);
    const before = await balanceOf(owner);

    // Act
    // (image-model-1 takes at most 4 references: two submissions)
    const first = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'combine them',
      inputImageUrls: [good.url, foreign.url, `upload://${expiredId}`, `upload://${randomUUID()}`],
    });
    const second = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'combine them',
      inputImageUrls: [notSent.url, mislabelled.url],
    });
    const third = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'combine them',
      inputImageUrls: ['https://example.com/a.png', jpegAsPng.url, oversize.url],
    });
    const smuggled = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'combine them',
      inputImageUrls: [good.url],
      providerInput: { image_urls: [mislabelled.url] },
    });

    // Assert
    // Another account's upload reads exactly as a missing or an expired one.
    expect(first).toEqual({
      status: 400,
      body: {
        error: 'Invalid request',
        details: {
          fieldErrors: {
            'inputImageUrls.1': [UNKNOWN],
            'inputImageUrls.2': [UNKNOWN],
            'inputImageUrls.3': [UNKNOWN],
          },
          formErrors: [],
        },
      },
    });
    expect(second).toEqual({
      status: 400,
      body: {
        error: 'Invalid request',
        details: {
          fieldErrors: {
            'inputImageUrls.0': ['The upload has no file yet: send it with the uploadUrl and uploadFields first'],
            'inputImageUrls.1': [
              'The uploaded file is not image/png (checked on its bytes: not a PNG, JPEG or WebP image)',
            ],
          },
          formErrors: [],
        },
      },
    });
    expect(jpegPosted.status).toBe(204);
    expect(third).toEqual({
      status: 400,
      body: {
        error: 'Invalid request',
        details: {
          fieldErrors: {
            'inputImageUrls.1': ['The uploaded file is not image/png (checked on its bytes: image/jpeg)'],
            'inputImageUrls.2': [`The uploaded file is larger than ${png.length - 1} bytes`],
          },
          formErrors: [],
        },
      },
    });
    // providerInput is merged over the provider request: a reference there would skip the checks.
    expect(smuggled).toEqual({
      status: 400,
      body: {
        error: 'Invalid request',
        details: {
          fieldErrors: { 'providerInput.image_urls': ['Upload references go in inputImageUrls'] },
          formErrors: [],
        },
      },
    });
    expect(await balanceOf(owner)).toBe(before);
  });

  test('an Idempotency-Key replay with the same uploads is the same request, even once the uploads have expired', async () => {
    // Prepare
    const png = tinyPng();
    const upload = await startUpload(owner, 'image/png', png.length);
    await postForm(upload.uploadUrl, upload.uploadFields, png);
    const body = { model: 'image-model-1', prompt: 'replay me', inputImageUrls: [upload.url] };
    const key = { 'Idempotency-Key': `uploads-${randomUUID()}` };
    const first = await api(IMAGE_PATH, owner, body, key);
    await store.doc.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { PK: 'USER#uploads-owner', SK: `UPLOAD#${upload.uploadId}` },
        UpdateExpression: 'SET expiresAt = :past',
        ExpressionAttributeValues: { ':past': new Date(Date.now() - 1000).toISOString() },
      }),
    );
    const before = await balanceOf(owner);

    // Act
    const replay = await api(IMAGE_PATH, owner, body, key);
    const fresh = await api(IMAGE_PATH, owner, body, { 'Idempotency-Key': `uploads-${randomUUID()}` });

    // Assert
    expect(first.status).toBe(202);
    expect(replay).toMatchObject({ status: 202, replayed: 'true' });
    expect((replay.body as { taskId: string }).taskId).toBe((first.body as { taskId: string }).taskId);
    expect(fresh).toMatchObject({
      status: 400,
      body: { details: { fieldErrors: { 'inputImageUrls.0': [UNKNOWN] } } },
    });
    expect(await balanceOf(owner)).toBe(before);
    await pollUntilDone((first.body as { taskId: string }).taskId, owner);
  });

  test('POST /api/ai/uploads needs a positive balance: an account without credits gets 402 and no upload', async () => {
    // Prepare
    const broke = await newAccount('broke', 0);

    // Act
    const answer = await api('/api/ai/uploads', broke.apiKey, { contentType: 'image/png', size: 100 });

    // Assert
    expect(answer).toEqual({
      status: 402,
      body: { error: 'Uploads need a positive balance: add credits first', balance: 0 },
    });
    expect(await uploadCount(broke.userId)).toBe(0);
  });

  test(`an account holds at most ${MAX_OPEN} open uploads: of ${MAX_OPEN + 10} racing, exactly ${MAX_OPEN} are made, the rest 429`, async () => {
    // Prepare: one credit is a positive balance.
    const busy = await newAccount('quota', 1);

    // Act
    const answers = await Promise.all(
      Array.from({ length: MAX_OPEN + 10 }, () =>
        api('/api/ai/uploads', busy.apiKey, { contentType: 'image/png', size: 100 }),
      ),
    );

    // Assert
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(MAX_OPEN);
    const refused = answers.filter((answer) => answer.status !== 201);
    expect(refused).toHaveLength(10);
    for (const answer of refused) {
      expect(answer).toEqual({
        status: 429,
        body: {
          error: `This account already has ${MAX_OPEN} open uploads, the most it may hold; uploads end when they expire`,
          limit: MAX_OPEN,
        },
      });
    }
    expect(await uploadCount(busy.userId)).toBe(MAX_OPEN);
  });

  test('POST /api/ai/uploads refuses an unsupported type, a size over the limit and unknown fields with a 400 naming them', async () => {
    // Act
    const answer = await api('/api/ai/uploads', owner, {
      contentType: 'image/svg+xml',
      size: MAX_BYTES + 1,
      name: 'x',
    });

    // Assert
    expect(answer).toEqual({
      status: 400,
      body: {
        error: 'Invalid request',
        details: {
          fieldErrors: {
            contentType: ['Must be one of image/png, image/jpeg, image/webp'],
            size: [`Must be at most ${MAX_BYTES} bytes`],
            name: ['Unknown field "name"'],
          },
          formErrors: [],
        },
      },
    });
  });
});

describe('inline data: images', () => {
  const dataUri = (type: string, bytes: Buffer) => `data:${type};base64,${bytes.toString('base64')}`;

  test('a data:image/png;base64 entry is stored as an upload of the caller, the task keeps its upload:// reference and completes; the provider downloaded the bytes through a signed URL', async () => {
    // Prepare
    const png = tinyPng();
    const before = await balanceOf(owner);
    const statsBefore = (await (await fetch(`${mockUrl}/__stats`)).json()) as { referenceDownloads: unknown[] };

    // Act
    const submitted = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'make it rain',
      inputImageUrls: ['https://example.com/first.png', dataUri('image/png', png)],
      providerInput: { mockDelayMs: 300 },
    });
    const taskId = (submitted.body as { taskId: string }).taskId;
    const done = await pollUntilDone(taskId, owner);
    const task = JSON.parse(done.text) as { inputImageUrls?: string[] };

    // Assert
    expect(submitted.status).toBe(202);
    expect(done.status).toBe(1);
    expect(done.text).not.toContain('data:image');
    expect(done.text).not.toContain('X-Amz-Signature');
    expect(task.inputImageUrls).toEqual(['https://example.com/first.png', expect.stringMatching(/^upload:\/\/[^?]+$/)]);
    expect(await balanceOf(owner)).toBe(before - (submitted.body as { creditsUsed: number }).creditsUsed);
    const stats = (await (await fetch(`${mockUrl}/__stats`)).json()) as {
      referenceDownloads: { status: number; bytes: number }[];
    };
    // The mock fetches local references only: the stored upload, through its signed URL.
    expect(stats.referenceDownloads.slice(statsBefore.referenceDownloads.length)).toEqual([
      { status: 200, bytes: png.length, sha256: sha256(png) },
    ]);
  });

  test('a bad data: entry is a 400 naming it (type, encoding, bytes, size), nothing is debited and nothing stored', async () => {
    // Prepare
    const png = tinyPng();
    const jpegBytes = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]);
    const before = await balanceOf(owner);
    const uploadsBefore = await uploadCount('uploads-owner');

    // Act
    const first = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'edit',
      inputImageUrls: [
        dataUri('image/png', png),
        dataUri('image/gif', png),
        'data:image/png;base64,not base64!',
        dataUri('image/png', jpegBytes),
      ],
    });
    const second = await api(IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'edit',
      inputImageUrls: [
        dataUri('image/png', Buffer.from('plain text, labelled as a PNG')),
        `data:image/png,${png.toString('latin1')}`,
        // Over the stack's upload limit (MAX_BYTES), which holds for inline images too.
        dataUri('image/png', Buffer.concat([png, Buffer.alloc(MAX_BYTES)])),
      ],
    });

    // Assert
    expect(first).toEqual({
      status: 400,
      body: {
        error: 'Invalid request',
        details: {
          fieldErrors: {
            'inputImageUrls.1': ['Inline images must be image/png, image/jpeg or image/webp, not image/gif'],
            'inputImageUrls.2': ['The inline image is not valid base64'],
            'inputImageUrls.3': ['The inline image is not image/png (checked on its bytes: image/jpeg)'],
          },
          formErrors: [],
        },
      },
    });
    expect(second).toEqual({
      status: 400,
      body: {
        error: 'Invalid request',
        details: {
          fieldErrors: {
            'inputImageUrls.0': [
              'The inline image is not image/png (checked on its bytes: not a PNG, JPEG or WebP image)',
            ],
            'inputImageUrls.1': ['Must be data:<type>;base64,<data> with type image/png, image/jpeg or image/webp'],
            'inputImageUrls.2': [
              `The inline image is larger than ${MAX_BYTES} bytes: send it with POST /api/ai/uploads`,
            ],
          },
          formErrors: [],
        },
      },
    });
    expect(await balanceOf(owner)).toBe(before);
    expect(await uploadCount('uploads-owner')).toBe(uploadsBefore);
  });

  test('a refused submit (402) leaves none of its inline images stored: no record, no file in the S3 stand-in', async () => {
    // Prepare: credits for one task of 3; the first submit stores its image, as an accepted task's.
    const poor = await newAccount('poor', 3);
    const body = {
      model: 'image-model-1',
      prompt: 'inline, refused',
      inputImageUrls: [dataUri('image/png', tinyPng())],
    };
    const accepted = await api(IMAGE_PATH, poor.apiKey, body);
    const filesOfAccepted = storedFilesOf(poor.userId);

    // Act
    const refused = await api(IMAGE_PATH, poor.apiKey, body);

    // Assert
    expect(accepted.status).toBe(202);
    expect(filesOfAccepted.length).toBeGreaterThan(0);
    expect(refused).toMatchObject({ status: 402, body: { error: 'Insufficient credits', required: 3, balance: 0 } });
    expect(await uploadCount(poor.userId)).toBe(1);
    expect(storedFilesOf(poor.userId)).toEqual(filesOfAccepted);
  });

  test('an Idempotency-Key replay with the same inline image answers the original task and stores nothing more', async () => {
    // Prepare
    const body = { model: 'image-model-1', prompt: 'inline replay', inputImageUrls: [dataUri('image/png', tinyPng())] };
    const key = { 'Idempotency-Key': `inline-${randomUUID()}` };
    const first = await api(IMAGE_PATH, owner, body, key);
    const uploadsAfterFirst = await uploadCount('uploads-owner');
    const before = await balanceOf(owner);

    // Act
    const replay = await api(IMAGE_PATH, owner, body, key);

    // Assert
    expect(first.status).toBe(202);
    expect(replay).toMatchObject({ status: 202, replayed: 'true' });
    expect((replay.body as { taskId: string }).taskId).toBe((first.body as { taskId: string }).taskId);
    expect(await uploadCount('uploads-owner')).toBe(uploadsAfterFirst);
    expect(await balanceOf(owner)).toBe(before);
  });

  test("the S3 stand-in takes a PUT only through a URL signed for PUT (a GET URL's signature does not PUT)", async () => {
    // Prepare
    const png = tinyPng();
    const upload = await startUpload(owner, 'image/png', png.length);
    await postForm(upload.uploadUrl, upload.uploadFields, png);
    const key = upload.uploadFields.key ?? '';
    const getUrl = await presignUrl({
      method: 'GET',
      url: new URL(`${upload.uploadUrl}${key}`),
      service: 's3',
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      expiresInSeconds: 60,
    });

    // Act
    const unsigned = await fetch(`${upload.uploadUrl}${key}`, { method: 'PUT', body: 'overwritten' });
    const withGetSignature = await fetch(getUrl, { method: 'PUT', body: 'overwritten' });
    const read = await fetch(getUrl);

    // Assert
    expect(unsigned.status).toBe(403);
    expect(withGetSignature.status).toBe(403);
    expect(await withGetSignature.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
    expect(Buffer.from(await read.arrayBuffer())).toEqual(png);
  });
});

describe('the copy of a checked version, as S3 copies', () => {
  test('a copy under x-amz-copy-source-if-match copies the version named and refuses another with 412; an unsigned copy source is 403', async () => {
    // Prepare
    const png = tinyPng([10, 20, 30]);
    const upload = await startUpload(owner, 'image/png', png.length);
    await postForm(upload.uploadUrl, upload.uploadFields, png);
    const key = upload.uploadFields.key ?? '';
    const reader = createS3UploadReader({
      bucket: new URL(upload.uploadUrl).pathname.split('/').filter(Boolean).pop() ?? '',
      region: 'local',
      endpoint: new URL(upload.uploadUrl).origin,
      credentials: () => ({ accessKeyId: 'local', secretAccessKey: 'local' }),
    });
    const head = await reader.head(key, 16);
    const putUrl = await presignUrl({
      method: 'PUT',
      url: new URL(`${upload.uploadUrl}${key}.unsigned-copy`),
      service: 's3',
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      expiresInSeconds: 60,
    });

    // Act
    const copied = await reader.copyIfUnchanged({ from: key, to: `${key}.copy-1`, etag: head?.etag ?? '' });
    const refused = await reader.copyIfUnchanged({ from: key, to: `${key}.copy-2`, etag: '"0123456789abcdef"' });
    const gone = await reader.copyIfUnchanged({ from: `${key}-missing`, to: `${key}.copy-3`, etag: head?.etag ?? '' });
    const unsigned = await fetch(putUrl, {
      method: 'PUT',
      headers: { 'x-amz-copy-source': `/${key}` },
    });
    const copy = await fetch(await reader.signedUrl(`${key}.copy-1`, 60));
    const notCopied = await fetch(await reader.signedUrl(`${key}.copy-2`, 60));

    // Assert
    expect(head?.etag).toBe(`"${createHash('md5').update(png).digest('hex')}"`);
    expect([copied, refused, gone]).toEqual(['copied', 'changed', 'changed']);
    expect(unsigned.status).toBe(403);
    expect(Buffer.from(await copy.arrayBuffer())).toEqual(png);
    expect(notCopied.status).toBe(404);
  });
});

describe('the typed client', () => {
  test('uploadFile sends bytes through the presigned POST and its reference is accepted by a submit; a file over the limit is the service 400', async () => {
    // Prepare
    const client = new GenerationClient({ baseUrl: stack.baseUrl, apiKey: owner, retries: 0 });

    // Act
    const upload = await client.uploadFile(new Uint8Array(tinyPng()), 'image/png');
    const submitted = await client.submitImage({
      model: 'image-model-1',
      prompt: 'in blue',
      inputImageUrls: [upload.url],
    });
    const tooBig = await client.uploadFile(new Uint8Array(MAX_BYTES + 1), 'image/png').catch((error: unknown) => error);

    // Assert
    expect(upload.url).toBe(`upload://${upload.uploadId}`);
    expect(submitted.status).toBe(0);
    expect(tooBig).toBeInstanceOf(ApiError);
    expect((tooBig as ApiError).status).toBe(400);
    await client.waitForTask(submitted.taskId, { intervalMs: 200, maxIntervalMs: 500 });
  });
});

describe('the presigned POST is checked as S3 checks it', () => {
  test('a different content type, a file over the size range, a tampered policy and an expired policy are refused with S3 XML errors', async () => {
    // Prepare
    const upload = await startUpload(owner, 'image/png', 100);
    const png = tinyPng();
    const tampered = JSON.parse(Buffer.from(upload.uploadFields.Policy ?? '', 'base64').toString('utf8')) as {
      conditions: unknown[];
    };
    tampered.conditions = tampered.conditions.map((condition) =>
      Array.isArray(condition) && condition[0] === 'content-length-range'
        ? ['content-length-range', 1, 10 ** 9]
        : condition,
    );
    const expired = await presignPost({
      url: upload.uploadUrl,
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      date: new Date(Date.now() - 3600_000),
      expiresAt: new Date(Date.now() - 60_000),
      fields: { key: `uploads/uploads-owner/${upload.uploadId}`, 'Content-Type': 'image/png' },
      conditions: [{ bucket: 'local-uploads' }, ['content-length-range', 1, MAX_BYTES]],
    });

    // Act
    const wrongType = await postForm(upload.uploadUrl, { ...upload.uploadFields, 'Content-Type': 'image/jpeg' }, png);
    const tooBig = await postForm(upload.uploadUrl, upload.uploadFields, Buffer.alloc(MAX_BYTES + 1, 1));
    const forged = await postForm(
      upload.uploadUrl,
      { ...upload.uploadFields, Policy: Buffer.from(JSON.stringify(tampered)).toString('base64') },
      png,
    );
    const late = await postForm(expired.url, expired.fields, png);

    // Assert
    const codeOf = (answer: { text: string }) => /<Code>([^<]+)<\/Code>/.exec(answer.text)?.[1];
    expect([wrongType.status, codeOf(wrongType), wrongType.contentType]).toEqual([
      403,
      'AccessDenied',
      'application/xml',
    ]);
    expect([tooBig.status, codeOf(tooBig)]).toEqual([400, 'EntityTooLarge']);
    expect([forged.status, codeOf(forged)]).toEqual([403, 'SignatureDoesNotMatch']);
    expect([late.status, codeOf(late)]).toEqual([403, 'AccessDenied']);
    expect(late.text).toContain('Policy expired');
  });

  test('the stored file is served only through a valid signed GET URL', async () => {
    // Prepare
    const upload = await startUpload(owner, 'image/png', 100);
    await postForm(upload.uploadUrl, upload.uploadFields, tinyPng());
    const objectUrl = `${upload.uploadUrl}uploads/uploads-owner/${upload.uploadId}`;

    // Act
    const unsigned = await fetch(objectUrl);

    // Assert
    expect(unsigned.status).toBe(403);
    expect(await unsigned.text()).toContain('<Code>AccessDenied</Code>');
  });
});
