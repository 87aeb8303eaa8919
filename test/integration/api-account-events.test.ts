/**
 * Account events end to end on the local parts: the real handlers behind the local gateway with the real
 * authorizer over HTTP (a key with a spend limit, a session for the alert settings), DynamoDB Local, the
 * dispatcher's loop (which notices the crossings beside its sends), the webhook worker on the table's
 * stream (local/stream-poller.ts with the deployed filters), and a real HTTP receiver that verifies every
 * Standard Webhooks signature with the secret the account was given. Also `GET`/`PUT /api/account/alerts`:
 * session only, CSRF on the write, 400 on a bad threshold.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { handler as alertsGet } from '../../functions/account-alerts-get/handler';
import { handler as alertsUpdate } from '../../functions/account-alerts-update/handler';
import { handler as authorizer } from '../../functions/authorizer/handler';
import { csrfTokenFor } from '../../functions/core/session';
import {
  environmentOf,
  PUBLIC_ORIGIN,
  setting,
  WEBHOOK_INSECURE_ORIGINS,
  WEBHOOK_SECRETS_KEY,
} from '../../functions/environment/environment';
import { rotateWebhookSecret, setAccountWebhookUrl } from '../../functions/lifecycle/webhook-settings';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { resetWebhookLifecycleFromEnv } from '../../functions/runtime/webhook-lifecycle-from-env';
import { createSession } from '../../functions/store/sessions';
import { listAccountEventDeliveries } from '../../functions/store/webhooks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as webhookWorker } from '../../functions/webhook-worker/handler';
import { createSecretBox } from '../../functions/webhooks/secret-box';
import { webhookTargetPolicy } from '../../functions/webhooks/target-policy';
import { ROUTES, WEBHOOK_WORKER_FILTERS } from '../../lib/routes';
import { createGateway, type ProxyHandler } from '../../local/gateway';
import { type StreamPoller, startStreamPoller } from '../../local/stream-poller';
import { testEndpoint } from '../support/dynamodb';
import { IMAGE_COST, imageRequest, type ServiceHarness, startServiceHarness } from '../support/service-harness';

jest.setTimeout(120_000);

const SERVICE_KEY = 'api-account-events-service-key-0123456789';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('account events over HTTP, through the dispatcher and the webhook worker', () => {
  let h: ServiceHarness;
  let gateway: Server;
  let receiver: Server;
  let worker: StreamPoller;
  let baseUrl = '';
  let origin = '';
  const received: Received[] = [];

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString() });
        response.writeHead(200).end();
      });
    });
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', () => ready()));
    origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    h = await startServiceHarness({ maxPendingSeconds: 86_400, mediaWorker: false });
    const handlers: Record<string, ProxyHandler> = {
      'submit-image': submitImage as unknown as ProxyHandler,
      'account-alerts-get': alertsGet as unknown as ProxyHandler,
      'account-alerts-update': alertsUpdate as unknown as ProxyHandler,
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
    // Session writes are checked against the service's own origin (CSRF), here the gateway's; the webhook
    // worker seals with the local key and may call the receiver over plain http.
    Object.assign(
      process.env,
      environmentOf(
        setting(PUBLIC_ORIGIN, baseUrl),
        setting(WEBHOOK_SECRETS_KEY, SERVICE_KEY),
        setting(WEBHOOK_INSECURE_ORIGINS, origin),
      ),
    );
    resetWebhookLifecycleFromEnv();
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
    for (const name of [PUBLIC_ORIGIN.name, WEBHOOK_SECRETS_KEY.name, WEBHOOK_INSECURE_ORIGINS.name]) {
      delete process.env[name];
    }
    resetWebhookLifecycleFromEnv();
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

  async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
    const answer = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  }

  /** Polls `check` until it holds (the dispatcher and the worker run on their own), at most 60 s. */
  async function until<T>(read: () => T | Promise<T>, check: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const value = await read();
      if (check(value) || Date.now() > deadline) return value;
      await new Promise((next) => setTimeout(next, 50));
    }
  }

  it('PUT /api/account/alerts is session only with CSRF, checks the threshold, and GET shows it', async () => {
    // Prepare
    const userId = 'alerts-http';
    await grantCredits(h.store, { userId, amount: 10 });
    const session = await sessionHeaders(userId);
    const { apiKey } = await putApiKey(h.store, { userId, name: 'not for settings' });

    // Act
    const before = await call('GET', '/api/account/alerts', session);
    const withoutCsrf = await call(
      'PUT',
      '/api/account/alerts',
      { ...session, 'X-CSRF-Token': 'nope' },
      { lowBalanceThreshold: 5 },
    );
    const withKey = await call(
      'PUT',
      '/api/account/alerts',
      { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      { lowBalanceThreshold: 5 },
    );
    const fraction = await call('PUT', '/api/account/alerts', session, { lowBalanceThreshold: 2.5 });
    const unknown = await call('PUT', '/api/account/alerts', session, { lowBalanceThreshold: 5, other: 1 });
    const set = await call('PUT', '/api/account/alerts', session, { lowBalanceThreshold: 5 });
    const after = await call('GET', '/api/account/alerts', session);
    const cleared = await call('PUT', '/api/account/alerts', session, { lowBalanceThreshold: null });

    // Assert
    expect(before).toEqual({ status: 200, body: { lowBalanceThreshold: null, lowBalanceSent: false } });
    expect(withoutCsrf.status).toBe(403);
    expect(withKey.status).toBe(403);
    expect(fraction.status).toBe(400);
    expect(fraction.body).toEqual({
      error: 'Invalid request',
      details: {
        fieldErrors: {
          lowBalanceThreshold: ['Threshold must be a whole number of credits from 0 to 1000000000, or null'],
        },
        formErrors: [],
      },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details).toEqual({ fieldErrors: { other: ['Unknown field "other"'] }, formErrors: [] });
    expect(set).toEqual({ status: 200, body: { lowBalanceThreshold: 5, lowBalanceSent: false } });
    expect(after.body).toEqual({ lowBalanceThreshold: 5, lowBalanceSent: false });
    expect(cleared.body).toEqual({ lowBalanceThreshold: null, lowBalanceSent: false });
  });

  it('parallel submits crossing a key limit and the low-balance threshold send one signed event per threshold', async () => {
    // Prepare: 10 tasks' worth of credits, a key of 5 tasks a day, credits.low below 6 tasks' worth.
    const userId = 'events-http';
    await grantCredits(h.store, { userId, amount: 10 * IMAGE_COST });
    const box = createSecretBox(async () => SERVICE_KEY);
    const { secret } = await rotateWebhookSecret(h.store, box, { userId, now: new Date() });
    await setAccountWebhookUrl(h.store, webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin }), {
      userId,
      url: `${origin}/events`,
      now: new Date(),
    });
    const session = await sessionHeaders(userId);
    const threshold = await call('PUT', '/api/account/alerts', session, { lowBalanceThreshold: 6 * IMAGE_COST });
    const { apiKey, keyId } = await putApiKey(h.store, {
      userId,
      name: 'budgeted',
      spendLimit: { credits: 5 * IMAGE_COST, period: 'day' },
    });
    const submit = () =>
      call(
        'POST',
        '/api/ai/image/generate',
        { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
        // At the provider for the whole test: no task ends, so no task event reaches the endpoint.
        imageRequest({ mockDelayMs: 600_000 }),
      );

    // Act: 7 submits at once: 5 accepted (the limit), 2 refused (402).
    const answers = await Promise.all(Array.from({ length: 7 }, submit));
    const events = await until(
      () => received.filter((call) => call.path === '/events'),
      (calls) => calls.length >= 3,
    );
    const deliveries = await until(
      () => listAccountEventDeliveries(h.store, userId),
      (all) => all.length >= 3 && all.every((delivery) => delivery.deliveryState === 'delivered'),
    );
    const alerts = await call('GET', '/api/account/alerts', session);

    // Assert
    expect(threshold.status).toBe(200);
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 202, 202, 202, 202, 402, 402]);
    const webhook = new Webhook(secret);
    const verified = events.map(
      (call) =>
        webhook.verify(call.body, {
          'webhook-id': String(call.headers['webhook-id']),
          'webhook-timestamp': String(call.headers['webhook-timestamp']),
          'webhook-signature': String(call.headers['webhook-signature']),
        }) as { type: string; data: Record<string, unknown> },
    );
    expect(verified.map((event) => event.type).sort()).toEqual([
      'credits.low',
      'key.spend_limit.reached',
      'key.spend_limit.warning',
    ]);
    const byType = Object.fromEntries(verified.map((event) => [event.type, event.data]));
    expect(byType['key.spend_limit.reached']).toMatchObject({ keyId, limit: 15, period: 'day', spent: 15 });
    expect(byType['key.spend_limit.warning']).toMatchObject({ keyId, limit: 15, period: 'day' });
    expect(byType['credits.low']).toEqual({ balance: 15, threshold: 18 });
    expect(deliveries).toHaveLength(3);
    expect(alerts.body).toEqual({ lowBalanceThreshold: 18, lowBalanceSent: true });
  });
});
