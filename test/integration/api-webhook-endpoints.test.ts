/**
 * Webhook endpoints end to end on the local parts: the real handlers behind the local gateway with the
 * real authorizer over HTTP (keys and sessions), DynamoDB Local, tasks ended by the store's own
 * operations, the webhook worker on the table's stream (local/stream-poller.ts
 * with the deployed filters), and a real HTTP receiver whose every request is checked against the
 * secrets the API handed out, with the `standardwebhooks` library. Covers: the secret shown once and
 * never stored in plaintext, the URL rules, the bound on endpoints, session-only writes (a key gets
 * 403, CSRF checked), the test event, rotation with both signatures during the grace, event filters,
 * the delivery log (filters, cursor), redelivery with the same `webhook-id`, and another account
 * seeing none of it (404).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { GenerationClient, verifyWebhook } from '../../client/src/index';
import { handler as authorizer } from '../../functions/authorizer/handler';
import { csrfTokenFor } from '../../functions/core/session';
import {
  environmentOf,
  PUBLIC_ORIGIN,
  setting,
  WEBHOOK_INSECURE_ORIGINS,
  WEBHOOK_MAX_ENDPOINTS,
  WEBHOOK_RETRY_DELAYS_SECONDS,
  WEBHOOK_SECRETS_KEY,
} from '../../functions/environment/environment';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { resetEndpointWiringFromEnv } from '../../functions/runtime/webhook-endpoints-from-env';
import { resetWebhookLifecycleFromEnv } from '../../functions/runtime/webhook-lifecycle-from-env';
import { createSession } from '../../functions/store/sessions';
import { completeTask } from '../../functions/store/tasks';
import { listEndpoints } from '../../functions/store/webhook-endpoints';
import { handler as createEndpoint } from '../../functions/webhook-endpoints-create/handler';
import { handler as deleteEndpoint } from '../../functions/webhook-endpoints-delete/handler';
import { handler as listDeliveries } from '../../functions/webhook-endpoints-deliveries/handler';
import { handler as getEndpoint } from '../../functions/webhook-endpoints-get/handler';
import { handler as listEndpointsRoute } from '../../functions/webhook-endpoints-list/handler';
import { handler as redeliver } from '../../functions/webhook-endpoints-redeliver/handler';
import { handler as rotate } from '../../functions/webhook-endpoints-rotate/handler';
import { handler as testEvent } from '../../functions/webhook-endpoints-test/handler';
import { handler as updateEndpoint } from '../../functions/webhook-endpoints-update/handler';
import { handler as webhookWorker } from '../../functions/webhook-worker/handler';
import { ROUTES, WEBHOOK_WORKER_FILTERS } from '../../lib/routes';
import { createGateway, type ProxyHandler } from '../../local/gateway';
import { type StreamPoller, startStreamPoller } from '../../local/stream-poller';
import { testEndpoint } from '../support/dynamodb';
import { type ServiceHarness, startServiceHarness } from '../support/service-harness';

jest.setTimeout(180_000);

const SERVICE_KEY = 'api-webhook-endpoints-service-key-0123456789';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Answer = { status: number; body: Record<string, unknown> };

describe('webhook endpoints over HTTP, through the webhook worker to a verifying receiver', () => {
  let h: ServiceHarness;
  let gateway: Server;
  let receiver: Server;
  let worker: StreamPoller;
  let baseUrl = '';
  let origin = '';
  const received: Received[] = [];
  /** Status codes the receiver answers with, per path, in order (then 200). */
  const answers = new Map<string, number[]>();

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '';
        received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString() });
        response.writeHead(answers.get(path)?.shift() ?? 200).end();
      });
    });
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', () => ready()));
    origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    h = await startServiceHarness({ mediaWorker: false, dispatcher: false });
    const handlers: Record<string, ProxyHandler> = {
      'webhook-endpoints-create': createEndpoint as unknown as ProxyHandler,
      'webhook-endpoints-list': listEndpointsRoute as unknown as ProxyHandler,
      'webhook-endpoints-get': getEndpoint as unknown as ProxyHandler,
      'webhook-endpoints-update': updateEndpoint as unknown as ProxyHandler,
      'webhook-endpoints-delete': deleteEndpoint as unknown as ProxyHandler,
      'webhook-endpoints-rotate': rotate as unknown as ProxyHandler,
      'webhook-endpoints-test': testEvent as unknown as ProxyHandler,
      'webhook-endpoints-deliveries': listDeliveries as unknown as ProxyHandler,
      'webhook-endpoints-redeliver': redeliver as unknown as ProxyHandler,
    };
    gateway = createServer(
      createGateway({
        routes: ROUTES.filter((route) => handlers[route.name]).map((route) => ({
          route,
          handler: handlers[route.name] as ProxyHandler,
        })),
        authorizer,
        authorizerCacheTtlSeconds: 0,
      }),
    );
    await new Promise<void>((ready) => gateway.listen(0, '127.0.0.1', () => ready()));
    baseUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    // Session writes are checked against the gateway's origin (CSRF); the worker seals with the local key,
    // may call the receiver over plain http, and waits an hour after a failed attempt (redelivery is the
    // test's to make).
    Object.assign(
      process.env,
      environmentOf(
        setting(PUBLIC_ORIGIN, baseUrl),
        setting(WEBHOOK_SECRETS_KEY, SERVICE_KEY),
        setting(WEBHOOK_INSECURE_ORIGINS, origin),
        setting(WEBHOOK_RETRY_DELAYS_SECONDS, '3600'),
        setting(WEBHOOK_MAX_ENDPOINTS, 3),
      ),
    );
    resetWebhookLifecycleFromEnv();
    resetEndpointWiringFromEnv();
    worker = await startStreamPoller({
      endpoint: testEndpoint(),
      tableName: h.store.tableName,
      handler: webhookWorker,
      filter: undefined,
      filters: WEBHOOK_WORKER_FILTERS,
      name: 'webhook worker',
    });
  });

  afterAll(async () => {
    await worker?.stop();
    for (const variable of [
      PUBLIC_ORIGIN,
      WEBHOOK_SECRETS_KEY,
      WEBHOOK_INSECURE_ORIGINS,
      WEBHOOK_RETRY_DELAYS_SECONDS,
      WEBHOOK_MAX_ENDPOINTS,
    ]) {
      delete process.env[variable.name];
    }
    resetWebhookLifecycleFromEnv();
    resetEndpointWiringFromEnv();
    await new Promise<void>((closed) => {
      gateway.close(() => closed());
      gateway.closeAllConnections();
    });
    await new Promise<void>((closed) => receiver.close(() => closed()));
    await h.dispose();
  });

  async function sessionHeaders(userId: string): Promise<Record<string, string>> {
    const { sessionId } = await createSession(h.store, {
      userId,
      email: `${userId}@example.test`,
      idleSeconds: 3600,
      absoluteSeconds: 7200,
    });
    return {
      Cookie: `__Host-session=${sessionId}`,
      Origin: baseUrl,
      'X-CSRF-Token': csrfTokenFor(sessionId),
      'Content-Type': 'application/json',
    };
  }

  async function keyHeaders(userId: string): Promise<Record<string, string>> {
    const { apiKey } = await putApiKey(h.store, { userId, name: 'webhook tests' });
    return { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  }

  async function call(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
    const answer = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  }

  /** Polls `read` until `check` holds (the worker runs on its own), at most 90 s. */
  async function until<T>(read: () => T | Promise<T>, check: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const value = await read();
      if (check(value) || Date.now() > deadline) return value;
      await new Promise((next) => setTimeout(next, 50));
    }
  }

  function at(path: string): Received[] {
    return received.filter((request) => request.path === path);
  }

  /** The payload when the request verifies with `secret` (Standard Webhooks), else undefined. */
  function verified(request: Received, secret: string): { type: string; data: Record<string, unknown> } | undefined {
    try {
      return new Webhook(secret).verify(request.body, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      }) as { type: string; data: Record<string, unknown> };
    } catch {
      return undefined;
    }
  }

  type Delivery = {
    id: string;
    eventId: string;
    eventType: string;
    state: string;
    attempts: { attempt: number; statusCode: number | null; durationMs: number; at: string; error: string | null }[];
  };

  function deliveriesOf(answer: Answer): Delivery[] {
    return answer.body.deliveries as Delivery[];
  }

  it('creates endpoints with the secret shown once, session only, within the URL rules and the bound', async () => {
    // Prepare
    const userId = 'wh-crud';
    const session = await sessionHeaders(userId);
    const key = await keyHeaders(userId);

    // Act
    const created = await call('POST', '/api/webhooks', session, {
      url: `${origin}/crud`,
      events: ['task.completed'],
      description: 'orders',
    });
    const id = String(created.body.id);
    const byKey = await call('POST', '/api/webhooks', key, { url: `${origin}/crud` });
    const noCsrf = await call('POST', '/api/webhooks', { ...session, 'X-CSRF-Token': 'nope' }, { url: `${origin}/x` });
    const privateHost = await call('POST', '/api/webhooks', session, { url: 'https://db.internal/hook' });
    const plainHttp = await call('POST', '/api/webhooks', session, { url: 'http://example.com/hook' });
    const badEvents = await call('POST', '/api/webhooks', session, { url: `${origin}/x`, events: ['task.exploded'] });
    const listed = await call('GET', '/api/webhooks', key);
    const one = await call('GET', `/api/webhooks/${id}`, key);
    const patchByKey = await call('PATCH', `/api/webhooks/${id}`, key, { enabled: false });
    const patched = await call('PATCH', `/api/webhooks/${id}`, session, { events: null, enabled: false });
    const second = await call('POST', '/api/webhooks', session, { url: `${origin}/two` });
    const third = await call('POST', '/api/webhooks', session, { url: `${origin}/three` });
    const overBound = await call('POST', '/api/webhooks', session, { url: `${origin}/four` });
    const deleteByKey = await call('DELETE', `/api/webhooks/${String(third.body.id)}`, key);
    const deleted = await call('DELETE', `/api/webhooks/${String(third.body.id)}`, session);
    const afterDelete = await call('POST', '/api/webhooks', session, { url: `${origin}/four` });
    const stored = await listEndpoints(h.store, userId);

    // Assert
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      url: `${origin}/crud`,
      events: ['task.completed'],
      enabled: true,
      description: 'orders',
      previousSecretExpiresAt: null,
    });
    expect(String(created.body.secret)).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(byKey.status).toBe(403);
    expect(noCsrf.status).toBe(403);
    expect(privateHost.status).toBe(400);
    expect(privateHost.body.details).toMatchObject({ fieldErrors: { url: [expect.any(String)] } });
    expect(plainHttp.status).toBe(400);
    expect(badEvents.status).toBe(400);
    expect(listed.status).toBe(200);
    expect(listed.body.endpoints).toEqual([expect.objectContaining({ id, url: `${origin}/crud` })]);
    expect(one.body).toMatchObject({ id, events: ['task.completed'] });
    // The secret is shown at creation only: never in a read, never in the table in plaintext.
    expect(JSON.stringify([listed.body, one.body, patched.body])).not.toContain('whsec_');
    expect(JSON.stringify(stored)).not.toContain(String(created.body.secret));
    expect(JSON.stringify(stored)).not.toContain('whsec_');
    expect(patchByKey.status).toBe(403);
    expect(patched.body).toMatchObject({ id, events: null, enabled: false });
    expect([second.status, third.status]).toEqual([201, 201]);
    expect(overBound.status).toBe(409);
    expect(overBound.body).toMatchObject({ limit: 3 });
    expect(deleteByKey.status).toBe(403);
    expect(deleted).toEqual({ status: 200, body: { id: third.body.id, deleted: true } });
    expect(afterDelete.status).toBe(201);
  });

  it('sends a signed test event, logs it, and rotates with both signatures during the grace', async () => {
    // Prepare
    const userId = 'wh-rotate';
    const session = await sessionHeaders(userId);
    const key = await keyHeaders(userId);
    const created = await call('POST', '/api/webhooks', session, { url: `${origin}/rotate` });
    const id = String(created.body.id);
    const firstSecret = String(created.body.secret);

    // Act: a test by key, a rotation with the default grace and a test, then one without grace and a test.
    const tested = await call('POST', `/api/webhooks/${id}/test`, key);
    await until(
      () => at('/rotate'),
      (calls) => calls.length >= 1,
    );
    const rotateByKey = await call('POST', `/api/webhooks/${id}/rotate-secret`, key, {});
    const rotated = await call('POST', `/api/webhooks/${id}/rotate-secret`, session, {});
    const secondSecret = String(rotated.body.secret);
    await call('POST', `/api/webhooks/${id}/test`, key);
    await until(
      () => at('/rotate'),
      (calls) => calls.length >= 2,
    );
    const rotatedAgain = await call('POST', `/api/webhooks/${id}/rotate-secret`, session, { graceSeconds: 0 });
    const thirdSecret = String(rotatedAgain.body.secret);
    await call('POST', `/api/webhooks/${id}/test`, key);
    const calls = await until(
      () => at('/rotate'),
      (all) => all.length >= 3,
    );
    const log = await until(
      () => call('GET', `/api/webhooks/${id}/deliveries`, key),
      (answer) => deliveriesOf(answer).length === 3 && deliveriesOf(answer).every((d) => d.state === 'delivered'),
    );

    // Assert
    expect(tested.status).toBe(202);
    const [first, duringGrace, afterGrace] = calls as [Received, Received, Received];
    expect(verified(first, firstSecret)).toMatchObject({ type: 'webhook.test', data: { endpointId: id } });
    expect(first.headers['webhook-id']).toBe(tested.body.eventId);
    expect(rotateByKey.status).toBe(403);
    expect(rotated.status).toBe(200);
    expect(secondSecret).not.toBe(firstSecret);
    expect(rotated.body.previousSecretExpiresAt).toEqual(expect.any(String));
    // During the grace: two signatures in one header, each verifying with its own secret.
    expect(String(duringGrace.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(duringGrace, secondSecret)?.type).toBe('webhook.test');
    expect(verified(duringGrace, firstSecret)?.type).toBe('webhook.test');
    // The typed client's verifier takes either secret during the grace, and refuses a changed body.
    expect(verifyWebhook(duringGrace.body, duringGrace.headers, firstSecret).type).toBe('webhook.test');
    expect(verifyWebhook(Buffer.from(duringGrace.body), duringGrace.headers, secondSecret).type).toBe('webhook.test');
    expect(() => verifyWebhook(`${duringGrace.body} `, duringGrace.headers, secondSecret)).toThrow();
    // No grace: the previous secret no longer signs.
    expect(rotatedAgain.body.previousSecretExpiresAt).toBeNull();
    expect(String(afterGrace.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verified(afterGrace, thirdSecret)?.type).toBe('webhook.test');
    expect(verified(afterGrace, secondSecret)).toBeUndefined();
    const deliveries = deliveriesOf(log);
    expect(deliveries.map((delivery) => delivery.eventType)).toEqual(['webhook.test', 'webhook.test', 'webhook.test']);
    // Newest first: the first test event is last.
    expect(deliveries[2]?.eventId).toBe(tested.body.eventId);
    expect(deliveries[0]?.attempts).toEqual([
      { attempt: 1, at: expect.any(String), statusCode: 200, durationMs: expect.any(Number), error: null },
    ]);
  });

  it('fans a task event out to the endpoints whose filter takes it, logs it, and redelivers with the same webhook-id', async () => {
    // Prepare: one endpoint for every event (its first attempt answered 500), one for task.failed only.
    const userId = 'wh-tasks';
    await grantCredits(h.store, { userId, amount: 30 });
    const session = await sessionHeaders(userId);
    const key = await keyHeaders(userId);
    const all = await call('POST', '/api/webhooks', session, { url: `${origin}/all` });
    const failedOnly = await call('POST', '/api/webhooks', session, {
      url: `${origin}/failed`,
      events: ['task.failed'],
    });
    const allId = String(all.body.id);
    answers.set('/all', [500]);

    // Act: a task completes; its delivery fails once, then a test event; the log read with filters and a
    // cursor; the failed delivery redelivered (and a delivered one again).
    const taskId = 'a3f6c0de-0000-4000-8000-000000000039';
    await acceptTask(h.store, {
      task: {
        userId,
        taskId,
        type: 'image',
        model: 'image-model-1',
        prompt: 'p',
        request: {},
        creditsUsed: 3,
        now: new Date(),
      },
    });
    await completeTask(h.store, { userId, taskId, resultKeys: [`results/${taskId}.png`], now: new Date() });
    const waiting = await until(
      () => call('GET', `/api/webhooks/${allId}/deliveries?state=waiting`, key),
      (answer) => deliveriesOf(answer).length === 1,
    );
    await call('POST', `/api/webhooks/${allId}/test`, key);
    await until(
      () => at('/all'),
      (calls) => calls.length >= 2,
    );
    const onlyTasks = await call('GET', `/api/webhooks/${allId}/deliveries?eventType=task.completed`, key);
    const firstPage = await call('GET', `/api/webhooks/${allId}/deliveries?limit=1`, key);
    const secondPage = await call(
      'GET',
      `/api/webhooks/${allId}/deliveries?limit=1&cursor=${String(firstPage.body.next)}`,
      key,
    );
    const deliveryId = deliveriesOf(waiting)[0]?.id ?? '';
    const redelivered = await call('POST', `/api/webhooks/${allId}/deliveries/${deliveryId}/redeliver`, session);
    const afterRedelivery = await until(
      () => call('GET', `/api/webhooks/${allId}/deliveries?eventType=task.completed`, key),
      (answer) => deliveriesOf(answer)[0]?.state === 'delivered',
    );
    const again = await call('POST', `/api/webhooks/${allId}/deliveries/${deliveryId}/redeliver`, key);
    const afterAgain = await until(
      () => call('GET', `/api/webhooks/${allId}/deliveries?eventType=task.completed`, key),
      (answer) => deliveriesOf(answer)[0]?.attempts.length === 3 && deliveriesOf(answer)[0]?.state === 'delivered',
    );
    const badFilter = await call('GET', `/api/webhooks/${allId}/deliveries?state=lost`, key);
    const failedLog = await call('GET', `/api/webhooks/${String(failedOnly.body.id)}/deliveries`, key);

    // Assert
    const taskCalls = at('/all').filter(
      (request) => verified(request, String(all.body.secret))?.type === 'task.completed',
    );
    expect(taskCalls).toHaveLength(3);
    expect(new Set(taskCalls.map((request) => request.headers['webhook-id'])).size).toBe(1);
    expect(verified(taskCalls[0] as Received, String(all.body.secret))?.data).toMatchObject({ taskId, status: 1 });
    expect(deliveriesOf(waiting)[0]).toMatchObject({ eventType: 'task.completed', state: 'waiting' });
    expect(deliveriesOf(waiting)[0]?.attempts[0]).toMatchObject({ attempt: 1, statusCode: 500 });
    expect(deliveriesOf(onlyTasks).map((delivery) => delivery.eventType)).toEqual(['task.completed']);
    expect(deliveriesOf(firstPage).map((delivery) => delivery.eventType)).toEqual(['webhook.test']);
    expect(deliveriesOf(secondPage).map((delivery) => delivery.eventType)).toEqual(['task.completed']);
    expect(redelivered.status).toBe(202);
    expect(again.status).toBe(202);
    expect(deliveriesOf(afterRedelivery)[0]?.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 200]);
    expect(deliveriesOf(afterAgain)[0]?.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 200, 200]);
    expect(deliveriesOf(afterAgain)[0]?.eventId).toBe(taskCalls[0]?.headers['webhook-id']);
    expect(badFilter.status).toBe(400);
    // The endpoint for task.failed only got nothing of a completed task.
    expect(deliveriesOf(failedLog)).toEqual([]);
    expect(at('/failed')).toEqual([]);
  });

  it('shows another account none of it: 404 on every route of an endpoint it does not own', async () => {
    // Prepare
    const owner = await sessionHeaders('wh-owner');
    const created = await call('POST', '/api/webhooks', owner, { url: `${origin}/owned` });
    const id = String(created.body.id);
    await call('POST', `/api/webhooks/${id}/test`, owner);
    const log = await until(
      () => call('GET', `/api/webhooks/${id}/deliveries`, owner),
      (answer) => deliveriesOf(answer)[0]?.state === 'delivered',
    );
    const deliveryId = deliveriesOf(log)[0]?.id ?? '';
    const stranger = await sessionHeaders('wh-stranger');
    const strangerKey = await keyHeaders('wh-stranger');

    // Act
    const answers = await Promise.all([
      call('GET', `/api/webhooks/${id}`, strangerKey),
      call('PATCH', `/api/webhooks/${id}`, stranger, { enabled: false }),
      call('DELETE', `/api/webhooks/${id}`, stranger),
      call('POST', `/api/webhooks/${id}/rotate-secret`, stranger, {}),
      call('POST', `/api/webhooks/${id}/test`, strangerKey),
      call('GET', `/api/webhooks/${id}/deliveries`, strangerKey),
      call('POST', `/api/webhooks/${id}/deliveries/${deliveryId}/redeliver`, strangerKey),
      call('GET', '/api/webhooks/not-an-id', strangerKey),
    ]);
    const theirs = await call('GET', '/api/webhooks', strangerKey);
    const ownerClient = new GenerationClient({
      baseUrl,
      apiKey: (await keyHeaders('wh-owner')).Authorization?.slice(7) ?? '',
    });
    const strangerClient = new GenerationClient({
      baseUrl,
      apiKey: strangerKey.Authorization?.slice(7) ?? '',
      retries: 0,
    });
    const ownerEndpoints = await ownerClient.listWebhookEndpoints();
    const ownerLog = await ownerClient.webhookDeliveries(id, { state: 'delivered' });
    const strangerRead = await strangerClient
      .getWebhookEndpoint(id)
      .catch((error: { status?: number }) => error.status);
    const still = await call('GET', `/api/webhooks/${id}`, owner);

    // Assert
    expect(answers.map((answer) => answer.status)).toEqual([404, 404, 404, 404, 404, 404, 404, 404]);
    expect(answers[0]?.body).toEqual({ error: 'Webhook endpoint not found' });
    expect(theirs.body).toEqual({ endpoints: [] });
    expect(still.body).toMatchObject({ id, enabled: true });
    expect(ownerEndpoints.map((endpoint) => endpoint.id)).toEqual([id]);
    expect(ownerLog.deliveries.map((delivery) => delivery.id)).toEqual([deliveryId]);
    expect(strangerRead).toBe(404);
  });
});
