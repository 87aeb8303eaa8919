/**
 * Export and close (issue 40), on the local stack over real HTTP through the local gateway and its
 * authorizer: GET /api/account/export with the session (a key is refused; another account's data never
 * appears; no key, key hash, session id or webhook secret in it; pages concatenate to the whole), and
 * POST /api/account/close (typed confirmation; keys refused at once and their API Gateway keys given
 * back, the session ended and a new sign-in refused, tasks and uploads removed, the ledger kept). Then,
 * on the store behind the conflict layer, a close racing submits in flight with a key and with the
 * session: every debit it lets through is cancelled and refunded, none after it, money exact; again is
 * a no-op.
 */
import { createHash } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { endAccountCredentials } from '../../functions/auth/end-account-credentials';
import { ServiceBusyError, UnauthorizedError } from '../../functions/core/errors';
import { usageKeyName } from '../../functions/core/rate-plan';
import { csrfTokenFor } from '../../functions/core/session';
import { exportAccountPage } from '../../functions/lifecycle/account-export';
import { closeAccount } from '../../functions/lifecycle/close-account';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { logger } from '../../functions/observability/logger';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { inviteAccount } from '../../functions/store/invites';
import { webhookEndpointKeys } from '../../functions/store/keys';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { createSession } from '../../functions/store/sessions';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { Browser, signIn } from '../e2e/support/browser';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { IMAGE_COST, imageRequest, TASK_END_BUDGET_MS } from '../support/service-harness';
import { newTask, newUserId } from '../support/store-fixtures';
import { spawnTestStack, type TestStack } from '../support/test-stack';

jest.setTimeout(300_000);

const SIGN_IN = { email: 'closing@example.test', password: 'closing-password' };
const CONFIRM = { confirm: 'close my account' };

let stack: TestStack;
let store: StoreContext;

beforeAll(async () => {
  stack = await spawnTestStack({ env: { LOCAL_IDP_ACCOUNTS: `${SIGN_IN.email}:${SIGN_IN.password}` } });
  store = {
    doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint }),
    tableName: stack.tableName,
  };
}, 240_000);

afterAll(async () => {
  store?.doc.destroy();
  await stack?.stop();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

async function call(method: string, path: string, headers: Record<string, string>, json?: unknown): Promise<Answer> {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { ...headers, ...(json === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // an HTML page or an empty body
  }
  return { status: response.status, body, text };
}

/** The headers of a session write (cookie, Origin, CSRF token) for a session id. */
function sessionHeaders(sessionId: string): Record<string, string> {
  return {
    Cookie: `__Host-session=${sessionId}`,
    Origin: new URL(stack.baseUrl).origin,
    'X-CSRF-Token': csrfTokenFor(sessionId),
  };
}

async function newSession(userId: string): Promise<{ sessionId: string; headers: Record<string, string> }> {
  const { sessionId } = await createSession(store, {
    userId,
    email: `${userId}@example.test`,
    idleSeconds: 3600,
    absoluteSeconds: 7200,
  });
  return { sessionId, headers: sessionHeaders(sessionId) };
}

/** An account with credits, a key made through the API, an ended task and an upload record. */
async function populated(userId: string, session: Record<string, string>) {
  await grantCredits(store, { userId, amount: 100 });
  const created = await call('POST', '/api/keys', session, { name: 'export me' });
  if (created.status !== 201) throw new Error(`POST /api/keys answered ${created.status}: ${created.text}`);
  const apiKey = String(created.body.apiKey);
  const bearer = { Authorization: `Bearer ${apiKey}` };
  const submitted = await call('POST', '/api/ai/image/generate', bearer, imageRequest());
  if (submitted.status !== 202) throw new Error(`Submit answered ${submitted.status}: ${submitted.text}`);
  const taskId = String(submitted.body.taskId);
  const deadline = Date.now() + TASK_END_BUDGET_MS;
  for (;;) {
    const task = await call('GET', `/api/ai/tasks/${taskId}?wait=20`, bearer);
    if (task.body.status !== 0) break;
    if (Date.now() > deadline) throw new Error(`Task ${taskId} still pending: ${task.text}`);
  }
  const upload = await call('POST', '/api/ai/uploads', bearer, { contentType: 'image/png', size: 100 });
  if (upload.status !== 201) throw new Error(`POST /api/ai/uploads answered ${upload.status}: ${upload.text}`);
  return { apiKey, keyId: String(created.body.keyId), bearer, taskId, uploadId: String(upload.body.uploadId) };
}

describe('GET /api/account/export', () => {
  it("gives the session its own account's data without secrets; a key is refused", async () => {
    // Prepare: two accounts, each with a key, an ended task and an upload.
    const ownerId = newUserId();
    const owner = await newSession(ownerId);
    const mine = await populated(ownerId, owner.headers);
    const strangerId = newUserId();
    const theirs = await populated(strangerId, (await newSession(strangerId)).headers);
    // A webhook endpoint whose secret is rotated: the current and the previous secret are both sealed in it.
    const endpoint = await call('POST', '/api/webhooks', owner.headers, {
      url: 'https://hooks.example.com/orders',
      events: ['task.completed'],
      description: 'orders',
    });
    const endpointId = String(endpoint.body.id);
    const rotated = await call('POST', `/api/webhooks/${endpointId}/rotate-secret`, owner.headers, {});
    const stored = await store.doc.send(
      new GetCommand({ TableName: stack.tableName, Key: webhookEndpointKeys.endpoint(ownerId, endpointId) }),
    );

    // Act
    const exported = await call('GET', '/api/account/export', owner.headers);
    const withKey = await call('GET', '/api/account/export', mine.bearer);
    const forged = await call('GET', '/api/account/export?cursor=Mzpvb3Bz', owner.headers);

    // Assert
    expect(exported.status).toBe(200);
    const body = exported.body as Record<string, Array<Record<string, unknown>>> & Record<string, unknown>;
    expect(body).toMatchObject({ userId: ownerId, balance: 100 - IMAGE_COST, next: null });
    expect(body.tasks?.map((task) => task.taskId)).toEqual([mine.taskId]);
    expect(body.ledger?.map((entry) => [entry.kind, entry.delta])).toEqual(
      expect.arrayContaining([
        ['grant', 100],
        ['debit', -IMAGE_COST],
      ]),
    );
    expect(body.keys).toEqual([expect.objectContaining({ keyId: mine.keyId, name: 'export me', revokedAt: null })]);
    expect(body.uploads).toEqual([expect.objectContaining({ uploadId: mine.uploadId, contentType: 'image/png' })]);
    expect([endpoint.status, rotated.status]).toEqual([201, 200]);
    expect(body.webhookEndpoints).toEqual([
      {
        id: endpointId,
        url: 'https://hooks.example.com/orders',
        events: ['task.completed'],
        enabled: true,
        description: 'orders',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        secretCreatedAt: expect.any(String),
      },
    ]);
    const endpointSecrets = [
      String(endpoint.body.secret),
      String(rotated.body.secret),
      String(stored.Item?.sealedSecret),
      String(stored.Item?.previousSealedSecret),
    ];
    expect(endpointSecrets.every((secret) => secret.length > 20)).toBe(true);
    // The secret, its key bytes without the `whsec_` prefix, and each sealed form: nowhere in the export.
    for (const secret of endpointSecrets.flatMap((secret) => [secret, secret.replace(/^whsec_/, '')])) {
      expect(exported.text).not.toContain(secret);
    }
    expect(exported.text).not.toMatch(/sealed/i);
    for (const secret of [
      mine.apiKey,
      mine.apiKey.slice(0, 16),
      createHash('sha256').update(mine.apiKey).digest('hex'),
      owner.sessionId,
      createHash('sha256').update(owner.sessionId).digest('hex'),
      strangerId,
      theirs.taskId,
      theirs.keyId,
      theirs.uploadId,
    ]) {
      expect(exported.text).not.toContain(secret);
    }
    expect(exported.text).not.toMatch(/sealedSecret|keyHash|apiKey|sessionHash/);
    expect(withKey.status).toBe(403);
    expect(withKey.text).not.toContain(mine.taskId);
    expect(forged.status).toBe(400);
  });

  it('pages of a small budget concatenate to the whole export', async () => {
    // Prepare
    const userId = newUserId();
    await populated(userId, (await newSession(userId)).headers);
    const ctx = { store, now: () => new Date() };

    // Act
    const whole = await exportAccountPage(ctx, { userId });
    const pages = [await exportAccountPage(ctx, { userId, pageBytes: 150 })];
    for (let next = pages[0]?.next; next; next = pages.at(-1)?.next) {
      pages.push(await exportAccountPage(ctx, { userId, cursor: next, pageBytes: 150 }));
    }

    // Assert
    expect(pages.length).toBeGreaterThan(3);
    for (const section of ['tasks', 'ledger', 'keys', 'webhooks', 'uploads', 'webhookEndpoints'] as const) {
      expect(pages.flatMap((page) => page[section])).toEqual(whole[section]);
    }
  });
});

describe('POST /api/account/close', () => {
  it('ends keys and the sessions at once, removes tasks and uploads, keeps the ledger and refuses sign-in', async () => {
    // Prepare: an invited account signed in through the OpenID flow, with a key, a task and an upload.
    const userId = newUserId();
    await inviteAccount(store, { email: SIGN_IN.email, userId });
    const browser = new Browser();
    expect((await signIn(browser, stack.baseUrl, SIGN_IN)).status).toBe(200);
    const sessionId = String(await browser.cookie(stack.baseUrl, '__Host-session'));
    const session = sessionHeaders(sessionId);
    const account = await populated(userId, session);
    const secondKey = await call('POST', '/api/keys', session, { name: 'second' });
    // The account signed in on a second device too.
    const otherDevice = await newSession(userId);
    const gatewayKey = {
      PK: `LOCALAPIKEY#${usageKeyName(stack.tableName, { credential: 'key', keyId: account.keyId })}`,
      SK: 'LOCALAPIKEY',
    };
    // The API Gateway stand-in's record of every key of the account: each API key's, and the sessions'.
    const gatewayKeys = [
      { credential: 'key' as const, keyId: account.keyId },
      { credential: 'key' as const, keyId: String(secondKey.body.keyId) },
      { credential: 'session' as const, userId },
    ].map((subject) => ({ PK: `LOCALAPIKEY#${usageKeyName(stack.tableName, subject)}`, SK: 'LOCALAPIKEY' }));
    const readGatewayKeys = () =>
      Promise.all(
        gatewayKeys.map(
          async (key) => (await store.doc.send(new GetCommand({ TableName: stack.tableName, Key: key }))).Item,
        ),
      );
    const gatewayKeysBefore = await readGatewayKeys();
    const enrolled = await store.doc.send(new GetCommand({ TableName: stack.tableName, Key: gatewayKey }));
    const ledgerBefore = await listLedger(store, userId);

    // Act
    const unconfirmed = await call('POST', '/api/account/close', session, { confirm: 'yes' });
    const closed = await call('POST', '/api/account/close', session, CONFIRM);
    const keyAfter = await call('GET', '/api/ai/credits', account.bearer);
    const sessionAfter = await call('GET', '/api/session', session);
    const otherDeviceAfter = await call('GET', '/api/session', otherDevice.headers);
    const sessionWriteAfter = await call('POST', '/api/keys', session, { name: 'after close' });
    const gatewayKeysAfter = await readGatewayKeys();
    const gatewayKeyAfter = await store.doc.send(new GetCommand({ TableName: stack.tableName, Key: gatewayKey }));
    const signInAgain = await signIn(new Browser(), stack.baseUrl, SIGN_IN);

    // Assert
    expect(unconfirmed.status).toBe(400);
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({
      userId,
      firstClosure: true,
      keysRevoked: 2,
      sessionsEnded: 2,
      tasksDeleted: 1,
      tasksStillRunning: 0,
      uploadsDeleted: 1,
      balance: 100 - IMAGE_COST,
    });
    expect(keyAfter.status).toBe(401);
    expect(sessionAfter.status).toBe(401);
    expect(otherDeviceAfter.status).toBe(401);
    expect(sessionWriteAfter.status).toBe(401);
    expect(secondKey.status).toBe(201);
    expect(gatewayKeysBefore.map((item) => item?.deleted)).toEqual([undefined, undefined, undefined]);
    // Every API Gateway key given back: each key's and the sessions' (the stand-in marks them deleted).
    expect(gatewayKeysAfter).toEqual([
      expect.objectContaining({ deleted: true }),
      expect.objectContaining({ deleted: true }),
      expect.objectContaining({ deleted: true }),
    ]);
    // The API Gateway stand-in marks a deleted key (local/usage-plans.ts).
    expect(enrolled.Item).toBeDefined();
    expect(enrolled.Item?.deleted).toBeUndefined();
    expect(gatewayKeyAfter.Item).toMatchObject({ deleted: true });
    expect(signInAgain.status).toBe(403);
    expect(signInAgain.text).toContain('Account closed');
    expect((await exportAccountPage({ store, now: () => new Date() }, { userId })).tasks).toEqual([]);
    expect(await listLedger(store, userId)).toEqual(
      ledgerBefore.map((entry) => (entry.kind === 'grant' ? entry : { ...entry, model: expect.any(String) })),
    );
    expect(await auditUser(store, userId)).toMatchObject({ ok: true, balance: 100 - IMAGE_COST });
  });
});

/** Submits racing the close: each racer alternates a key's accept and a session's until refused. */
const RACERS = atScale(4, 40);

describe('a close racing submits in flight (conflict layer)', () => {
  let conflictStore: TestStore;

  beforeAll(async () => {
    conflictStore = await createTestStore({ conflicts: { holdMs: 5 } });
  });

  afterAll(async () => {
    await conflictStore.dispose();
  });

  it('every debit before the close is cancelled and refunded, none after it; closing again changes nothing', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(conflictStore, { userId, amount: 10_000 });
    const key = await putApiKey(conflictStore, { userId, name: 'racing' });
    const noRemoval = { remove: async () => {} };
    const actor = { type: 'operator' as const };
    const ctx = {
      store: conflictStore,
      results: noRemoval,
      uploads: noRemoval,
      now: () => new Date(),
      versionOf: async () => undefined,
      endCredentials: ({ now }: { now: Date }) =>
        endAccountCredentials(conflictStore, undefined, { userId, now, actor }),
    };
    let accepted = 0;
    let started = 0;
    const racer = async (index: number) => {
      for (let round = 0; ; round++) {
        started++;
        const keyId = (index + round) % 2 === 0 ? key.keyId : undefined;
        try {
          await acceptTask(conflictStore, { task: newTask(userId, 1, { keyId, now: new Date() }) });
          accepted++;
        } catch (error) {
          if (error instanceof UnauthorizedError) return;
          // A busy answer wrote nothing: the racer tries again, as a client told Retry-After does.
          if (!(error instanceof ServiceBusyError)) throw error;
        }
      }
    };

    // Act: the close starts once the racers are under way, and they run until it refuses them.
    const racing = Array.from({ length: RACERS }, (_, index) => racer(index));
    while (started < RACERS + 2) await new Promise((resolve) => setImmediate(resolve));
    const report = await closeAccount(ctx, { userId, actor }, logger);
    await Promise.all(racing);
    const again = await closeAccount(ctx, { userId, actor }, logger);
    const ledger = await listLedger(conflictStore, userId);

    // Assert
    expect(accepted).toBeGreaterThan(0);
    expect(report).toMatchObject({ firstClosure: true, keysRevoked: 1, tasksCancelled: accepted });
    expect(report.creditsRefunded).toBe(accepted);
    expect(again).toMatchObject({ firstClosure: false, keysRevoked: 0, tasksCancelled: 0, tasksDeleted: 0 });
    expect(ledger.filter((entry) => entry.kind === 'debit')).toHaveLength(accepted);
    expect(ledger.filter((entry) => entry.kind === 'refund')).toHaveLength(accepted);
    expect(await auditUser(conflictStore, userId)).toMatchObject({ ok: true, balance: 10_000 });
  });
});
