/**
 * Section `webhooks`: an endpoint down while 500 tasks of one account end, then back. In process, on
 * DynamoDB Local: the webhook worker on the table's stream (local/stream-poller.ts, the deployed
 * filters), the sweeper's webhook part every second, a real HTTP receiver answering 503 while down and
 * 200 once back, the bound on open deliveries at its default (100), retries a second apart (the real
 * schedule would wait a minute for the first). Reported: every event delivered once (distinct
 * `webhook-id`s answered 200, and any sent twice), the time from the endpoint's return to the last
 * delivery, and the feed read back from its start through GET /api/events: all 500 in order, p50 per page.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { claimDueDeliveries } from '../functions/lifecycle/webhooks';
import { acceptTask } from '../functions/money/accept';
import { grantCredits } from '../functions/money/grant';
import { logger } from '../functions/observability/logger';
import { completeTask } from '../functions/store/tasks';
import { countDeliveries } from '../functions/store/webhook-queue';
import { WEBHOOK_WORKER_FILTERS } from '../lib/routes';
import { startStreamPoller } from '../local/stream-poller';
import { lambdaContext, proxyEvent, startInProcessEnv } from './in-process';
import { bounded, ms, note, onCleanup, out, percentile, table } from './support';

const TASKS = 500;
const USER = 'bench-webhooks';
const SERVICE_KEY = 'bench-webhooks-service-key-0123456789abcdef';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(label: string, check: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench webhooks: ${label} not reached in ${timeoutMs} ms`);
    await sleep(100);
  }
}

export async function webhookFigures(): Promise<void> {
  out('## Webhooks: an endpoint down while 500 tasks end, then back; the event feed read back');
  out();
  let down = true;
  const delivered = new Map<string, number>();
  let lastDeliveryAt = 0;
  const receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (!down) {
        const id = String(request.headers['webhook-id']);
        delivered.set(id, (delivered.get(id) ?? 0) + 1);
        lastDeliveryAt = performance.now();
      }
      response.writeHead(down ? 503 : 200).end();
    });
  });
  await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', () => ready()));
  onCleanup(() => new Promise<void>((closed) => receiver.close(() => closed())));
  const origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const env = await startInProcessEnv();
  Object.assign(process.env, {
    WEBHOOK_SECRETS_KEY: SERVICE_KEY,
    WEBHOOK_INSECURE_ORIGINS: origin,
    WEBHOOK_RETRY_DELAYS_SECONDS: Array.from({ length: 20 }, () => '1').join(','),
  });
  const { resetWebhookLifecycleFromEnv } = await import('../functions/runtime/webhook-lifecycle-from-env');
  resetWebhookLifecycleFromEnv();
  const { handler: webhookWorker } = await import('../functions/webhook-worker/handler');
  const { handler: listEvents } = await import('../functions/list-events/handler');
  const { rotateWebhookSecret, setAccountWebhookUrl } = await import('../functions/lifecycle/webhook-settings');
  const { createSecretBox } = await import('../functions/webhooks/secret-box');
  const { webhookTargetPolicy } = await import('../functions/webhooks/target-policy');
  const store = env.store;
  await rotateWebhookSecret(
    store,
    createSecretBox(async () => SERVICE_KEY),
    { userId: USER, now: new Date() },
  );
  await setAccountWebhookUrl(store, webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: origin }), {
    userId: USER,
    url: `${origin}/hook`,
    now: new Date(),
  });
  const worker = await startStreamPoller({
    endpoint: env.dynamodbEndpoint,
    tableName: store.tableName,
    handler: webhookWorker,
    filter: undefined,
    filters: WEBHOOK_WORKER_FILTERS,
    name: 'webhook worker',
  });
  onCleanup(() => worker.stop());
  let sweeping = true;
  const sweeper = (async () => {
    while (sweeping) {
      await claimDueDeliveries(store, new Date(), logger).catch(() => 0);
      await sleep(1000);
    }
  })();
  onCleanup(async () => {
    sweeping = false;
    await sweeper;
  });

  note(`accepting ${TASKS} tasks`);
  await grantCredits(store, { userId: USER, amount: TASKS * 3 });
  const taskIds = Array.from({ length: TASKS }, (_, n) => `bench-wh-${String(n).padStart(4, '0')}`);
  for (const taskId of taskIds) {
    await acceptTask(store, {
      task: {
        userId: USER,
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
  note(`ending ${TASKS} tasks, 32 at a time, with the endpoint down`);
  const endStart = performance.now();
  for (let n = 0; n < taskIds.length; n += 32) {
    await Promise.all(
      taskIds
        .slice(n, n + 32)
        .map((taskId) =>
          completeTask(store, { userId: USER, taskId, resultKeys: [`results/${taskId}.png`], now: new Date() }),
        ),
    );
  }
  await bounded(
    'every event recorded and its delivery open or queued',
    600_000,
    until('open + queued = tasks', async () => {
      const counts = await countDeliveries(store, USER);
      return counts.open + counts.queued >= TASKS;
    }),
  );
  const whileDown = await countDeliveries(store, USER);
  const settledAfter = performance.now() - endStart;
  note('the endpoint comes back');
  const back = performance.now();
  down = false;
  await bounded(
    'every event delivered',
    900_000,
    until('all delivered', async () => delivered.size >= TASKS),
  );
  const drained = lastDeliveryAt - back;
  const twice = [...delivered.values()].filter((n) => n > 1).length;

  note('reading the feed back from its start');
  const pageTimes: number[] = [];
  const ids: string[] = [];
  const timestamps: string[] = [];
  let after: string | undefined;
  for (;;) {
    const started = performance.now();
    const answer = await listEvents(
      {
        ...proxyEvent({ method: 'GET', resource: '/api/events', path: '/api/events', userId: USER, keyId: 'bench' }),
        queryStringParameters: { limit: '100', ...(after ? { after } : {}) },
      },
      lambdaContext('list-events'),
    );
    pageTimes.push(performance.now() - started);
    const body = JSON.parse(answer.body) as {
      events: { id: string; timestamp: string }[];
      next: string | null;
      hasMore: boolean;
    };
    ids.push(...body.events.map((event) => event.id));
    timestamps.push(...body.events.map((event) => event.timestamp));
    if (!body.hasMore || !body.next) break;
    after = body.next;
  }
  // The feed's order is the order events were numbered (not their timestamps across batches): each once.
  const inOrder = new Set(ids).size === ids.length && timestamps.length === ids.length;
  const sameIds = ids.length === delivered.size && ids.every((id) => delivered.has(id));
  table(
    ['Figure', 'Value'],
    [
      ['tasks ended (endpoint down)', TASKS],
      ['open / queued while down', `${whileDown.open} / ${whileDown.queued}`],
      ['all recorded, open or queued, after the first ending', `${ms(settledAfter)} ms`],
      ['distinct events delivered (200)', delivered.size],
      ['events delivered more than once', twice],
      ["endpoint's return -> last delivery", `${ms(drained)} ms`],
      ['feed events read back (limit 100)', ids.length],
      ['feed: each event once, ids = webhook-ids', inOrder && sameIds ? 'yes' : 'NO'],
      ['feed page, p50', `${ms(percentile(pageTimes, 50))} ms`],
      ['feed page, max', `${ms(Math.max(...pageTimes))} ms`],
    ],
    ['l', 'r'],
  );
  out();
  out(
    `DynamoDB Local without the conflict layer, bound 100 (WEBHOOK_MAX_OPEN_DELIVERIES default), retries 1 s apart, sweeper every second; one run on a 2-core machine shared with other engineers' test runs: compare ratios, not absolutes.`,
  );
  out();
}
