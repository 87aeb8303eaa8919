/**
 * The event feed and the deliveries past the bound on open deliveries, on the local parts: DynamoDB
 * Local behind the conflict layer, the webhook worker on the table's stream (local/stream-poller.ts with
 * the deployed filters), the sweeper's claims and promotions, a real HTTP receiver that verifies every
 * Standard Webhooks signature, and GET /api/events behind the local gateway with the real authorizer.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { handler as authorizer } from '../../functions/authorizer/handler';
import { ServiceBusyError } from '../../functions/core/errors';
import {
  environmentOf,
  PUBLIC_ORIGIN,
  setting,
  WEBHOOK_INSECURE_ORIGINS,
  WEBHOOK_MAX_OPEN_DELIVERIES,
  WEBHOOK_RETRY_DELAYS_SECONDS,
  WEBHOOK_SECRETS_KEY,
} from '../../functions/environment/environment';
import { recordTaskEvents } from '../../functions/lifecycle/event-feed';
import { rotateWebhookSecret, setAccountWebhookUrl } from '../../functions/lifecycle/webhook-settings';
import { claimDueDeliveries } from '../../functions/lifecycle/webhooks';
import { handler as listEvents } from '../../functions/list-events/handler';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { failAndRefund } from '../../functions/money/refund';
import { logger } from '../../functions/observability/logger';
import { resetWebhookLifecycleFromEnv } from '../../functions/runtime/webhook-lifecycle-from-env';
import { decodeEventCursor, type FeedEvent, listFeedEvents } from '../../functions/store/event-feed';
import { createSession } from '../../functions/store/sessions';
import { completeTask, getTask } from '../../functions/store/tasks';
import { countDeliveries } from '../../functions/store/webhook-queue';
import { handler as webhookWorker } from '../../functions/webhook-worker/handler';
import { createSecretBox } from '../../functions/webhooks/secret-box';
import { webhookTargetPolicy } from '../../functions/webhooks/target-policy';
import { ROUTES, WEBHOOK_WORKER_FILTERS } from '../../lib/routes';
import { createGateway, type ProxyHandler } from '../../local/gateway';
import { type StreamPoller, startStreamPoller } from '../../local/stream-poller';
import { testEndpoint } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { type ServiceHarness, startServiceHarness } from '../support/service-harness';

/** How long one awaited state may take to come about on a loaded machine (the worker and sweeper run on their own). */
const STATE_DEADLINE_MS = 240_000;

// A test waits for several states in turn, each within its deadline.
jest.setTimeout(4 * STATE_DEADLINE_MS);

const SERVICE_KEY = 'event-feed-service-key-0123456789abcdef';
/** The bound on open deliveries in this file: small, so a few tasks pass it. */
const MAX_OPEN = 3;

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

describe('the event feed, and deliveries that wait past the bound', () => {
  let h: ServiceHarness;
  let gateway: Server;
  let receiver: Server;
  let worker: StreamPoller;
  let baseUrl = '';
  let origin = '';
  /** The receiver answers 503 while down. */
  let receiverDown = false;
  const received: Received[] = [];
  let sweeping = true;
  let sweeper: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const status = receiverDown ? 503 : 200;
        received.push({ headers: request.headers, body: Buffer.concat(chunks).toString(), status });
        response.writeHead(status).end();
      });
    });
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', () => ready()));
    origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    h = await startServiceHarness({ mediaWorker: false, dispatcher: false, conflicts: { holdMs: 5 } });
    gateway = createServer(
      createGateway({
        routes: ROUTES.filter((route) => route.name === 'list-events').map((route) => ({
          route,
          handler: listEvents as unknown as ProxyHandler,
        })),
        authorizer,
        authorizerCacheTtlSeconds: 0,
      }),
    );
    await new Promise<void>((ready) => gateway.listen(0, '127.0.0.1', () => ready()));
    baseUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    Object.assign(
      process.env,
      environmentOf(
        setting(PUBLIC_ORIGIN, baseUrl),
        setting(WEBHOOK_SECRETS_KEY, SERVICE_KEY),
        setting(WEBHOOK_INSECURE_ORIGINS, origin),
        setting(WEBHOOK_MAX_OPEN_DELIVERIES, MAX_OPEN),
        // Retries soon after each other, and the setting's 20 of them outlast the receiver's downtime
        // (about 5 minutes) however long a loaded machine takes to open every delivery: a schedule spent
        // would end a delivery `failed`, and the endpoint's return is waited on within a retry's delay.
        setting(WEBHOOK_RETRY_DELAYS_SECONDS, '1,1,1,1,1,2,2,3,5,8,10,15,20,30,30,30,30,30,30,30'),
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
    // The sweeper's webhook part, every second: claims due retries, promotes what a lost wake-up left.
    sweeper = (async () => {
      while (sweeping) {
        await claimDueDeliveries(h.store, new Date(), logger).catch(() => 0);
        await new Promise((next) => setTimeout(next, 1000));
      }
    })();
  });

  afterAll(async () => {
    sweeping = false;
    await sweeper;
    await worker?.stop();
    for (const variable of [
      PUBLIC_ORIGIN,
      WEBHOOK_SECRETS_KEY,
      WEBHOOK_INSECURE_ORIGINS,
      WEBHOOK_MAX_OPEN_DELIVERIES,
      WEBHOOK_RETRY_DELAYS_SECONDS,
    ]) {
      delete process.env[variable.name];
    }
    resetWebhookLifecycleFromEnv();
    await new Promise<void>((closed) => {
      gateway.close(() => closed());
      gateway.closeAllConnections();
    });
    await new Promise<void>((closed) => receiver.close(() => closed()));
    await h.dispose();
  });

  /**
   * Polls `read` until `check` holds, and fails naming `what` and the last value read when it has not
   * within `STATE_DEADLINE_MS`.
   */
  async function until<T>(what: string, read: () => T | Promise<T>, check: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + STATE_DEADLINE_MS;
    for (;;) {
      const value = await read();
      if (check(value)) return value;
      if (Date.now() > deadline) {
        const seen = Array.isArray(value) ? `${value.length} item(s)` : JSON.stringify(value);
        throw new Error(`${what}: not reached within ${STATE_DEADLINE_MS} ms (last seen: ${seen})`);
      }
      await new Promise((next) => setTimeout(next, 100));
    }
  }

  /** Runs a store write again while it answers busy (503), as a client told `Retry-After` does. */
  async function unlessBusy<T>(write: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await write();
      } catch (error) {
        if (!(error instanceof ServiceBusyError)) throw error;
        await new Promise((next) => setTimeout(next, 50 + Math.random() * 200));
      }
    }
  }

  /** Accepts `count` tasks of `userId` (ids `<prefix>-<n>`), ready to end. */
  async function pendingTasks(userId: string, prefix: string, count: number): Promise<string[]> {
    await grantCredits(h.store, { userId, amount: count * 3 });
    const taskIds = Array.from({ length: count }, (_, n) => `${prefix}-${String(n).padStart(4, '0')}`);
    for (const taskId of taskIds) {
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
    }
    return taskIds;
  }

  /** Ends the tasks all at once: every third fails (refunded), the others complete. */
  async function endAtOnce(userId: string, taskIds: string[]): Promise<void> {
    await Promise.all(
      taskIds.map((taskId, n) =>
        unlessBusy<unknown>(() =>
          n % 3 === 2
            ? failAndRefund(h.store, {
                userId,
                taskId,
                errorCode: 'PROVIDER_ERROR',
                errorMessage: 'The provider failed the task',
                now: new Date(),
              })
            : completeTask(h.store, { userId, taskId, resultKeys: [`results/${taskId}.png`], now: new Date() }),
        ),
      ),
    );
  }

  /** The whole feed of `userId`, read page by page from its start. */
  async function wholeFeed(userId: string, limit = 100): Promise<FeedEvent[]> {
    const events: FeedEvent[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await listFeedEvents(h.store, userId, {
        limit,
        ...(after === undefined ? {} : { afterSortKey: decodeEventCursor(after) ?? '' }),
      });
      events.push(...page.events);
      if (!page.hasMore) return events;
      after = page.next;
    }
  }

  async function call(path: string, headers: Record<string, string>) {
    const answer = await fetch(`${baseUrl}${path}`, { headers });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  }

  it('the endpoint down while tasks end, then back: every event delivered once, signed, in feed order within the bound', async () => {
    // Prepare: an account with a secret and a default endpoint, which is down
    const userId = 'feed-down';
    const count = atScale(12, 120);
    const box = createSecretBox(async () => SERVICE_KEY);
    const { secret } = await rotateWebhookSecret(h.store, box, { userId, now: new Date() });
    await setAccountWebhookUrl(h.store, webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin }), {
      userId,
      url: `${origin}/down`,
      now: new Date(),
    });
    const taskIds = await pendingTasks(userId, 'down', count);
    receiverDown = true;

    // Act: the tasks end while the endpoint is down; it comes back once every event waits
    await endAtOnce(userId, taskIds);
    const feedWhileDown = await until(
      'every ending in the feed',
      () => wholeFeed(userId),
      (events) => events.length >= count,
    );
    const countsWhileDown = await until(
      'every delivery open or queued',
      () => countDeliveries(h.store, userId),
      (counts) => counts.open + counts.queued === count,
    );
    await until(
      'the open deliveries tried against the endpoint while down',
      () => received.filter((answer) => answer.status === 503).length,
      (failed) => failed >= MAX_OPEN,
    );
    receiverDown = false;
    const delivered = await until(
      'every event delivered once the endpoint is back',
      () => received.filter((answer) => answer.status === 200),
      (answers) => answers.length >= count,
    );
    const countsAfter = await until(
      'no delivery left open or queued',
      () => countDeliveries(h.store, userId),
      (counts) => counts.open === 0 && counts.queued === 0,
    );

    // Assert: nothing dropped, nothing twice, each verified, each the feed's event
    expect(countsWhileDown).toEqual({ open: MAX_OPEN, queued: count - MAX_OPEN, maxOpen: MAX_OPEN });
    expect(feedWhileDown).toHaveLength(count);
    expect(delivered).toHaveLength(count);
    const webhook = new Webhook(secret);
    const ids = delivered.map((answer) => String(answer.headers['webhook-id']));
    for (const answer of delivered) {
      expect(() =>
        webhook.verify(answer.body, {
          'webhook-id': String(answer.headers['webhook-id']),
          'webhook-timestamp': String(answer.headers['webhook-timestamp']),
          'webhook-signature': String(answer.headers['webhook-signature']),
        }),
      ).not.toThrow();
    }
    expect(new Set(ids).size).toBe(count);
    expect([...ids].sort()).toEqual(feedWhileDown.map((event) => event.id).sort());
    // The ones that waited went out in the feed's order (none overtook more than the bound's worth):
    // the first MAX_OPEN seen are the ones open while the endpoint was down.
    const queuedSeen = [...new Set(received.map((answer) => String(answer.headers['webhook-id'])))].slice(MAX_OPEN);
    const queuedInFeedOrder = feedWhileDown.map((event) => event.id).filter((id) => queuedSeen.includes(id));
    expect(queuedSeen).toHaveLength(count - MAX_OPEN);
    queuedSeen.forEach((id, position) => {
      expect(Math.abs(queuedInFeedOrder.indexOf(id) - position)).toBeLessThanOrEqual(MAX_OPEN);
    });
    expect(countsAfter).toMatchObject({ open: 0, queued: 0 });
    expect(received.filter((answer) => answer.status === 200)).toHaveLength(count);
  });

  it('the feed under concurrent endings and a redelivered batch: every event once, numbered in order, never behind a reader', async () => {
    // Prepare: an account without any endpoint (the feed needs none)
    const userId = 'feed-race';
    const count = atScale(40, 400);
    const taskIds = await pendingTasks(userId, 'race', count);
    const tailSeen: FeedEvent[] = [];
    let tailing = true;
    // A reader following the feed while it is written, from its own last cursor each time.
    const tail = (async () => {
      let after: string | undefined;
      while (tailing || tailSeen.length < count) {
        const page = await listFeedEvents(h.store, userId, {
          limit: 7,
          ...(after === undefined ? {} : { afterSortKey: decodeEventCursor(after) ?? '' }),
        });
        tailSeen.push(...page.events);
        after = page.next ?? after;
        if (page.events.length === 0) await new Promise((next) => setTimeout(next, 50));
      }
    })();

    // Act: all end at once (the worker records them off the stream), and the same endings are recorded
    // again beside it, as a batch redelivered by the stream would be
    await endAtOnce(userId, taskIds);
    const ended = await Promise.all(taskIds.map((taskId) => getTask(h.store, userId, taskId)));
    await recordTaskEvents(
      h.store,
      ended.filter((task) => task !== undefined),
      new Date(),
    );
    const feed = await until(
      'every ending in the feed',
      () => wholeFeed(userId, 100),
      (events) => events.length >= count,
    );
    tailing = false;
    await tail;

    // Assert
    const taskOf = (event: FeedEvent) => String(event.data.taskId);
    expect(feed).toHaveLength(count);
    expect(new Set(feed.map(taskOf))).toEqual(new Set(taskIds));
    expect(new Set(feed.map((event) => event.id)).size).toBe(count);
    expect(tailSeen.map((event) => event.id)).toEqual(feed.map((event) => event.id));
    for (const event of feed) {
      expect(event.type).toBe(Number(event.data.status) === 1 ? 'task.completed' : 'task.failed');
      expect(event.id).toMatch(/^msg_[0-9a-f]{32}$/);
    }
    // An account without an endpoint gets no delivery, only its feed.
    expect(await countDeliveries(h.store, userId)).toEqual({ open: 0, queued: 0 });
  });

  it('GET /api/events pages by cursor, filters by type, shows another account nothing, and refuses a bad cursor', async () => {
    // Prepare: five ended tasks (two failed), a key and a session of the owner, a key of another account
    const userId = 'feed-http';
    const taskIds = await pendingTasks(userId, 'http', 5);
    await endAtOnce(userId, taskIds);
    await until(
      'the five endings in the feed',
      () => wholeFeed(userId),
      (events) => events.length >= 5,
    );
    const { apiKey } = await putApiKey(h.store, { userId, name: 'feed reader' });
    const { apiKey: otherKey } = await putApiKey(h.store, { userId: 'feed-http-other', name: 'other' });
    const { sessionId } = await createSession(h.store, {
      userId,
      email: `${userId}@example.test`,
      idleSeconds: 3600,
      absoluteSeconds: 7200,
    });
    const key = { Authorization: `Bearer ${apiKey}` };

    // Act
    const first = await call('/api/events?limit=2', key);
    const second = await call(`/api/events?limit=2&after=${String(first.body.next)}`, key);
    const third = await call(`/api/events?limit=2&after=${String(second.body.next)}`, key);
    const caughtUp = await call(`/api/events?after=${String(third.body.next)}`, key);
    const failedOnly = await call('/api/events?types=task.failed', key);
    const bySession = await call('/api/events', { Cookie: `__Host-session=${sessionId}` });
    const other = await call('/api/events', { Authorization: `Bearer ${otherKey}` });
    const otherWithCursor = await call(`/api/events?after=${String(first.body.next)}`, {
      Authorization: `Bearer ${otherKey}`,
    });
    const badCursor = await call('/api/events?after=not-a-cursor', key);
    const badTypes = await call('/api/events?types=task.completed,task.exploded', key);
    const badLimit = await call('/api/events?limit=0', key);

    // Assert
    const events = (answer: { body: Record<string, unknown> }) => answer.body.events as FeedEvent[];
    const paged = [...events(first), ...events(second), ...events(third)];
    expect([first.status, second.status, third.status, caughtUp.status]).toEqual([200, 200, 200, 200]);
    expect(paged.map((event) => event.data.taskId).sort()).toEqual(taskIds);
    expect(first.body.hasMore).toBe(true);
    expect(caughtUp.body).toEqual({ events: [], next: third.body.next, hasMore: false });
    expect(events(failedOnly).map((event) => event.type)).toEqual(['task.failed']);
    expect(events(bySession).map((event) => event.id)).toEqual(paged.map((event) => event.id));
    expect(other).toEqual({ status: 200, body: { events: [], next: null, hasMore: false } });
    expect(otherWithCursor.status).toBe(200);
    expect(events(otherWithCursor)).toEqual([]);
    expect(badCursor.status).toBe(400);
    expect(badCursor.body).toMatchObject({
      error: 'Invalid request',
      details: { fieldErrors: { after: ['Not a cursor this feed returned'] } },
    });
    expect(badTypes.status).toBe(400);
    expect(badTypes.body.error).toEqual(expect.any(String));
    expect(badLimit.status).toBe(400);
  });
});
