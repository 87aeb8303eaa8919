/**
 * How long things live, in one file so that the waits overlap: a key until its expiry (while the
 * authorizer's cached Allow is still fresh), a task that never finishes until TIMEOUT, and an
 * idempotency record beyond the end of its task.
 */
import { randomUUID } from 'node:crypto';
import { createApi, IMAGE_PATH, taskPath } from './support/api';
import { Browser, signIn } from './support/browser';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test.concurrent(
  'an Idempotency-Key replay after the task has ended answers with the same task',
  async () => {
    const headers = { 'Idempotency-Key': randomUUID() };
    const body = { model: 'image-model-4', prompt: 'replay me later' };
    const first = await api.submit(IMAGE_PATH, body, undefined, headers);
    const ended = await api.pollUntilDone(first.taskId);

    const replay = await api.submit(IMAGE_PATH, body, undefined, headers);

    expect([1, 2]).toContain(ended.status);
    expect(replay.taskId).toBe(first.taskId);
    expect(replay.creditsUsed).toBe(first.creditsUsed);
  },
  target.pollTimeoutMs + 10_000,
);

if (target.runs('keyExpiry')) {
  /**
   * Enough time for the request made before the expiry, on a loaded machine too (a request through the
   * gateway, the authorizer and DynamoDB Local can take seconds there).
   */
  const MARGIN_MS = 8000;
  const issuer = target.accounts?.keyIssuer;
  // Signing in and issuing the key: a few requests, seconds on a loaded machine.
  const ISSUE_BUDGET_MS = 30_000;

  /** Signs in as the issuer and issues a key that ends `MARGIN_MS` (rounded up to a second) from now. */
  async function issueExpiringKey(): Promise<{ status: number; apiKey: string; expiresAtMs: number }> {
    if (!issuer) throw new Error('The target has no key issuer account');
    const browser = new Browser();
    const page = await signIn(browser, target.baseUrl, issuer);
    if (page.status !== 200) throw new Error(`Signing in answered ${page.status}: ${page.text.slice(0, 300)}`);
    const me = await browser.request(`${target.baseUrl}/api/session`);
    const csrf = (me.body as { csrfToken: string }).csrfToken;
    const expiresAtMs = Math.ceil((Date.now() + MARGIN_MS) / 1000) * 1000;
    const created = await browser.request(`${target.baseUrl}/api/keys`, {
      method: 'POST',
      json: { name: 'e2e expiring', expiresAt: new Date(expiresAtMs).toISOString() },
      headers: { Origin: target.baseUrl, 'X-CSRF-Token': csrf },
    });
    return { status: created.status, apiKey: (created.body as { apiKey: string }).apiKey, expiresAtMs };
  }

  test.concurrent(
    'a key works until its expiry, then gets 401 although the authorizer cached its Allow',
    async () => {
      const path = taskPath(randomUUID());
      // Issued now, whenever jest runs this check: its expiry is the one a few seconds away.
      const expiring = await issueExpiringKey();

      // 404 (not 401): the key was accepted and the handler looked for the task.
      const before = await api.request(path, { apiKey: expiring.apiKey });
      // The product's clock is what is checked: the key's own expiry must pass, and nothing can be
      // waited on instead (the key's state is only its expiresAt).
      await sleep(Math.max(0, expiring.expiresAtMs - Date.now()) + 1000);
      const after = await api.request(path, { apiKey: expiring.apiKey });

      expect(expiring.status).toBe(201);
      expect(before.status).toBe(404);
      expect(before.body).toEqual({ error: 'Task not found' });
      expect(after.status).toBe(401);
      expect(after.body).toEqual({ error: 'Unauthorized' });
    },
    ISSUE_BUDGET_MS + MARGIN_MS + 30_000,
  );
}

if (target.runs('taskTimeout')) {
  const maxPendingMs = (target.maxPendingSeconds ?? 0) * 1000;
  // Past the maximum age, the next GET (or sweep) ends the task: allow a refresh interval more, and on
  // the local stack the time a loaded machine takes for those GETs.
  const pollTimeoutMs = maxPendingMs + (target.kind === 'local' ? 60_000 : 120_000);

  test.concurrent(
    'a task that never finishes -> TIMEOUT, refunded',
    async () => {
      const submitted = await api.submit(IMAGE_PATH, {
        model: 'image-model-1',
        prompt: 'never done',
        providerInput: { mockDelayMs: 3_600_000 },
      });

      const task = await api.pollUntilDone(submitted.taskId, { timeoutMs: pollTimeoutMs });

      expect(task).toMatchObject({
        taskId: submitted.taskId,
        status: 2,
        errorCode: 'TIMEOUT',
        creditsUsed: submitted.creditsUsed,
        creditsRefunded: true,
      });
      expect(task.imageUrls).toBeUndefined();
    },
    pollTimeoutMs + 10_000,
  );
}
