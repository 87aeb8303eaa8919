/**
 * Section 7: the event pipeline. How long after the provider finished a task it reads status 1 on the
 * local stack (`local/start.ts` as `npm start` runs it, default 30 s refresh interval, sweeper every
 * 10 s): with the provider's callback, and with the callback dropped (polling and the sweeper only).
 *
 * The mock finishes a task `mockDelayMs` after creating it, and creates it before the submit answer;
 * so "finished" is taken as submit answered + mockDelayMs (late by the submit's own return trip at
 * most, which makes the figures slightly pessimistic). Status is watched with GETs every 50 ms; with
 * a 30 s interval a GET never asks the provider, so it only observes what callbacks, the media worker
 * and the sweeper did.
 */
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { createDocumentClient } from '../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../local/dynamodb-local';
import { spawnLocalStack } from '../local/spawn-local-stack';
import { bounded, ms, note, onCleanup, out, percentile, table } from './support';

const TABLE_NAME = 'bench-events';
const DELAY_MS = 500;
const TASKS_WITH_CALLBACK = 40;
const TASKS_DROPPED = 10;
const WATCH_MS = 50;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function finishLatency(baseUrl: string, apiKey: string, providerInput: Record<string, unknown>): Promise<number> {
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const submitted = await fetch(`${baseUrl}/api/ai/image/generate`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: 'image-model-1', prompt: 'bench events', providerInput }),
  });
  const { taskId } = (await submitted.json()) as { taskId: string };
  const finishedAt = performance.now() + DELAY_MS;
  await sleep(DELAY_MS);
  for (;;) {
    const answer = await fetch(`${baseUrl}/api/ai/tasks/${taskId}`, { headers });
    const task = (await answer.json()) as { status: number };
    if (task.status === 1) return performance.now() - finishedAt;
    if (task.status === 2) throw new Error(`bench task ${taskId} failed`);
    await sleep(WATCH_MS);
  }
}

export async function eventTimes(): Promise<void> {
  out('## 7. Provider finished -> status 1 (callbacks, media worker)');
  out();
  note('starting the local stack for the event pipeline');
  const stack = await spawnLocalStack({
    readyTimeoutMs: 90_000,
    stopTimeoutMs: 20_000,
    env: {
      TABLE_NAME,
      LOG_LEVEL: 'error',
      METRICS: 'off',
      PROVIDER_REFRESH_INTERVAL_SECONDS: '30',
      SWEEPER_INTERVAL_SECONDS: '10',
      DYNAMODB_ENDPOINT: '',
      // The GET loops measure latency, not the usage plan: lift the key's rate limit out of the way.
      KEY_RATE_LIMIT: '10000',
      KEY_BURST_LIMIT: '5000',
    },
  });
  onCleanup(() => stack.stop());
  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
  const store = { doc, tableName: TABLE_NAME };
  await grantCredits(store, { userId: 'bench-events', amount: 100_000, grantId: 'bench-events' });
  const { apiKey } = await putApiKey(store, { userId: 'bench-events', name: 'bench events' });
  doc.destroy();

  const rows: Array<Array<string | number>> = [];
  for (const [label, count, input] of [
    ['callback (default)', TASKS_WITH_CALLBACK, { mockDelayMs: DELAY_MS }],
    ['callback dropped (poll/sweeper)', TASKS_DROPPED, { mockDelayMs: DELAY_MS, mockCallback: 'drop' }],
  ] as const) {
    note(`${label}: ${count} tasks, 4 at a time`);
    const samples: number[] = [];
    for (let start = 0; start < count; start += 4) {
      const batch = Array.from({ length: Math.min(4, count - start) }, () =>
        bounded(label, 120_000, finishLatency(stack.baseUrl, apiKey, input)),
      );
      samples.push(...(await Promise.all(batch)));
    }
    rows.push([label, count, ms(percentile(samples, 50)), ms(percentile(samples, 99)), ms(Math.max(...samples))]);
  }
  table(['Completion path', 'Tasks', 'p50 ms', 'p99 ms', 'max ms'], rows, ['l', 'r', 'r', 'r', 'r']);
  out();
  await getWhileCopying(stack.baseUrl, apiKey);
  out();
  out(
    'Callbacks: the provider calls back when it finishes, the callback route reads the task at the provider and records its results ready, and the media worker (on the table stream) copies them and sets status 1. Dropped: the sweeper (every 10 s locally, every minute in AWS) or a poll after the 30 s interval finds it.',
  );
  out();
}

const LARGE_BYTES = 200 * 1024 * 1024;
const LARGE_COPIES = 4;
const GET_WINDOW_MS = 5_000;
const GET_LOOPS = 4;

/** GETs of one completed task from GET_LOOPS loops for GET_WINDOW_MS; latencies in ms. */
async function getLatencies(baseUrl: string, apiKey: string, taskId: string): Promise<number[]> {
  const headers = { Authorization: `Bearer ${apiKey}` };
  const samples: number[] = [];
  const deadline = performance.now() + GET_WINDOW_MS;
  await Promise.all(
    Array.from({ length: GET_LOOPS }, async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        const answer = await fetch(`${baseUrl}/api/ai/tasks/${taskId}`, { headers });
        await answer.arrayBuffer();
        if (answer.status !== 200) throw new Error(`GET answered ${answer.status}`);
        samples.push(performance.now() - started);
      }
    }),
  );
  return samples;
}

/** GET latency of a completed task, idle and while the media worker copies large videos. */
async function getWhileCopying(baseUrl: string, apiKey: string): Promise<void> {
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const submit = async (path: string, body: Record<string, unknown>) => {
    const answer = await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return ((await answer.json()) as { taskId: string }).taskId;
  };
  const statusOf = async (taskId: string) => {
    const answer = await fetch(`${baseUrl}/api/ai/tasks/${taskId}`, { headers });
    return ((await answer.json()) as { status: number }).status;
  };
  const done = await submit('/api/ai/image/generate', {
    model: 'image-model-1',
    prompt: 'bench get',
    providerInput: { mockDelayMs: 0 },
  });
  for (let wait = 0; wait < 100 && (await statusOf(done)) === 0; wait++) await sleep(100);

  note(`GET of a completed task, ${GET_LOOPS} loops x ${GET_WINDOW_MS / 1000} s, idle`);
  const idle = await getLatencies(baseUrl, apiKey, done);
  note(`the same while the media worker copies ${LARGE_COPIES} videos of ${LARGE_BYTES / 1024 / 1024} MiB`);
  const large = await Promise.all(
    Array.from({ length: LARGE_COPIES }, () =>
      submit('/api/ai/video/generate', {
        model: 'video-b-2-text-to-video',
        prompt: 'bench large copy',
        inputMode: 'text_to_video',
        providerInput: { mockDelayMs: 0, mockResultBytes: LARGE_BYTES },
      }),
    ),
  );
  await sleep(300); // the callbacks come in and the copies start
  const busy = await getLatencies(baseUrl, apiKey, done);
  const stillCopying = (await Promise.all(large.map(statusOf))).filter((status) => status === 0).length;
  for (let wait = 0; wait < 600 && (await Promise.all(large.map(statusOf))).some((s) => s === 0); wait++) {
    await sleep(500);
  }
  table(
    ['GET of a completed task', 'Requests', 'p50 ms', 'p99 ms'],
    [
      ['idle', idle.length, ms(percentile(idle, 50)), ms(percentile(idle, 99))],
      [
        `while copying (${stillCopying} of ${LARGE_COPIES} still copying at the end)`,
        busy.length,
        ms(percentile(busy, 50)),
        ms(percentile(busy, 99)),
      ],
    ],
    ['l', 'r', 'r', 'r'],
  );
  out();
}
