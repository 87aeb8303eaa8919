/**
 * Per-key rate limits on the local stack, over real HTTP through the local gateway: the same plan
 * semantics API Gateway's usage plans apply deployed (a bucket per key, the account's plan, a daily
 * quota), with the documented 429 body and `Retry-After`.
 */

import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { setAccountLimits } from '../../functions/auth/rate-limits';
import { usageKeyName } from '../../functions/core/rate-plan';
import { csrfTokenFor } from '../../functions/core/session';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { listApiKeys } from '../../functions/store/api-keys';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { getInvite, inviteAccount } from '../../functions/store/invites';
import { DEFAULT_MAX_ACTIVE_KEYS } from '../../functions/store/key-count';
import { createSession } from '../../functions/store/sessions';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { Browser, signIn } from '../e2e/support/browser';
import { spawnTestStack, type TestStack } from '../support/test-stack';

/** The default plan of this stack: a burst of 3, then one request a second. */
const BURST = 3;
/** Requests sent at once: far more than the burst plus what a second of refill could add on a slow machine. */
const FLOOD = 20;

/** Signs in through the local OpenID provider (invited by the test). */
const SIGN_IN = { email: 'limits-sign-in@example.test', password: 'limits-sign-in-password' };

let stack: TestStack;
let store: StoreContext;

async function keyFor(userId: string, name: string): Promise<string> {
  return (await putApiKey(store, { userId, name })).apiKey;
}

function credits(apiKey: string): Promise<Response> {
  return fetch(`${stack.baseUrl}/api/ai/credits?limit=1`, { headers: { Authorization: `Bearer ${apiKey}` } });
}

async function flood(apiKey: string, count: number): Promise<Response[]> {
  return Promise.all(Array.from({ length: count }, () => credits(apiKey)));
}

beforeAll(async () => {
  stack = await spawnTestStack({
    env: {
      DATA_DIR: ':memory:',
      KEY_RATE_LIMIT: '1',
      KEY_BURST_LIMIT: String(BURST),
      // Read an account's own plan on every request, so a plan set by the test applies at once.
      RATE_PLAN_CACHE_SECONDS: '0',
      // An account of the local OpenID provider, to sign in as.
      LOCAL_IDP_ACCOUNTS: `${SIGN_IN.email}:${SIGN_IN.password}`,
    },
  });
  store = {
    doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint }),
    tableName: stack.tableName,
  };
}, 240_000);

afterAll(async () => {
  store?.doc.destroy();
  await stack?.stop();
});

describe('per-key rate limits through the local gateway', () => {
  test('a burst over one key gets 429 with Retry-After; another key of the same account and another account are unaffected', async () => {
    // Prepare
    await grantCredits(store, { userId: 'limits-a', amount: 10 });
    const noisy = await keyFor('limits-a', 'noisy script');
    const calm = await keyFor('limits-a', 'calm script');
    const neighbour = await keyFor('limits-b', 'neighbour');

    // Act
    const answers = await flood(noisy, FLOOD);
    const calmAnswer = await credits(calm);
    const neighbourAnswer = await credits(neighbour);

    // Assert
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(BURST);
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    const throttled = answers.find((answer) => answer.status === 429);
    expect(throttled).toBeDefined();
    expect(throttled?.headers.get('retry-after')).toBe('1');
    expect(await throttled?.json()).toEqual({ error: 'Too many requests' });
    expect(calmAnswer.status).toBe(200);
    expect(neighbourAnswer.status).toBe(200);
  });

  test("an account's own plan (limits set) gives each of its keys a bigger burst", async () => {
    // Prepare
    const apiKey = await keyFor('limits-big', 'batch');
    await setAccountLimits(store, undefined, {
      userId: 'limits-big',
      plan: { ratePerSecond: 1, burst: FLOOD },
      actor: { type: 'operator' },
    });

    // Act
    const answers = await flood(apiKey, FLOOD);

    // Assert
    expect(answers.map((answer) => answer.status)).toEqual(Array(FLOOD).fill(200));
  });

  test('a spent daily quota gets 429 with its own message and Retry-After', async () => {
    // Prepare
    const apiKey = await keyFor('limits-quota', 'daily');
    await setAccountLimits(store, undefined, {
      userId: 'limits-quota',
      plan: { ratePerSecond: 100, burst: 100, dailyQuota: 2 },
      actor: { type: 'operator' },
    });

    // Act
    const first = await credits(apiKey);
    const second = await credits(apiKey);
    const third = await credits(apiKey);

    // Assert
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('3600');
    expect(await third.json()).toEqual({ error: 'Daily quota exceeded' });
  });

  test('a GET that waits (?wait=N) is one request for the daily quota, however long it waits', async () => {
    // Prepare: a quota of three requests; the task runs at the provider for an hour, so the GET waits it all.
    const apiKey = await keyFor('limits-wait', 'waiting');
    await grantCredits(store, { userId: 'limits-wait', amount: 100 });
    await setAccountLimits(store, undefined, {
      userId: 'limits-wait',
      plan: { ratePerSecond: 100, burst: 100, dailyQuota: 3 },
      actor: { type: 'operator' },
    });
    const bearer = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const submitted = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({ model: 'image-model-1', prompt: 'waits', providerInput: { mockDelayMs: 3_600_000 } }),
    });
    const { taskId } = (await submitted.json()) as { taskId: string };

    // Act: request 2 waits 3 s (six reads of the task behind it), then request 3, then request 4.
    const waited = await fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}?wait=3`, { headers: bearer });
    const waitedBody = (await waited.json()) as { status: number };
    const third = await credits(apiKey);
    const fourth = await credits(apiKey);

    // Assert
    expect(submitted.status).toBe(202);
    expect([waited.status, waitedBody.status]).toEqual([200, 0]);
    expect(third.status).toBe(200);
    expect(fourth.status).toBe(429);
    expect(await fourth.json()).toEqual({ error: 'Daily quota exceeded' });
  });

  test('requests the authorizer refuses never reach the limiter: a bad key is 401, not 429', async () => {
    // Prepare
    const bogus = `gsk_live_${'x'.repeat(43)}`;

    // Act
    const answers = await flood(bogus, FLOOD);

    // Assert
    expect(answers.map((answer) => answer.status)).toEqual(Array(FLOOD).fill(401));
  });

  test("key creations take from the account's session bucket: a flood of POST /api/keys gets 429s and no key for them", async () => {
    // Prepare
    const userId = 'limits-sessions';
    const { sessionId } = await createSession(store, {
      userId,
      email: `${userId}@example.test`,
      idleSeconds: 3600,
      absoluteSeconds: 7200,
    });
    const headers = {
      Cookie: `__Host-session=${sessionId}`,
      Origin: new URL(stack.baseUrl).origin,
      'X-CSRF-Token': csrfTokenFor(sessionId),
      'Content-Type': 'application/json',
    };

    // Act
    const answers = await Promise.all(
      Array.from({ length: FLOOD }, (_, index) =>
        fetch(`${stack.baseUrl}/api/keys`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name: `loop ${index}` }),
        }),
      ),
    );

    // Assert
    const statuses = answers.map((answer) => answer.status);
    const created = statuses.filter((status) => status === 201).length;
    expect(created).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((status) => status !== 201 && status !== 429)).toEqual([]);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
    expect(await listApiKeys(store, userId)).toHaveLength(created);
  });

  test("sign-in enrolls the account's sessions once and records it; a later sign-in enrolls nothing", async () => {
    // Prepare
    const userId = 'limits-sign-in';
    await inviteAccount(store, { email: SIGN_IN.email, userId });
    const sessionsKey = {
      PK: `LOCALAPIKEY#${usageKeyName(stack.tableName, { credential: 'session', userId })}`,
      SK: 'LOCALAPIKEY',
    };

    // Act
    const first = await signIn(new Browser(), stack.baseUrl, SIGN_IN);
    const afterFirst = await getInvite(store, SIGN_IN.email);
    const enrolled = await store.doc.send(new GetCommand({ TableName: stack.tableName, Key: sessionsKey }));
    await store.doc.send(new DeleteCommand({ TableName: stack.tableName, Key: sessionsKey }));
    const second = await signIn(new Browser(), stack.baseUrl, SIGN_IN);
    const afterSecond = await getInvite(store, SIGN_IN.email);
    const enrolledAgain = await store.doc.send(new GetCommand({ TableName: stack.tableName, Key: sessionsKey }));

    // Assert
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(afterFirst?.sessionUsageEnrolledAt).toEqual(expect.any(String));
    expect(enrolled.Item).toBeDefined();
    expect(afterSecond?.sessionUsageEnrolledAt).toBe(afterFirst?.sessionUsageEnrolledAt);
    expect(enrolledAgain.Item).toBeUndefined();
  });

  test('POST /api/keys at the cap on active keys answers 409 naming the limit, and issues nothing', async () => {
    // Prepare
    const userId = 'limits-cap';
    for (let index = 0; index < DEFAULT_MAX_ACTIVE_KEYS; index++) await putApiKey(store, { userId, name: `k${index}` });
    const { sessionId } = await createSession(store, {
      userId,
      email: `${userId}@example.test`,
      idleSeconds: 3600,
      absoluteSeconds: 7200,
    });

    // Act
    const answer = await fetch(`${stack.baseUrl}/api/keys`, {
      method: 'POST',
      headers: {
        Cookie: `__Host-session=${sessionId}`,
        Origin: new URL(stack.baseUrl).origin,
        'X-CSRF-Token': csrfTokenFor(sessionId),
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ name: 'one too many' }),
    });

    // Assert
    expect(answer.status).toBe(409);
    expect(await answer.json()).toEqual({
      error: `This account already has ${DEFAULT_MAX_ACTIVE_KEYS} active API keys, the most it may hold; revoke one first`,
      limit: DEFAULT_MAX_ACTIVE_KEYS,
    });
    expect(await listApiKeys(store, userId)).toHaveLength(DEFAULT_MAX_ACTIVE_KEYS);
  });
});
