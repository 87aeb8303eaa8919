/**
 * Webhook deliveries on DynamoDB Local with a real receiver over HTTP: a delivery opens once per ended
 * task, each attempt is recorded with its outcome and claims guard every step (a stale or repeated
 * claim sends nothing), the sweeper's claim makes the next attempt due, the schedule ends in `failed`,
 * and an endpoint whose name resolves to a private address is never called.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { DEFAULT_LIFECYCLE_CONFIG } from '../../functions/core/lifecycle';
import { cancelTask } from '../../functions/lifecycle/cancel-task';
import { OPEN_DELIVERIES_WITHIN_SECONDS, recordTaskEvents, taskEventKey } from '../../functions/lifecycle/event-feed';
import {
  describeDeliveries,
  rotateWebhookSecret,
  setAccountWebhookUrl,
} from '../../functions/lifecycle/webhook-settings';
import {
  attemptDelivery,
  claimDueDeliveries,
  openDelivery,
  type WebhookLifecycle,
} from '../../functions/lifecycle/webhooks';
import { createFsMediaStore } from '../../functions/media/fs-media-store';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { failAndRefund } from '../../functions/money/refund';
import { logger } from '../../functions/observability/logger';
import type { GenerationProvider } from '../../functions/provider/port';
import { createDocumentClient } from '../../functions/store/client';
import { claimSend, releaseSend } from '../../functions/store/dispatch';
import { webhookKeys } from '../../functions/store/keys';
import { claimRefresh, completeTask, getTask } from '../../functions/store/tasks';
import { recordAttempt } from '../../functions/store/webhook-attempts';
import { countOpenDeliveries } from '../../functions/store/webhook-open-count';
import { countDeliveries } from '../../functions/store/webhook-queue';
import { getWebhookSettings } from '../../functions/store/webhook-settings';
import { getDelivery, getDeliveryWithAttempts } from '../../functions/store/webhooks';
import { createSecretBox } from '../../functions/webhooks/secret-box';
import { webhookTargetPolicy } from '../../functions/webhooks/target-policy';
import { startConflictProxy } from '../../local/conflict-proxy';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { createTestStore, type TestStore, testEndpoint, untilForwarded } from '../support/dynamodb';

jest.setTimeout(60_000);

/** A write that only holds the item it names (the conflict layer holds what a transaction names). */
const holdUpdate = {
  UpdateExpression: 'SET #heldAt = :heldAt',
  ExpressionAttributeNames: { '#heldAt': 'heldAt' },
  ExpressionAttributeValues: { ':heldAt': 'test' },
};

const NO_PROVIDER: GenerationProvider = {
  createTask: () => Promise.reject(new Error('no provider')),
  getTask: () => Promise.reject(new Error('no provider')),
};

describe('webhook deliveries', () => {
  let store: TestStore;
  let receiver: Server;
  let origin: string;
  let answers: number[] = [];
  const calls: { path: string; body: string }[] = [];
  let mediaDir: string;
  let clock = new Date('2026-03-01T12:00:00.000Z');
  const box = createSecretBox(async () => 'integration-test-service-key-0123456789');
  const resolved: string[] = [];

  function lifecycle(delays: number[] = [60, 300], maxOpenDeliveries?: number): WebhookLifecycle {
    return {
      store,
      provider: NO_PROVIDER,
      config: DEFAULT_LIFECYCLE_CONFIG,
      now: () => clock,
      media: createFsMediaStore({ dir: mediaDir, publicBaseUrl: 'http://127.0.0.1:9' }),
      webhooks: {
        box,
        policy: webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin }),
        retryDelays: delays,
        ...(maxOpenDeliveries === undefined ? {} : { maxOpenDeliveries }),
        // DNS as an attacker would set it up: a public-looking name on a private address.
        resolve: async (host) => {
          resolved.push(host);
          return [{ address: '10.0.0.5', family: 4 }];
        },
      },
    };
  }

  /** A pending task of `userId`, with `webhookUrl` when given. */
  async function pendingTask(userId: string, taskId: string, webhookUrl?: string) {
    await grantCredits(store, { userId, amount: 10, grantId: `grant-${taskId}` });
    await acceptTask(store, {
      task: {
        userId,
        taskId,
        type: 'image',
        model: 'image-model-1',
        prompt: 'p',
        request: {},
        creditsUsed: 3,
        ...(webhookUrl ? { webhookUrl } : {}),
        now: clock,
      },
    });
  }

  /** A task of `userId` that ended (completed), with `webhookUrl` when given. */
  async function endedTask(userId: string, taskId: string, webhookUrl?: string) {
    await pendingTask(userId, taskId, webhookUrl);
    await completeTask(store, { userId, taskId, resultKeys: [`results/${taskId}.png`], now: clock });
  }

  /** Fails a pending task as the provider's refusal does (refunded, PROVIDER_REJECTED). */
  function rejectTask(userId: string, taskId: string) {
    return failAndRefund(store, {
      userId,
      taskId,
      errorCode: 'PROVIDER_REJECTED',
      errorMessage: 'The provider rejected the task',
      now: clock,
    });
  }

  beforeAll(async () => {
    store = await createTestStore();
    mediaDir = mkdtempSync(join(tmpdir(), 'webhook-media-'));
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        calls.push({ path: request.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
        response.writeHead(answers.shift() ?? 200).end();
      });
    });
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', () => ready()));
    const address = receiver.address();
    origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });

  afterAll(async () => {
    await new Promise<void>((closed) => receiver.close(() => closed()));
    rmSync(mediaDir, { recursive: true, force: true });
    await store.dispose();
  });

  test('a delivery opens once per ended task, only with an endpoint and a secret', async () => {
    // Prepare
    const lc = lifecycle();
    await endedTask('wh-open', 'task-open', `${origin}/open`);
    await endedTask('wh-nourl', 'task-nourl');

    // Act
    const withoutSecret = await openDelivery(lc, { userId: 'wh-open', taskId: 'task-open' }, logger);
    await rotateWebhookSecret(store, box, { userId: 'wh-open', now: clock });
    const first = await openDelivery(lc, { userId: 'wh-open', taskId: 'task-open' }, logger);
    const again = await openDelivery(lc, { userId: 'wh-open', taskId: 'task-open' }, logger);
    await rotateWebhookSecret(store, box, { userId: 'wh-nourl', now: clock });
    const noEndpoint = await openDelivery(lc, { userId: 'wh-nourl', taskId: 'task-nourl' }, logger);
    const delivery = await getDelivery(store, 'wh-open', 'task-open');

    // Assert
    expect([withoutSecret, first, again, noEndpoint]).toEqual(['no-secret', 'opened', 'exists', 'no-endpoint']);
    expect(delivery).toMatchObject({
      deliveryState: 'sending',
      attempts: 0,
      url: `${origin}/open`,
      eventType: 'task.completed',
      webhookId: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
    });
  });

  test('the secret is stored sealed, never in plaintext, and rotating replaces it', async () => {
    // Act
    const first = await rotateWebhookSecret(store, box, { userId: 'wh-seal', now: clock });
    const second = await rotateWebhookSecret(store, box, { userId: 'wh-seal', now: clock });
    const settings = await getWebhookSettings(store, 'wh-seal');

    // Assert
    expect([first.rotated, second.rotated]).toEqual([false, true]);
    expect(JSON.stringify(settings)).not.toContain(second.secret.slice(6));
    expect(JSON.stringify(settings)).not.toContain(first.secret.slice(6));
    await expect(box.open('wh-seal', settings?.sealedSecret ?? '')).resolves.toBe(second.secret);
  });

  test('attempts are recorded; a repeated claim sends nothing; the sweeper claims the retry when it is due', async () => {
    // Prepare
    const lc = lifecycle([60, 300]);
    await endedTask('wh-retry', 'task-retry', `${origin}/retry`);
    await rotateWebhookSecret(store, box, { userId: 'wh-retry', now: clock });
    await openDelivery(lc, { userId: 'wh-retry', taskId: 'task-retry' }, logger);
    const opened = await getDelivery(store, 'wh-retry', 'task-retry');
    const claim = { userId: 'wh-retry', taskId: 'task-retry', claimId: opened?.claimId ?? '' };
    answers = [500];

    // Act
    const failed = await attemptDelivery(lc, claim, logger);
    const repeated = await attemptDelivery(lc, claim, logger);
    const earlyClaims = await claimDueDeliveries(store, new Date(clock.getTime() + 59_000), logger);
    clock = new Date(clock.getTime() + 61_000);
    const dueClaims = await claimDueDeliveries(store, clock, logger);
    const reclaimed = await getDelivery(store, 'wh-retry', 'task-retry');
    const delivered = await attemptDelivery(lc, { ...claim, claimId: reclaimed?.claimId ?? '' }, logger);
    const report = await getDeliveryWithAttempts(store, 'wh-retry', 'task-retry');

    // Assert
    expect(failed).toMatchObject({ statusCode: 500, next: 'waiting' });
    expect(repeated).toBeUndefined();
    expect(earlyClaims).toBe(0);
    expect(dueClaims).toBe(1);
    expect(reclaimed?.claimId).not.toBe(claim.claimId);
    expect(delivered).toMatchObject({ statusCode: 200, next: 'delivered' });
    expect(calls.filter((call) => call.path === '/retry')).toHaveLength(2);
    expect(report.delivery).toMatchObject({ deliveryState: 'delivered', attempts: 2 });
    expect(report.delivery?.dueAt).toBeUndefined();
    expect(report.attempts.map(({ attempt, statusCode }) => ({ attempt, statusCode }))).toEqual([
      { attempt: 1, statusCode: 500 },
      { attempt: 2, statusCode: 200 },
    ]);
    expect(report.attempts[0]?.durationMs).toEqual(expect.any(Number));
    // The payload carries the task as GET shows it
    const payload = JSON.parse(calls.find((call) => call.path === '/retry')?.body ?? '{}');
    expect(payload).toMatchObject({
      type: 'task.completed',
      data: { taskId: 'task-retry', status: 1, imageUrls: ['http://127.0.0.1:9/media/results/task-retry.png'] },
    });
  });

  test('when the schedule is spent the delivery gives up, and that is recorded', async () => {
    // Prepare: one retry only
    const lc = lifecycle([1]);
    await endedTask('wh-give-up', 'task-give-up', `${origin}/down`);
    await rotateWebhookSecret(store, box, { userId: 'wh-give-up', now: clock });
    await openDelivery(lc, { userId: 'wh-give-up', taskId: 'task-give-up' }, logger);
    answers = [503, 503];

    // Act
    const opened = await getDelivery(store, 'wh-give-up', 'task-give-up');
    const first = await attemptDelivery(
      lc,
      { userId: 'wh-give-up', taskId: 'task-give-up', claimId: opened?.claimId ?? '' },
      logger,
    );
    clock = new Date(clock.getTime() + 2000);
    await claimDueDeliveries(store, clock, logger);
    const due = await getDelivery(store, 'wh-give-up', 'task-give-up');
    const last = await attemptDelivery(
      lc,
      { userId: 'wh-give-up', taskId: 'task-give-up', claimId: due?.claimId ?? '' },
      logger,
    );
    const report = await getDeliveryWithAttempts(store, 'wh-give-up', 'task-give-up');
    await claimDueDeliveries(store, new Date(clock.getTime() + 86_400_000), logger);
    const afterLaterSweep = await getDelivery(store, 'wh-give-up', 'task-give-up');

    // Assert
    expect([first?.next, last?.next]).toEqual(['waiting', 'failed']);
    expect(report.delivery).toMatchObject({ deliveryState: 'failed', attempts: 2, gaveUpAt: clock.toISOString() });
    expect(report.attempts).toHaveLength(2);
    // Out of the due index: a sweep a day later does not take it up again
    expect(afterLaterSweep).toMatchObject({ deliveryState: 'failed' });
    expect(afterLaterSweep?.claimId).toBeUndefined();
  });

  test('a host name resolving to a private address is refused and never called; the attempt says why', async () => {
    // Prepare
    const lc = lifecycle();
    await endedTask('wh-private', 'task-private', 'https://hooks.attacker.example/in');
    await rotateWebhookSecret(store, box, { userId: 'wh-private', now: clock });
    await openDelivery(lc, { userId: 'wh-private', taskId: 'task-private' }, logger);
    const opened = await getDelivery(store, 'wh-private', 'task-private');
    const before = calls.length;

    // Act
    const outcome = await attemptDelivery(
      lc,
      { userId: 'wh-private', taskId: 'task-private', claimId: opened?.claimId ?? '' },
      logger,
    );
    const report = await getDeliveryWithAttempts(store, 'wh-private', 'task-private');

    // Assert
    expect(resolved).toContain('hooks.attacker.example');
    expect(outcome).toMatchObject({ error: 'Endpoint refused: it resolves to a non-public address', next: 'waiting' });
    expect(outcome?.statusCode).toBeUndefined();
    expect(calls.length).toBe(before);
    expect(report.attempts[0]).toMatchObject({
      attempt: 1,
      error: 'Endpoint refused: it resolves to a non-public address',
    });
  });

  test('a record made under a lost claim writes nothing', async () => {
    // Prepare
    const lc = lifecycle();
    await endedTask('wh-lost', 'task-lost', `${origin}/lost`);
    await rotateWebhookSecret(store, box, { userId: 'wh-lost', now: clock });
    await openDelivery(lc, { userId: 'wh-lost', taskId: 'task-lost' }, logger);

    // Act
    const recorded = await recordAttempt(store, {
      userId: 'wh-lost',
      taskId: 'task-lost',
      claimId: 'not-the-claim',
      attempt: { attempt: 1, at: clock.toISOString(), durationMs: 1, statusCode: 200 },
      next: { state: 'delivered' },
      now: clock,
    });
    const report = await getDeliveryWithAttempts(store, 'wh-lost', 'task-lost');

    // Assert
    expect(recorded).toBe(false);
    expect(report.attempts).toEqual([]);
    expect(report.delivery?.deliveryState).toBe('sending');
  });

  test("an account's default endpoint is judged by the same rule", async () => {
    // Act / Assert
    await expect(
      setAccountWebhookUrl(store, webhookTargetPolicy({}), {
        userId: 'wh-default',
        url: 'https://10.0.0.1/x',
        now: clock,
      }),
    ).rejects.toThrow(/^url: Must name a public host/);
    await expect(
      setAccountWebhookUrl(store, webhookTargetPolicy({}), {
        userId: 'wh-default',
        url: 'https://hooks.example.com/in',
        now: clock,
      }),
    ).resolves.toMatchObject({ url: 'https://hooks.example.com/in', hasSecret: false });
  });

  test('a task the provider refused at its first send sends nothing; a task refused on a later send still does', async () => {
    // Prepare: both accounts have a secret and an endpoint
    const lc = lifecycle();
    for (const userId of ['wh-refused', 'wh-resent']) {
      await pendingTask(userId, `task-${userId}`, `${origin}/${userId}`);
      await rotateWebhookSecret(store, box, { userId, now: clock });
    }
    // The first was polled while queued (a claim, never a send), then refused at its first send
    await claimRefresh(store, { userId: 'wh-refused', taskId: 'task-wh-refused', now: clock, intervalMs: 0 });
    await claimSend(store, { userId: 'wh-refused', taskId: 'task-wh-refused', now: clock.getTime() });
    await rejectTask('wh-refused', 'task-wh-refused');
    // The other's first send failed (a 5xx), so the provider refused it on a later send
    await claimSend(store, { userId: 'wh-resent', taskId: 'task-wh-resent', now: clock.getTime() });
    await releaseSend(store, { userId: 'wh-resent', taskId: 'task-wh-resent', failed: true });
    await claimSend(store, { userId: 'wh-resent', taskId: 'task-wh-resent', now: clock.getTime() });
    await rejectTask('wh-resent', 'task-wh-resent');

    // Act
    const refused = await openDelivery(lc, { userId: 'wh-refused', taskId: 'task-wh-refused' }, logger);
    const resent = await openDelivery(lc, { userId: 'wh-resent', taskId: 'task-wh-resent' }, logger);

    // Assert
    expect(refused).toBe('refused-at-first-send');
    expect(await getDelivery(store, 'wh-refused', 'task-wh-refused')).toBeUndefined();
    expect(await countOpenDeliveries(store, 'wh-refused')).toBe(0);
    expect(resent).toBe('opened');
    expect(await getDelivery(store, 'wh-resent', 'task-wh-resent')).toMatchObject({ eventType: 'task.failed' });
  });

  test('a task its owner cancelled while queued sends nothing: the cancel answered with its state', async () => {
    // Prepare: the account has a secret and the task an endpoint
    const lc = lifecycle();
    const userId = 'wh-cancelled';
    await pendingTask(userId, 'task-wh-cancelled', `${origin}/${userId}`);
    await rotateWebhookSecret(store, box, { userId, now: clock });
    const before = calls.length;
    await cancelTask(lc, { userId, taskId: 'task-wh-cancelled' }, logger);

    // Act
    const outcome = await openDelivery(lc, { userId, taskId: 'task-wh-cancelled' }, logger);

    // Assert
    expect(outcome).toBe('cancelled');
    expect(await getDelivery(store, userId, 'task-wh-cancelled')).toBeUndefined();
    expect(await countOpenDeliveries(store, userId)).toBe(0);
    expect(calls.length).toBe(before);
  });

  test('an account has at most N open deliveries: the excess waits queued, unsent, and goes out as a place frees', async () => {
    // Prepare: a bound of 2, four tasks ended
    const lc = lifecycle([60], 2);
    const userId = 'wh-bound';
    await rotateWebhookSecret(store, box, { userId, now: clock });
    for (const n of [1, 2, 3, 4]) await endedTask(userId, `task-bound-${n}`, `${origin}/bound`);
    const before = calls.length;

    // Act
    const opened = [];
    for (const n of [1, 2, 3, 4]) opened.push(await openDelivery(lc, { userId, taskId: `task-bound-${n}` }, logger));
    const waiting = await describeDeliveries(store, userId, 'task-bound-3');
    const countsAtBound = await countDeliveries(store, userId);
    const callsAtBound = calls.length;
    // Delivering one frees a place: the oldest queued (task 3, not 4) takes it
    const first = await getDelivery(store, userId, 'task-bound-1');
    const delivered = await attemptDelivery(
      lc,
      { userId, taskId: 'task-bound-1', claimId: first?.claimId ?? '' },
      logger,
    );
    const third = await getDelivery(store, userId, 'task-bound-3');
    const fourth = await getDelivery(store, userId, 'task-bound-4');

    // Assert
    expect(opened).toEqual(['opened', 'opened', 'queued', 'queued']);
    expect(countsAtBound).toMatchObject({ open: 2, queued: 2 });
    expect(waiting.delivery).toMatchObject({ state: 'queued', attempts: 0, nextAttemptAt: null, gaveUpAt: null });
    expect(waiting.attempts).toEqual([]);
    expect(callsAtBound).toBe(before);
    expect(delivered).toMatchObject({ statusCode: 200, next: 'delivered' });
    expect(calls.length).toBe(before + 1);
    expect(third).toMatchObject({ deliveryState: 'sending', countsOpen: true, claimId: expect.any(String) });
    expect(fourth).toMatchObject({ deliveryState: 'queued' });
    expect(await countDeliveries(store, userId)).toMatchObject({ open: 2, queued: 1 });
  });

  test('the bound holds when deliveries open at once, and a delivery that gives up frees its place for a queued one', async () => {
    // Prepare: a bound of 3, eight tasks ending together
    const lc = lifecycle([], 3);
    const userId = 'wh-burst';
    await rotateWebhookSecret(store, box, { userId, now: clock });
    const tasks = Array.from({ length: 8 }, (_, n) => `task-burst-${n}`);
    for (const taskId of tasks) await endedTask(userId, taskId, `${origin}/burst-down`);
    answers = [];

    // Act
    const outcomes = await Promise.all(tasks.map((taskId) => openDelivery(lc, { userId, taskId }, logger)));
    const countsAtBound = await countDeliveries(store, userId);
    const openTask = tasks.find((_, n) => outcomes[n] === 'opened') ?? '';
    const claimed = await getDelivery(store, userId, openTask);
    answers = [503];
    const gaveUp = await attemptDelivery(lc, { userId, taskId: openTask, claimId: claimed?.claimId ?? '' }, logger);
    const countsAfterGivingUp = await countDeliveries(store, userId);

    // Assert
    expect(outcomes.filter((outcome) => outcome === 'opened')).toHaveLength(3);
    expect(outcomes.filter((outcome) => outcome === 'queued')).toHaveLength(5);
    expect(countsAtBound).toMatchObject({ open: 3, queued: 5 });
    expect(gaveUp).toMatchObject({ statusCode: 503, next: 'failed' });
    expect(countsAfterGivingUp).toMatchObject({ open: 3, queued: 4 });
  });

  test("an ending whose worker record was lost is opened by the sweeper once its time passed, with its feed event's id, under the account's bound", async () => {
    // Prepare: an account at a bound of 2 with one delivery open; an ended task whose event is in the
    // feed but whose opening never ran (its stream record failed every retry: the dead-letter queue)
    const lc = lifecycle([60], 2);
    const userId = 'wh-lost-record';
    await rotateWebhookSecret(store, box, { userId, now: clock });
    await endedTask(userId, 'task-lost-open', `${origin}/lost`);
    await openDelivery(lc, { userId, taskId: 'task-lost-open' }, logger);
    await endedTask(userId, 'task-lost-1', `${origin}/lost`);
    await endedTask(userId, 'task-lost-2', `${origin}/lost`);
    const ended = await Promise.all(['task-lost-1', 'task-lost-2'].map((taskId) => getTask(store, userId, taskId)));
    const recorded = await recordTaskEvents(
      store,
      ended.filter((task) => task !== undefined),
      clock,
    );
    const later = new Date(clock.getTime() + (OPEN_DELIVERIES_WITHIN_SECONDS + 1) * 1000);

    // Act: a sweep before the worker's time is up, one after, and another
    await claimDueDeliveries(store, clock, logger);
    const beforeItsTime = await getDelivery(store, userId, 'task-lost-1');
    await claimDueDeliveries(store, later, logger);
    const first = await getDelivery(store, userId, 'task-lost-1');
    const second = await getDelivery(store, userId, 'task-lost-2');
    await claimDueDeliveries(store, later, logger);
    const againFirst = await getDelivery(store, userId, 'task-lost-1');

    // Assert
    expect(beforeItsTime).toBeUndefined();
    const idOf = (taskId: string) => recorded.get(taskEventKey(userId, taskId))?.id;
    expect(first).toMatchObject({ webhookId: idOf('task-lost-1'), url: `${origin}/lost` });
    expect(second).toMatchObject({ webhookId: idOf('task-lost-2'), url: `${origin}/lost` });
    // One takes the place left under the bound, the other waits its turn.
    expect([first?.deliveryState, second?.deliveryState].sort()).toEqual(['queued', 'sending']);
    expect(againFirst).toEqual(first);
    expect(await countDeliveries(store, userId)).toMatchObject({ open: 2, queued: 1 });
  });

  test("an attempt answered 2xx whose record meets the account's counter held past the store's retries is recorded once, and never sent again", async () => {
    // Prepare: a delivery claimed on the plain table; the same table behind the conflict layer, where
    // a transaction holds the account's counter item for 7 s (longer than 12 tries' backoff, 6.6 s at most)
    const userId = 'wh-held';
    await rotateWebhookSecret(store, box, { userId, now: clock });
    await endedTask(userId, 'task-held', `${origin}/held`);
    await openDelivery(lifecycle(), { userId, taskId: 'task-held' }, logger);
    const claimed = await getDelivery(store, userId, 'task-held');
    const layer = await startConflictProxy({ target: testEndpoint(), holdMs: 7000 });
    const held = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: layer.endpoint });
    const heldLc: WebhookLifecycle = { ...lifecycle(), store: { doc: held, tableName: store.tableName } };
    const ref = { userId, taskId: 'task-held', claimId: claimed?.claimId ?? '' };
    answers = [];
    const before = calls.length;

    // Act: the counter is held while the attempt is made and recorded; then the same claim's stream
    // record comes again (as after a record that threw)
    const holder = held.send(
      new TransactWriteCommand({
        TransactItems: [
          { Update: { TableName: store.tableName, Key: webhookKeys.openDeliveries(userId), ...holdUpdate } },
        ],
      }),
    );
    await untilForwarded({ conflicts: layer }, 1);
    const attempted = await attemptDelivery(heldLc, ref, logger);
    await holder;
    const redelivered = await attemptDelivery(heldLc, ref, logger);
    held.destroy();
    await layer.stop();
    const { delivery, attempts } = await getDeliveryWithAttempts(store, userId, 'task-held');

    // Assert
    expect(attempted).toMatchObject({ statusCode: 200, next: 'delivered' });
    expect(redelivered).toBeUndefined();
    expect(calls.slice(before).map((call) => call.path)).toEqual(['/held']);
    expect(delivery).toMatchObject({ deliveryState: 'delivered', attempts: 1 });
    expect(attempts).toHaveLength(1);
    expect(await countDeliveries(store, userId)).toMatchObject({ open: 0 });
  });
});
