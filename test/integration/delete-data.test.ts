/**
 * Deleting (issue 40) on the local stack, over real HTTP: DELETE /api/ai/tasks/{id} on an ended task
 * removes its results (the media files the gateway serves), the checked copy of its upload and its
 * inline image in the S3 stand-in (local/upload-bucket.ts), and the task itself (404, gone from the
 * listing), while the ledger keeps its entries, stamped with the model, without prompt or media;
 * a pending task is 409, another owner's 404, a second DELETE 404. DELETE /api/ai/uploads/{id} removes
 * an upload (file and record): a task naming it afterwards is refused.
 */
import { presignUrl } from '../../functions/aws/signer';
import { checkedUploadKey, uploadKey } from '../../functions/core/uploads';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { getTask } from '../../functions/store/tasks';
import { getUpload } from '../../functions/store/uploads';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { freePorts } from '../../local/spawn-local-stack';
import { tinyPng } from '../support/png';
import { spawnTestStack, type TestStack } from '../support/test-stack';

const IMAGE_PATH = '/api/ai/image/generate';
const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
/** A task's end on a loaded machine (docs/development/testing.md#under-load). */
const TASK_END_BUDGET_MS = 120_000;

let stack: TestStack;
let store: StoreContext;
let owner: string;
let stranger: string;
/** The S3 stand-in's bucket URL (`<origin>/<bucket>/`), from an upload form. */
let bucketUrl: string;
let mockUrl: string;

/** Sets (or, with nulls, clears) the mock provider's server-wide faults. */
async function mockFaults(faults: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${mockUrl}/__control`, { method: 'POST', body: JSON.stringify(faults) });
  if (!response.ok) throw new Error(`POST /__control answered ${response.status}`);
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

async function call(method: string, path: string, apiKey: string, json?: unknown): Promise<Answer> {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${apiKey}`,
      ...(json === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // 204 and gateway answers without JSON
  }
  return { status: response.status, body, text };
}

/** An upload of `png`, stored through its presigned POST. */
async function uploadPng(apiKey: string, png: Buffer): Promise<{ uploadId: string; url: string; key: string }> {
  const created = await call('POST', '/api/ai/uploads', apiKey, { contentType: 'image/png', size: png.length });
  if (created.status !== 201) throw new Error(`POST /api/ai/uploads answered ${created.status}: ${created.text}`);
  const form = new FormData();
  const fields = created.body.uploadFields as Record<string, string>;
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([png], { type: 'image/png' }), 'file');
  const uploadUrl = String(created.body.uploadUrl);
  const posted = await fetch(uploadUrl, { method: 'POST', body: form });
  if (posted.status !== 204) throw new Error(`The upload POST answered ${posted.status}`);
  bucketUrl = uploadUrl;
  return { uploadId: String(created.body.uploadId), url: String(created.body.url), key: fields.key ?? '' };
}

/** The status of a signed GET of `key` in the S3 stand-in. */
async function storedStatus(key: string): Promise<number> {
  const url = await presignUrl({
    method: 'GET',
    url: new URL(`${bucketUrl}${key}`),
    service: 's3',
    region: 'local',
    credentials: LOCAL_CREDENTIALS,
    expiresInSeconds: 60,
  });
  const response = await fetch(url);
  await response.body?.cancel();
  return response.status;
}

/** Polls the task until it has ended (a wall-clock budget, never a count of polls). */
async function ended(taskId: string, apiKey: string): Promise<Answer> {
  const deadline = Date.now() + TASK_END_BUDGET_MS;
  for (;;) {
    const task = await call('GET', `/api/ai/tasks/${taskId}`, apiKey);
    if (task.body.status !== 0) return task;
    if (Date.now() > deadline) throw new Error(`Task ${taskId} still pending: ${task.text}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function submitImage(apiKey: string, extra: Record<string, unknown> = {}): Promise<string> {
  const submitted = await call('POST', IMAGE_PATH, apiKey, {
    model: 'image-model-1',
    prompt: 'a private lighthouse at dusk',
    ...extra,
  });
  if (submitted.status !== 202) throw new Error(`Submit answered ${submitted.status}: ${submitted.text}`);
  return String(submitted.body.taskId);
}

beforeAll(async () => {
  const [mockPort] = await freePorts(1);
  mockUrl = `http://127.0.0.1:${mockPort}`;
  stack = await spawnTestStack({
    env: { MOCK_PROVIDER_PORT: String(mockPort), PROVIDER_REFRESH_INTERVAL_SECONDS: '1' },
  });
  store = {
    doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint }),
    tableName: stack.tableName,
  };
  await grantCredits(store, { userId: 'delete-owner', amount: 1000 });
  await grantCredits(store, { userId: 'delete-stranger', amount: 1000 });
  owner = (await putApiKey(store, { userId: 'delete-owner', name: 'owner' })).apiKey;
  stranger = (await putApiKey(store, { userId: 'delete-stranger', name: 'stranger' })).apiKey;
}, 240_000);

afterAll(async () => {
  store?.doc.destroy();
  await stack?.stop();
});

describe('DELETE /api/ai/tasks/{id}', () => {
  test('an ended task with an upload and an inline image: 204, then nothing of it is readable, and the ledger keeps its entries with the model, without the prompt', async () => {
    // Prepare
    const upload = await uploadPng(owner, tinyPng([1, 2, 3]));
    const inline = `data:image/png;base64,${tinyPng([4, 5, 6]).toString('base64')}`;
    const taskId = await submitImage(owner, {
      inputImageUrls: [upload.url, inline],
      providerInput: { mockDelayMs: 200 },
    });
    const done = await ended(taskId, owner);
    const resultUrl = (done.body.imageUrls as string[])[0] ?? '';
    const before = await fetch(resultUrl);
    await before.body?.cancel();
    const stored = await getTask(store, 'delete-owner', taskId);
    const versions = (stored?.request.uploadVersions ?? {}) as Record<string, string>;
    const inlineId = ((stored?.request.inlineUploads ?? []) as string[])[0] ?? '';
    const inlineVersion = versions[inlineId] ?? '';
    const balanceBefore = (await call('GET', '/api/ai/credits?limit=1', owner)).body.balance;

    // Act
    const deleted = await call('DELETE', `/api/ai/tasks/${taskId}`, owner);

    // Assert
    expect(done.body.status).toBe(1);
    expect(before.status).toBe(200);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await call('GET', `/api/ai/tasks/${taskId}`, owner)).status).toBe(404);
    const download = await fetch(resultUrl);
    await download.body?.cancel();
    expect(download.status).toBe(404);
    const listing = await call('GET', '/api/ai/tasks?limit=100', owner);
    expect(listing.text).not.toContain(taskId);
    // The inline image was the task's own: its file, its checked copy and its record are gone.
    expect(inlineId).not.toBe('');
    expect(await storedStatus(uploadKey('delete-owner', inlineId))).toBe(404);
    expect(await storedStatus(checkedUploadKey('delete-owner', inlineId, inlineVersion))).toBe(404);
    expect(await getUpload(store, 'delete-owner', inlineId, new Date())).toBeUndefined();
    // The caller's own upload stays theirs (other tasks may name it) until they delete it.
    expect(await storedStatus(upload.key)).toBe(200);
    // Money: the balance is unchanged and the ledger keeps the debit, stamped with the model.
    const credits = await call('GET', '/api/ai/credits?limit=100', owner);
    expect(credits.body.balance).toBe(balanceBefore);
    const entries = (credits.body.entries as Record<string, unknown>[]).filter((entry) => entry.taskId === taskId);
    expect(entries).toEqual([expect.objectContaining({ kind: 'debit', delta: -3, model: 'image-model-1', taskId })]);
    expect(credits.text).not.toContain('lighthouse');
    // Deleting again: the task is gone.
    expect((await call('DELETE', `/api/ai/tasks/${taskId}`, owner)).status).toBe(404);
  });

  test('a pending task is 409 (cancel it first) and stays; another owner gets 404 and the task stays', async () => {
    // Prepare
    const pending = await submitImage(owner, { providerInput: { mockDelayMs: 600_000 } });
    const finished = await submitImage(owner, { providerInput: { mockDelayMs: 100 } });
    await ended(finished, owner);

    // Act
    const refused = await call('DELETE', `/api/ai/tasks/${pending}`, owner);
    const foreign = await call('DELETE', `/api/ai/tasks/${finished}`, stranger);
    const unknown = await call('DELETE', `/api/ai/tasks/${'x'.repeat(400)}`, owner);

    // Assert
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/cancel it first/);
    expect((await call('GET', `/api/ai/tasks/${pending}`, owner)).status).toBe(200);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'Task not found' });
    expect((await call('GET', `/api/ai/tasks/${finished}`, owner)).body.status).toBe(1);
    expect(unknown.status).toBe(404);
  });

  test('a cancelled (refunded) task deletes too: its debit and refund stay in the ledger, stamped with the model', async () => {
    // Prepare: the mock refuses creates (429) for now, so the task waits in the queue to be cancelled;
    // a cancel that meets it while a dispatcher is trying it (409) is tried again.
    await mockFaults({ createFault: 'http_429', faultRetryAfter: '1' });
    let cancelled: Answer;
    let taskId: string;
    try {
      taskId = await submitImage(owner);
      const deadline = Date.now() + TASK_END_BUDGET_MS;
      do {
        cancelled = await call('POST', `/api/ai/tasks/${taskId}/cancel`, owner);
      } while (cancelled.status === 409 && Date.now() < deadline);
    } finally {
      await mockFaults({ createFault: null, faultRetryAfter: null });
    }

    // Act
    const deleted = await call('DELETE', `/api/ai/tasks/${taskId}`, owner);

    // Assert
    expect(cancelled.status).toBe(200);
    expect(deleted.status).toBe(204);
    const credits = await call('GET', '/api/ai/credits?limit=100', owner);
    const kinds = (credits.body.entries as Record<string, unknown>[])
      .filter((entry) => entry.taskId === taskId)
      .map((entry) => `${entry.kind} ${entry.delta} ${entry.model}`);
    expect(kinds.sort()).toEqual(['debit -3 image-model-1', 'refund 3 image-model-1']);
  });
});

describe('DELETE /api/ai/uploads/{id}', () => {
  test("removes the caller's upload (file and record): a task naming it is refused, a second DELETE and another owner's are 404", async () => {
    // Prepare
    const upload = await uploadPng(owner, tinyPng([7, 8, 9]));
    const other = await uploadPng(owner, tinyPng([9, 8, 7]));

    // Act
    const foreign = await call('DELETE', `/api/ai/uploads/${other.uploadId}`, stranger);
    const deleted = await call('DELETE', `/api/ai/uploads/${upload.uploadId}`, owner);
    const again = await call('DELETE', `/api/ai/uploads/${upload.uploadId}`, owner);
    const naming = await call('POST', IMAGE_PATH, owner, {
      model: 'image-model-1',
      prompt: 'uses a deleted upload',
      inputImageUrls: [upload.url],
    });

    // Assert
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'Upload not found' });
    expect(await storedStatus(other.key)).toBe(200);
    expect(deleted.status).toBe(204);
    expect(await storedStatus(upload.key)).toBe(404);
    expect(await getUpload(store, 'delete-owner', upload.uploadId, new Date())).toBeUndefined();
    expect(again.status).toBe(404);
    expect(naming.status).toBe(400);
    expect(naming.text).toContain('Unknown upload');
    expect((await call('DELETE', '/api/ai/uploads/not-an-upload-id', owner)).status).toBe(404);
  });
});
