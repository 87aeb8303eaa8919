/**
 * Section: waiting in one request (issue 40), on the local stack as `npm start` runs it (the mock
 * provider's callbacks, the media worker), with Kie's create rate on the mock and the dispatcher.
 *
 * - Image task, submit to result: `Prefer: wait=20` (then `?wait=20` reads should it answer 202)
 *   against submit-then-poll every 2 s (p50, p95).
 * - Read wait: from the task's end (its `updatedAt`, written by the completing write) to the answer of
 *   a `GET ?wait=20` held since the submit (goal: p95 within 1 s).
 * - `estimatedStartAt` of a queued burst across two accounts against the actual start (the moment the
 *   task's record first shows it at the provider, read every 250 ms): median and p95 of the error.
 */
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { getTask } from '../functions/store/tasks';
import { goal, ms, note, out, percentile, startPacedBenchStack, table } from './support';

const RUNS = 12;
const BURST_A = 30;
const BURST_B = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

export async function waitFigures(): Promise<void> {
  out('## Waiting in one request (Prefer: wait, ?wait, estimatedStartAt)');
  out();
  const { stack, store } = await startPacedBenchStack('bench-wait');
  const account = async (userId: string) => {
    await grantCredits(store, { userId, amount: 10_000, grantId: userId });
    return { userId, apiKey: (await putApiKey(store, { userId, name: 'bench wait' })).apiKey };
  };
  const call = async (
    apiKey: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer> => {
    const answer = await fetch(`${stack.baseUrl}${path}`, {
      method: init.body === undefined ? 'GET' : 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  const image = (prompt: string, delay = 1000) => ({
    model: 'image-model-1',
    prompt,
    providerInput: { mockDelayMs: delay },
  });
  const taskPath = (id: unknown) => `/api/ai/tasks/${encodeURIComponent(String(id))}`;
  const a = await account('bench-wait-a');
  const b = await account('bench-wait-b');

  // 1. Submit to result.
  const withWait: number[] = [];
  const withPolling: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    let started = performance.now();
    let answer = await call(a.apiKey, '/api/ai/image/generate', {
      body: image(`wait ${run}`),
      headers: { Prefer: 'wait=20' },
    });
    const id = answer.body.taskId;
    while (answer.body.status === 0) answer = await call(a.apiKey, `${taskPath(id)}?wait=20`);
    withWait.push(performance.now() - started);

    started = performance.now();
    answer = await call(a.apiKey, '/api/ai/image/generate', { body: image(`poll ${run}`) });
    const polled = answer.body.taskId;
    do {
      await sleep(2000);
      answer = await call(a.apiKey, taskPath(polled));
    } while (answer.body.status === 0);
    withPolling.push(performance.now() - started);
  }
  out(`Image task (mock delay 1 s), ${RUNS} runs each, one after another:`);
  out();
  table(
    ['', 'p50 (ms)', 'p95 (ms)'],
    [
      ['submit with `Prefer: wait=20` (then `?wait=20`)', ms(percentile(withWait, 50)), ms(percentile(withWait, 95))],
      ['submit, then poll every 2 s', ms(percentile(withPolling, 50)), ms(percentile(withPolling, 95))],
    ],
    ['l', 'r', 'r'],
  );
  out();

  // 2. From the task's end to the answer of a read that waits for it.
  const lags: number[] = [];
  await Promise.all(
    Array.from({ length: RUNS }, async (_, run) => {
      const submitted = await call(b.apiKey, '/api/ai/image/generate', { body: image(`lag ${run}`, 1500) });
      let answer = await call(b.apiKey, `${taskPath(submitted.body.taskId)}?wait=20`);
      while (answer.body.status === 0) answer = await call(b.apiKey, `${taskPath(submitted.body.taskId)}?wait=20`);
      lags.push(Date.now() - Date.parse(String(answer.body.updatedAt)));
    }),
  );
  out(`Read wait, from the task's end (its updatedAt) to the answer, ${RUNS} tasks at once:`);
  out();
  table(
    ['p50 (ms)', 'p95 (ms)', 'max (ms)'],
    [[ms(percentile(lags, 50)), ms(percentile(lags, 95)), ms(Math.max(...lags))]],
    ['r', 'r', 'r'],
  );
  goal('read wait answers within 1 s of the end (p95)', percentile(lags, 95) <= 1000, ms(percentile(lags, 95)));
  out();

  // 3. estimatedStartAt of a queued burst against the actual start.
  note(`a burst of ${BURST_A} + ${BURST_B} tasks over two accounts, estimates read at once`);
  const burst: { owner: typeof a; taskId: string }[] = [];
  for (let i = 0; i < Math.max(BURST_A, BURST_B); i++) {
    const owners = [...(i < BURST_A ? [a] : []), ...(i < BURST_B ? [b] : [])];
    for (const owner of owners) {
      const answer = await call(owner.apiKey, '/api/ai/image/generate', { body: image(`burst ${i}`, 0) });
      burst.push({ owner, taskId: String(answer.body.taskId) });
    }
  }
  const estimates = new Map<string, number>();
  await Promise.all(
    burst.map(async ({ owner, taskId }) => {
      const answer = await call(owner.apiKey, taskPath(taskId));
      if (typeof answer.body.estimatedStartAt === 'string')
        estimates.set(taskId, Date.parse(answer.body.estimatedStartAt));
    }),
  );
  const started = new Map<string, number>();
  const deadline = Date.now() + 180_000;
  while (started.size < estimates.size && Date.now() < deadline) {
    for (const { owner, taskId } of burst) {
      if (!estimates.has(taskId) || started.has(taskId)) continue;
      const task = await getTask(store, owner.userId, taskId);
      if (task && (task.providerTaskId !== undefined || task.status !== 0)) started.set(taskId, Date.now());
    }
    await sleep(250);
  }
  const errors = [...started].map(([taskId, at]) => (estimates.get(taskId) ?? at) - at);
  const absolute = errors.map(Math.abs);
  out(
    `estimatedStartAt against the actual start, ${estimates.size} of ${burst.length} tasks still queued when read (the others had started), ${started.size} seen starting:`,
  );
  out();
  table(
    ['median error (ms)', 'p95 error (ms)', 'median signed, estimate - actual (ms)', 'largest signed (ms)'],
    [
      [
        ms(percentile(absolute, 50)),
        ms(percentile(absolute, 95)),
        ms(percentile(errors, 50)),
        ms(errors.reduce((m, e) => (Math.abs(e) > Math.abs(m) ? e : m), 0)),
      ],
    ],
    ['r', 'r', 'r', 'r'],
  );
  out();
}
