/**
 * Account events on real parts: DynamoDB Local behind the conflict layer, accepts as the submit
 * functions make them, the dispatcher's run (lifecycle/dispatch.ts with the dispatcher entry's
 * `onClaimed`: `noticeSpending`) claiming and sending them to a stand-in provider, the webhook worker's
 * attempt (`attemptDelivery`), and a real HTTP receiver that verifies every Standard Webhooks signature.
 * A key's budget crossing 80% then 100% sends one warning and one reached event, also when the crossing
 * accepts and the dispatchers' looks run in parallel, and again in the next period; `credits.low` once
 * per crossing, re-armed by a top-up.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { newAccountEventId } from '../../functions/core/account-events';
import { DEFAULT_LIFECYCLE_CONFIG } from '../../functions/core/lifecycle';
import { noticeSpending, rearmAfterCredit } from '../../functions/lifecycle/account-events';
import { dispatchQueued } from '../../functions/lifecycle/dispatch-run';
import { rotateWebhookSecret, setAccountWebhookUrl } from '../../functions/lifecycle/webhook-settings';
import { attemptDelivery, type WebhookLifecycle } from '../../functions/lifecycle/webhooks';
import { createFsMediaStore } from '../../functions/media/fs-media-store';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { failAndRefund } from '../../functions/money/refund';
import { logger } from '../../functions/observability/logger';
import type { GenerationProvider } from '../../functions/provider/port';
import { getAccountAlerts, rearmLowBalance, setLowBalanceThreshold } from '../../functions/store/account-events';
import { getBalance } from '../../functions/store/accounts';
import { getApiKeyById } from '../../functions/store/api-keys';
import { webhookKeys } from '../../functions/store/keys';
import { getTask, type NewTask } from '../../functions/store/tasks';
import { createEventDelivery } from '../../functions/store/webhook-delivery-opening';
import { listAccountEventDeliveries } from '../../functions/store/webhooks';
import { createSecretBox } from '../../functions/webhooks/secret-box';
import { webhookTargetPolicy } from '../../functions/webhooks/target-policy';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newTask, newUserId, retriedWhileBusy } from '../support/store-fixtures';

jest.setTimeout(120_000);

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const PROVIDER: GenerationProvider = {
  createTask: async () => ({ providerTaskId: `p-${Math.random().toString(36).slice(2)}` }),
  getTask: () => Promise.reject(new Error('not read here')),
};

describe('account events (key spend limits, low balance)', () => {
  let store: TestStore;
  let receiver: Server;
  let origin: string;
  const received: Received[] = [];
  const secrets = new Map<string, string>();
  let clock = new Date('2026-11-01T10:00:00.000Z');
  const box = createSecretBox(async () => 'integration-test-service-key-0123456789');

  /** The lifecycle on the test's clock; the worker's attempts sign at the real time (`now`). */
  function lifecycle(now: () => Date = () => clock): WebhookLifecycle {
    return {
      store,
      provider: PROVIDER,
      config: DEFAULT_LIFECYCLE_CONFIG,
      now,
      media: createFsMediaStore({ dir: '/tmp/account-events-media', publicBaseUrl: 'http://127.0.0.1:9' }),
      webhooks: { box, policy: webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin }), retryDelays: [60] },
    };
  }

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 5 } });
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({
          path: request.url ?? '',
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', () => ready()));
    const address = receiver.address();
    origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });

  afterAll(async () => {
    await new Promise<void>((closed) => receiver.close(() => closed()));
    await store.dispose();
  });

  /** An account with `balance` credits, a signing secret and a default endpoint `/<userId>`. */
  async function account(balance: number): Promise<string> {
    const userId = newUserId();
    await grantCredits(store, { userId, amount: balance, now: clock });
    const { secret } = await rotateWebhookSecret(store, box, { userId, now: clock });
    secrets.set(userId, secret);
    await setAccountWebhookUrl(store, webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin }), {
      userId,
      url: `${origin}/${userId}`,
      now: clock,
    });
    return userId;
  }

  /** A key of `userId` with a limit, as the authorizer hands it to the accept. */
  async function limitedKey(userId: string, credits: number, period: 'day' | 'month' | 'total') {
    const issued = await putApiKey(store, { userId, name: 'limited', spendLimit: { credits, period }, now: clock });
    const record = await getApiKeyById(store, issued.keyId);
    if (!record?.spendLimit) throw new Error('the key has no limit');
    return { keyId: issued.keyId, spendLimit: record.spendLimit, spendLimitVersion: record.spendLimitVersion };
  }

  /**
   * Accepts `count` tasks of `cost` side by side (as parallel submits do), the busy ones retried, each
   * with the provider request the submit functions store (the dispatcher sends it).
   */
  function acceptAll(userId: string, count: number, cost: number, key: Partial<NewTask> = {}) {
    const request = { providerRequest: { model: 'provider-image-model', input: { prompt: 'a lighthouse' } } };
    return Promise.all(
      Array.from({ length: count }, () =>
        retriedWhileBusy(() => acceptTask(store, { task: newTask(userId, cost, { ...key, request, now: clock }) })),
      ),
    );
  }

  /** The dispatcher's run as its entry wires it: every queued task claimed, sent, and looked at. */
  function dispatch() {
    return dispatchQueued(lifecycle(), {}, logger, {
      onClaimed: (task) => noticeSpending({ store, now: () => clock }, task, logger),
    });
  }

  /**
   * The webhook worker's part: one attempt of every account event delivery still `sending`, signed at
   * the real time (receivers refuse a timestamp more than 5 minutes off theirs).
   */
  async function deliver(userId: string) {
    const lc = lifecycle(() => new Date());
    for (const delivery of await listAccountEventDeliveries(store, userId)) {
      if (delivery.deliveryState !== 'sending' || !delivery.eventId || !delivery.claimId) continue;
      await attemptDelivery(lc, { userId, taskId: delivery.eventId, claimId: delivery.claimId }, logger);
    }
  }

  /** What `userId`'s endpoint received, each signature verified with the account's secret. */
  function eventsOf(userId: string): { type: string; data: Record<string, unknown>; id: string }[] {
    const webhook = new Webhook(secrets.get(userId) ?? '');
    return received
      .filter((call) => call.path === `/${userId}`)
      .map((call) => {
        const headers = {
          'webhook-id': String(call.headers['webhook-id']),
          'webhook-timestamp': String(call.headers['webhook-timestamp']),
          'webhook-signature': String(call.headers['webhook-signature']),
        };
        // Throws unless the signature is the account secret's (and the timestamp recent).
        const event = webhook.verify(call.body, headers) as { type: string; data: Record<string, unknown> };
        return { type: event.type, data: event.data, id: headers['webhook-id'] };
      });
  }

  it('a key crossing 80% then 100% of its daily limit sends one warning, then one reached event', async () => {
    // Prepare: a daily budget of 10 credits, tasks of 2.
    const userId = await account(1000);
    const key = await limitedKey(userId, 10, 'day');

    // Act: 70%, then the warning's crossing (80%), then 100%, each dispatched and delivered.
    await acceptAll(userId, 3, 2, key);
    await dispatch();
    await deliver(userId);
    const below = eventsOf(userId);
    await acceptAll(userId, 1, 2, key);
    await dispatch();
    await deliver(userId);
    const warned = eventsOf(userId);
    await acceptAll(userId, 1, 2, key);
    await dispatch();
    await deliver(userId);

    // Assert
    const events = eventsOf(userId);
    expect(below).toEqual([]);
    expect(warned.map((event) => event.type)).toEqual(['key.spend_limit.warning']);
    expect(events.map((event) => event.type)).toEqual(['key.spend_limit.warning', 'key.spend_limit.reached']);
    expect(events[0]?.data).toEqual({
      keyId: key.keyId,
      limit: 10,
      period: 'day',
      spent: 8,
      resetsAt: '2026-11-02T00:00:00.000Z',
    });
    expect(events[1]?.data).toMatchObject({ keyId: key.keyId, limit: 10, spent: 10 });
    expect(new Set(events.map((event) => event.id)).size).toBe(2);
  });

  it('parallel accepts crossing both thresholds, looked at by many dispatchers at once, open one event each', async () => {
    // Prepare: 20 tasks of 1 on a budget of 20, all accepted side by side.
    const userId = await account(1000);
    const key = await limitedKey(userId, 20, 'day');
    const tasks = await acceptAll(userId, 20, 1, key);

    // Act: every task looked at by its own dispatcher, all at once (and a second run of the queue). A
    // look that meets only conflicts on the account's counter of open deliveries is busy; the next look
    // (here: the same one again) tries again.
    await Promise.all(
      tasks.map(({ task }) => retriedWhileBusy(() => noticeSpending({ store, now: () => clock }, task, logger))),
    );
    await dispatch();
    await deliver(userId);

    // Assert
    const events = eventsOf(userId);
    expect(events.map((event) => event.type).sort()).toEqual(['key.spend_limit.reached', 'key.spend_limit.warning']);
    expect(await listAccountEventDeliveries(store, userId)).toHaveLength(2);
  });

  it('the next period sends the events again', async () => {
    // Prepare: a budget reached today.
    const userId = await account(1000);
    const key = await limitedKey(userId, 4, 'day');
    await acceptAll(userId, 2, 2, key);
    await dispatch();
    await deliver(userId);
    // One task crosses both thresholds: the two deliveries are attempted side by side, in either order.
    const today = eventsOf(userId)
      .map((event) => event.type)
      .sort();

    // Act: the next day, the same spending.
    clock = new Date('2026-11-02T10:00:00.000Z');
    await acceptAll(userId, 2, 2, key);
    await dispatch();
    await deliver(userId);

    // Assert
    expect(today).toEqual(['key.spend_limit.reached', 'key.spend_limit.warning']);
    const tomorrow = eventsOf(userId).slice(2);
    expect(tomorrow.map((event) => event.type).sort()).toEqual(['key.spend_limit.reached', 'key.spend_limit.warning']);
    for (const event of tomorrow) {
      expect(event.data).toMatchObject({ spent: 4, limit: 4, resetsAt: '2026-11-03T00:00:00.000Z' });
    }
  });

  it('credits.low fires once below the threshold, not on further debits, and again after a top-up and a debit', async () => {
    // Prepare: 20 credits, a threshold of 10, tasks of 3 (no key limit).
    const userId = await account(20);
    await setLowBalanceThreshold(store, { userId, threshold: 10, now: clock });

    // Act: 20 -> 11 (above), -> 8 (below: the event), -> 5 (still below), top-up to 15, -> 12, -> 9.
    await acceptAll(userId, 3, 3);
    await dispatch();
    await deliver(userId);
    const above = eventsOf(userId);
    await acceptAll(userId, 1, 3);
    await dispatch();
    await acceptAll(userId, 1, 3);
    await dispatch();
    await deliver(userId);
    const once = eventsOf(userId);
    const { balance } = await grantCredits(store, { userId, amount: 10, now: clock });
    const rearmed = await rearmAfterCredit(store, userId, balance);
    await acceptAll(userId, 1, 3);
    await dispatch();
    await acceptAll(userId, 1, 3);
    await dispatch();
    await deliver(userId);

    // Assert
    expect(above).toEqual([]);
    expect(once.map((event) => event.type)).toEqual(['credits.low']);
    expect(once[0]?.data).toEqual({ balance: 8, threshold: 10 });
    expect(rearmed).toBe(true);
    const events = eventsOf(userId);
    expect(events.map((event) => event.type)).toEqual(['credits.low', 'credits.low']);
    expect(events[1]?.data).toEqual({ balance: 9, threshold: 10 });
    expect(await getBalance(store, userId)).toBe(9);
  });

  it('credits.low crossed by parallel accepts and looked at by many dispatchers at once opens one event', async () => {
    // Prepare
    const userId = await account(30);
    await setLowBalanceThreshold(store, { userId, threshold: 25, now: clock });
    const tasks = await acceptAll(userId, 10, 1);

    // Act
    await Promise.all(
      tasks.map(({ task }) => retriedWhileBusy(() => noticeSpending({ store, now: () => clock }, task, logger))),
    );
    await dispatch();
    await deliver(userId);

    // Assert
    expect(eventsOf(userId).map((event) => event.type)).toEqual(['credits.low']);
    expect(await listAccountEventDeliveries(store, userId)).toHaveLength(1);
  });

  it("the last task of a day, taken from the queue after midnight, still tells of that day's crossing", async () => {
    // Prepare: a daily budget of 4 spent by tasks accepted just before midnight.
    const userId = await account(1000);
    const key = await limitedKey(userId, 4, 'day');
    clock = new Date('2026-11-05T23:59:59.000Z');
    const accepted = await acceptAll(userId, 2, 2, key);

    // Act: the dispatcher looks after midnight.
    clock = new Date('2026-11-06T00:00:01.000Z');
    for (const { task } of accepted) await noticeSpending({ store, now: () => clock }, task, logger);
    await deliver(userId);

    // Assert
    const events = eventsOf(userId);
    expect(events.map((event) => event.type).sort()).toEqual(['key.spend_limit.reached', 'key.spend_limit.warning']);
    for (const event of events) expect(event.data).toMatchObject({ spent: 4, resetsAt: '2026-11-06T00:00:00.000Z' });
  });

  it('a refund lifting the balance re-arms credits.low at the next look; a stale re-arm leaves a newer crossing alone', async () => {
    // Prepare: credits.low sent at 7 of a threshold of 10.
    const userId = await account(10);
    await setLowBalanceThreshold(store, { userId, threshold: 10, now: clock });
    const [first] = await acceptAll(userId, 1, 3);
    if (!first) throw new Error('nothing accepted');
    await noticeSpending({ store, now: () => clock }, first.task, logger);
    const firstMarker = (await getAccountAlerts(store, userId)).lowBalanceMarkerId ?? '';

    // Act: the refund lifts it to 10, which the next look sees (re-armed); a debit takes it to 7 again.
    await failAndRefund(store, {
      userId,
      taskId: first.task.taskId,
      errorCode: 'PROVIDER_ERROR',
      errorMessage: 'failed',
      now: clock,
    });
    const afterRefund = await noticeSpending({ store, now: () => clock }, first.task, logger);
    const [second] = await acceptAll(userId, 1, 3);
    if (!second) throw new Error('nothing accepted');
    const again = await noticeSpending({ store, now: () => clock }, second.task, logger);
    const stale = await rearmLowBalance(store, userId, firstMarker);
    await deliver(userId);

    // Assert
    expect(afterRefund).toEqual({ events: [], rearmed: true });
    expect(again.events).toEqual([{ type: 'credits.low', outcome: 'opened' }]);
    expect(stale).toBe(false);
    expect((await getAccountAlerts(store, userId)).lowBalanceSent).toBe(true);
    expect(eventsOf(userId).map((event) => event.data)).toEqual([
      { balance: 7, threshold: 10 },
      { balance: 7, threshold: 10 },
    ]);
  });

  it('the credits.low marker is a compare-and-set: an opening or re-arm on a stale read writes nothing', async () => {
    // Prepare
    const userId = await account(5);
    const marker = webhookKeys.lowBalanceMarker(userId);
    const open = (markerRead?: string) =>
      createEventDelivery(store, {
        userId,
        eventId: newAccountEventId(),
        data: { balance: 5, threshold: 10 },
        marker,
        ...(markerRead === undefined ? {} : { markerRead }),
        webhookId: `msg_${newAccountEventId().slice(4)}`,
        url: `${origin}/${userId}`,
        eventType: 'credits.low',
        eventAt: clock.toISOString(),
        claimId: 'claim',
        leaseUntil: new Date(clock.getTime() + 120_000),
        now: clock,
        maxOpen: 100,
        queueOrder: '000000000001',
      });

    // Act
    const first = await open();
    const sentId = (await getAccountAlerts(store, userId)).lowBalanceMarkerId ?? '';
    const twice = await open();
    const rearmed = await rearmLowBalance(store, userId, sentId);
    const rearmedId = (await getAccountAlerts(store, userId)).lowBalanceMarkerId ?? '';
    const staleRearm = await rearmLowBalance(store, userId, sentId);
    const staleAbsent = await open();
    const staleSent = await open(sentId);
    const next = await open(rearmedId);
    const nextAgain = await open(rearmedId);

    // Assert
    expect([first, twice, rearmed, staleRearm]).toEqual(['opened', 'exists', true, false]);
    expect(rearmedId).toMatch(/^rearm_/);
    expect([staleAbsent, staleSent, next, nextAgain]).toEqual(['exists', 'exists', 'opened', 'exists']);
    expect(await listAccountEventDeliveries(store, userId)).toHaveLength(2);
  });

  it('a look that fails never holds up or fails the send beside it; the run waits for every look', async () => {
    // Prepare
    const userId = await account(100);
    const accepted = await acceptAll(userId, 3, 1);
    const looked: string[] = [];

    // Act (other tests' tasks still queued go too: only this account's are asserted)
    const run = await dispatchQueued(lifecycle(), {}, logger, {
      onClaimed: async (task) => {
        await Promise.resolve();
        if (task.userId === userId) looked.push(task.taskId);
        throw new Error('the table is down');
      },
    });
    const stored = await Promise.all(accepted.map(({ task }) => getTask(store, userId, task.taskId)));

    // Assert
    expect(run.idle).toBe(true);
    expect(looked.sort()).toEqual(accepted.map(({ task }) => task.taskId).sort());
    for (const task of stored) expect(task).toMatchObject({ stage: 'running', providerTaskId: expect.any(String) });
  });

  it('an account without a default endpoint gets no event and no marker: it is sent once an endpoint is set', async () => {
    // Prepare: a secret but no endpoint.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 10, now: clock });
    secrets.set(userId, (await rotateWebhookSecret(store, box, { userId, now: clock })).secret);
    await setLowBalanceThreshold(store, { userId, threshold: 9, now: clock });
    const [accepted] = await acceptAll(userId, 1, 3);
    if (!accepted) throw new Error('nothing accepted');

    // Act
    const withoutEndpoint = await noticeSpending({ store, now: () => clock }, accepted.task, logger);
    await setAccountWebhookUrl(store, webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin }), {
      userId,
      url: `${origin}/${userId}`,
      now: clock,
    });
    const withEndpoint = await noticeSpending({ store, now: () => clock }, accepted.task, logger);
    await deliver(userId);

    // Assert
    expect(withoutEndpoint.events).toEqual([{ type: 'credits.low', outcome: 'no-endpoint' }]);
    expect(withEndpoint.events).toEqual([{ type: 'credits.low', outcome: 'opened' }]);
    expect(eventsOf(userId).map((event) => event.data)).toEqual([{ balance: 7, threshold: 9 }]);
  });
});
