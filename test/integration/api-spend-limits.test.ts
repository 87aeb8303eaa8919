/**
 * Spend limits per key over real HTTP through the local gateway and its real authorizer: a key created
 * with a daily budget (POST /api/keys), submits up to it and the 402 past it, the Idempotency-Key replay,
 * the listing's spending, and PATCH /api/keys/{keyId} (session and CSRF only) changing and removing it.
 */
import { csrfTokenFor } from '../../functions/core/session';
import { grantCredits } from '../../functions/money/grant';
import { getBalance } from '../../functions/store/accounts';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { createSession } from '../../functions/store/sessions';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { IMAGE_COST, imageRequest, videoRequest } from '../support/service-harness';
import { spawnTestStack, type TestStack } from '../support/test-stack';

jest.setTimeout(240_000);

let stack: TestStack;
let store: StoreContext;

beforeAll(async () => {
  stack = await spawnTestStack({ env: { DATA_DIR: ':memory:' } });
  store = {
    doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint }),
    tableName: stack.tableName,
  };
}, 240_000);

afterAll(async () => {
  store?.doc.destroy();
  await stack?.stop();
});

async function sessionHeaders(userId: string): Promise<Record<string, string>> {
  const { sessionId } = await createSession(store, {
    userId,
    email: `${userId}@example.test`,
    idleSeconds: 3600,
    absoluteSeconds: 7200,
  });
  return {
    Cookie: `__Host-session=${sessionId}`,
    Origin: new URL(stack.baseUrl).origin,
    'X-CSRF-Token': csrfTokenFor(sessionId),
    'Content-Type': 'application/json',
  };
}

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const answer = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

function submit(apiKey: string, idempotencyKey?: string) {
  return call(
    'POST',
    '/api/ai/image/generate',
    {
      Authorization: `Bearer ${apiKey}`,
      'Content-Type': 'application/json',
      ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
    },
    imageRequest({ mockDelayMs: 600_000 }),
  );
}

describe('spend limits per key through the local gateway', () => {
  test('a key with a daily budget spends up to it, then answers 402; PATCH changes and removes it', async () => {
    // Prepare: an account with plenty of credits and a key of 2 tasks' worth a day.
    const userId = 'spend-http';
    await grantCredits(store, { userId, amount: 1000 });
    const session = await sessionHeaders(userId);
    const created = await call('POST', '/api/keys', session, {
      name: 'budgeted',
      spendLimit: { credits: 2 * IMAGE_COST, period: 'day' },
    });
    const apiKey = String(created.body.apiKey);
    const keyId = String(created.body.keyId);

    // Act
    const first = await submit(apiKey, 'first');
    const second = await submit(apiKey);
    const over = await submit(apiKey);
    const replay = await submit(apiKey, 'first');
    const listed = await call('GET', '/api/keys', session);
    const withoutCsrf = await call(
      'PATCH',
      `/api/keys/${keyId}`,
      { ...session, 'X-CSRF-Token': 'nope' },
      {
        spendLimit: null,
      },
    );
    const withKey = await call(
      'PATCH',
      `/api/keys/${keyId}`,
      { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      { spendLimit: null },
    );
    const invalid = await call('PATCH', `/api/keys/${keyId}`, session, { spendLimit: { credits: 5, period: 'week' } });
    const raised = await call('PATCH', `/api/keys/${keyId}`, session, {
      spendLimit: { credits: 3 * IMAGE_COST, period: 'day' },
    });
    const third = await submit(apiKey);
    const overAgain = await submit(apiKey);
    const removed = await call('PATCH', `/api/keys/${keyId}`, session, { spendLimit: null });
    const free = await submit(apiKey);

    // Assert
    expect(created.status).toBe(201);
    expect(created.body.spendLimit).toEqual({ credits: 6, period: 'day' });
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(over.status).toBe(402);
    const tomorrow = new Date();
    tomorrow.setUTCHours(24, 0, 0, 0);
    expect(over.body).toEqual({
      error: 'Spend limit reached',
      scope: 'key',
      limit: 6,
      period: 'day',
      spent: 6,
      resetsAt: tomorrow.toISOString(),
    });
    expect(replay.status).toBe(202);
    expect(replay.body.taskId).toBe(first.body.taskId);
    const row = (listed.body.keys as Array<Record<string, unknown>>).find((key) => key.keyId === keyId);
    expect(row?.spendLimit).toEqual({ credits: 6, period: 'day', spent: 6, resetsAt: tomorrow.toISOString() });
    expect(withoutCsrf.status).toBe(403);
    expect(withKey.status).toBe(403);
    expect(invalid.status).toBe(400);
    expect(invalid.body.details).toEqual({
      fieldErrors: { spendLimit: ['Spend limit period must be "day", "month" or "total"'] },
      formErrors: [],
    });
    expect(raised.status).toBe(200);
    expect(raised.body.spendLimit).toEqual({ credits: 9, period: 'day', spent: 6, resetsAt: tomorrow.toISOString() });
    expect(third.status).toBe(202);
    expect(overAgain.status).toBe(402);
    expect(overAgain.body).toMatchObject({ limit: 9, spent: 9 });
    expect(removed.status).toBe(200);
    expect(removed.body.spendLimit).toBeNull();
    expect(free.status).toBe(202);
    expect(await getBalance(store, userId)).toBe(1000 - 4 * IMAGE_COST);
  });

  test('PATCH of an unknown key, or of another account, is 404', async () => {
    // Prepare
    await grantCredits(store, { userId: 'spend-other', amount: 10 });
    const owner = await sessionHeaders('spend-owner');
    const created = await call('POST', '/api/keys', owner, { name: 'mine' });
    const stranger = await sessionHeaders('spend-other');

    // Act
    const foreign = await call('PATCH', `/api/keys/${created.body.keyId}`, stranger, { spendLimit: null });
    const unknown = await call('PATCH', '/api/keys/key_000000000000', owner, { spendLimit: null });

    // Assert
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
  });
});

describe('the account-wide monthly limit through the local gateway (/api/account/spend-limit)', () => {
  test('set from the session, obeyed by every key of the account, removed; session and CSRF only', async () => {
    // Prepare: two keys of one account.
    const userId = 'account-limit-http';
    await grantCredits(store, { userId, amount: 1000 });
    const session = await sessionHeaders(userId);
    const first = String((await call('POST', '/api/keys', session, { name: 'one' })).body.apiKey);
    const second = String((await call('POST', '/api/keys', session, { name: 'two' })).body.apiKey);
    const nextMonth = new Date();
    nextMonth.setUTCMonth(nextMonth.getUTCMonth() + 1, 1);
    nextMonth.setUTCHours(0, 0, 0, 0);

    // Act
    const before = await call('GET', '/api/account/spend-limit', session);
    const set = await call('PUT', '/api/account/spend-limit', session, {
      spendLimit: { credits: 2 * IMAGE_COST, period: 'month' },
    });
    const fromFirst = await submit(first);
    const fromSecond = await submit(second);
    const over = await submit(first);
    const shown = await call('GET', '/api/account/spend-limit', session);
    const withKey = await call('GET', '/api/account/spend-limit', { Authorization: `Bearer ${first}` });
    const withoutCsrf = await call(
      'PUT',
      '/api/account/spend-limit',
      { ...session, 'X-CSRF-Token': 'nope' },
      { spendLimit: null },
    );
    const daily = await call('PUT', '/api/account/spend-limit', session, { spendLimit: { credits: 5, period: 'day' } });
    const removed = await call('PUT', '/api/account/spend-limit', session, { spendLimit: null });
    const free = await submit(second);

    // Assert
    expect(before).toEqual({ status: 200, body: { spendLimit: null } });
    expect(set).toEqual({
      status: 200,
      body: { spendLimit: { credits: 6, period: 'month', spent: 0, resetsAt: nextMonth.toISOString() } },
    });
    expect([fromFirst.status, fromSecond.status]).toEqual([202, 202]);
    expect(over).toEqual({
      status: 402,
      body: {
        error: 'Spend limit reached',
        scope: 'account',
        limit: 6,
        period: 'month',
        spent: 6,
        resetsAt: nextMonth.toISOString(),
      },
    });
    expect(shown.body.spendLimit).toMatchObject({ credits: 6, spent: 6 });
    expect(withKey.status).toBe(403);
    expect(withoutCsrf.status).toBe(403);
    expect(daily.status).toBe(400);
    expect(daily.body.details).toEqual({
      fieldErrors: { spendLimit: ['The account-wide limit is per month: period "month"'] },
      formErrors: [],
    });
    expect(removed.body).toEqual({ spendLimit: null });
    expect(free.status).toBe(202);
    expect(await getBalance(store, userId)).toBe(1000 - 3 * IMAGE_COST);
  });
});

describe('usage through the local gateway (GET /api/ai/usage)', () => {
  /** Polls the task until it has ended: its refund (or completion) is then counted. */
  async function ended(apiKey: string, taskId: string): Promise<Record<string, unknown>> {
    for (;;) {
      const task = await call('GET', `/api/ai/tasks/${taskId}`, { Authorization: `Bearer ${apiKey}` });
      if (task.body.status !== 0) return task.body;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  test('spending by key, model and day, for the key and the dashboard alike; another account sees none of it', async () => {
    // Prepare: two keys; one completes an image and fails a video (refunded), the other one image.
    const userId = 'usage-http';
    await grantCredits(store, { userId, amount: 1000 });
    const session = await sessionHeaders(userId);
    const alpha = await call('POST', '/api/keys', session, { name: 'alpha' });
    const beta = await call('POST', '/api/keys', session, { name: 'beta' });
    const alphaKey = String(alpha.body.apiKey);
    const betaKey = String(beta.body.apiKey);
    const submitWith = (apiKey: string, path: string, body: unknown) =>
      call('POST', path, { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body);
    const image = await submitWith(alphaKey, '/api/ai/image/generate', imageRequest());
    const video = await submitWith(alphaKey, '/api/ai/video/generate', videoRequest({ mockOutcome: 'fail' }));
    const other = await submitWith(betaKey, '/api/ai/image/generate', imageRequest());
    expect([image.status, video.status, other.status]).toEqual([202, 202, 202]);
    const videoCost = Number(video.body.creditsUsed);
    expect((await ended(alphaKey, String(image.body.taskId))).status).toBe(1);
    expect((await ended(alphaKey, String(video.body.taskId))).status).toBe(2);
    expect((await ended(betaKey, String(other.body.taskId))).status).toBe(1);
    await grantCredits(store, { userId: 'usage-stranger', amount: 10 });
    const stranger = await sessionHeaders('usage-stranger');

    // Act
    const byKey = await call('GET', '/api/ai/usage?groupBy=key', { Authorization: `Bearer ${betaKey}` });
    const byModel = await call('GET', '/api/ai/usage?groupBy=model', session);
    const byDay = await call('GET', '/api/ai/usage', { Authorization: `Bearer ${alphaKey}` });
    const strangers = await call('GET', '/api/ai/usage?groupBy=key', stranger);

    // Assert
    const today = new Date().toISOString().slice(0, 10);
    const figures = (debited: number, refunded: number, tasks: Record<string, number>) => ({
      debited,
      refunded,
      net: debited - refunded,
      tasks: { accepted: 0, completed: 0, failed: 0, pending: 0, ...tasks },
    });
    expect(byKey.status).toBe(200);
    expect(byKey.body).toEqual({
      from: expect.any(String),
      to: today,
      groupBy: 'key',
      totals: figures(2 * IMAGE_COST + videoCost, videoCost, { accepted: 3, completed: 2, failed: 1 }),
      rows: [
        {
          group: alpha.body.keyId,
          name: 'alpha',
          ...figures(IMAGE_COST + videoCost, videoCost, { accepted: 2, completed: 1, failed: 1 }),
        },
        { group: beta.body.keyId, name: 'beta', ...figures(IMAGE_COST, 0, { accepted: 1, completed: 1 }) },
      ],
    });
    expect(byModel.body.rows).toEqual([
      { group: 'video-b-2-text-to-video', ...figures(videoCost, videoCost, { accepted: 1, failed: 1 }) },
      { group: 'image-model-1', ...figures(2 * IMAGE_COST, 0, { accepted: 2, completed: 2 }) },
    ]);
    const days = byDay.body.rows as Array<{ group: string }>;
    expect(days).toHaveLength(30);
    expect(days.at(-1)).toEqual({
      group: today,
      ...figures(2 * IMAGE_COST + videoCost, videoCost, { accepted: 3, completed: 2, failed: 1 }),
    });
    expect(strangers.body).toMatchObject({ totals: figures(0, 0, {}), rows: [] });
  });

  test('bad ranges and groupings are 400 with a message per parameter; no credential is 401', async () => {
    // Prepare
    await grantCredits(store, { userId: 'usage-bad', amount: 1 });
    const session = await sessionHeaders('usage-bad');

    // Act
    const reversed = await call('GET', '/api/ai/usage?from=2026-11-20&to=2026-11-10', session);
    const tooLong = await call('GET', '/api/ai/usage?from=2024-01-01&to=2026-11-10', session);
    const notADay = await call('GET', '/api/ai/usage?from=2026-02-30&to=yesterday&groupBy=week', session);
    const anonymous = await fetch(`${stack.baseUrl}/api/ai/usage`);

    // Assert
    expect(reversed).toEqual({
      status: 400,
      body: { error: 'Invalid request', details: { fieldErrors: { from: ['Must not be after to'] }, formErrors: [] } },
    });
    expect(tooLong.body.details).toEqual({
      fieldErrors: { from: ['The range may cover at most 366 days'] },
      formErrors: [],
    });
    expect(notADay.body.details).toEqual({
      fieldErrors: {
        from: ['Must be a day YYYY-MM-DD (UTC)'],
        to: ['Must be a day YYYY-MM-DD (UTC)'],
        groupBy: ['Must be one of day, key, model'],
      },
      formErrors: [],
    });
    expect(anonymous.status).toBe(401);
    await anonymous.body?.cancel();
  });
});
