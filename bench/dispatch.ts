/**
 * Section 11: the dispatcher (README "Dispatching to the provider"), on the local stack as `npm start`
 * runs it, with the mock provider's limits on (Kie's 20 creates per 10 s, refused with 429 beyond) and
 * the dispatcher told the same rate.
 *
 * - Submit p50, createTask instant vs createTask taking 2 s (the mock holds its answer): a submit no
 *   longer waits for the provider. Goal: within 1.5x.
 * - One account's burst of 100 image tasks, then, 2 s later, one task of a second account: the second
 *   account's submit -> status 1 (goal: within 5 s), the burst's makespan against the ideal (the 80
 *   tasks beyond the first window at 2 per second: 40 s; goal: within 1.2x), createTask calls refused
 *   (goal: at most 5%), non-202 answers, and the money of both accounts afterwards.
 */
import { grantCredits } from '../functions/store/accounts';
import { putApiKey } from '../functions/store/api-keys';
import { createDocumentClient } from '../functions/store/client';
import { auditUser } from '../functions/store/ledger';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../local/dynamodb-local';
import { freePorts, spawnLocalStack } from '../local/spawn-local-stack';
import { goal, ms, note, onCleanup, out, percentile, table } from './support';

const TABLE_NAME = 'bench-dispatch';
const RATE = '20/10';
const BURST = 100;
const SUBMITS = 30;
const IMAGE_COST = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Account {
  userId: string;
  apiKey: string;
  credits: number;
}

export async function dispatchFigures(): Promise<void> {
  out("## 11. Dispatching at the provider's pace (one shared upstream)");
  out();
  note('starting the local stack with the mock limited to 20 creates per 10 s');
  const [mockPort] = await freePorts(1);
  const stack = await spawnLocalStack({
    readyTimeoutMs: 90_000,
    stopTimeoutMs: 20_000,
    env: {
      TABLE_NAME,
      LOG_LEVEL: 'error',
      METRICS: 'off',
      DYNAMODB_ENDPOINT: '',
      MOCK_PROVIDER_PORT: String(mockPort),
      MOCK_PROVIDER_CREATE_RATE_LIMIT: RATE,
      PROVIDER_CREATE_RATE_LIMIT: RATE,
      KEY_RATE_LIMIT: '10000',
      KEY_BURST_LIMIT: '5000',
    },
  });
  onCleanup(() => stack.stop());
  const mock = `http://127.0.0.1:${mockPort}`;
  const control = async (body: Record<string, unknown>) => {
    const answer = await fetch(`${mock}/__control`, { method: 'POST', body: JSON.stringify(body) });
    if (!answer.ok) throw new Error(`mock control answered ${answer.status}`);
  };
  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
  const store = { doc, tableName: TABLE_NAME };
  const account = async (userId: string, credits: number): Promise<Account> => {
    await grantCredits(store, { userId, amount: credits, grantId: userId });
    const { apiKey } = await putApiKey(store, { userId, name: 'bench dispatch' });
    return { userId, apiKey, credits };
  };
  const submit = async (who: Account): Promise<{ status: number; taskId?: string; ms: number }> => {
    const started = performance.now();
    const answer = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${who.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'image-model-1', prompt: 'bench dispatch', providerInput: { mockDelayMs: 0 } }),
    });
    const body = (await answer.json()) as { taskId?: string };
    return { status: answer.status, ...(body.taskId ? { taskId: body.taskId } : {}), ms: performance.now() - started };
  };
  const statusOf = async (who: Account, taskId: string): Promise<number> => {
    const answer = await fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}`, {
      headers: { Authorization: `Bearer ${who.apiKey}` },
    });
    return ((await answer.json()) as { status: number }).status;
  };
  /** Waits until every task is terminal, checking each pending one every `everyMs`; when each ended. */
  const untilDone = async (who: Account, taskIds: string[], everyMs: number): Promise<Map<string, number>> => {
    const ended = new Map<string, number>();
    while (ended.size < taskIds.length) {
      const pending = taskIds.filter((id) => !ended.has(id));
      const statuses = await Promise.all(pending.map((id) => statusOf(who, id)));
      statuses.forEach((status, index) => {
        if (status !== 0) ended.set(pending[index] ?? '', performance.now());
      });
      if (ended.size < taskIds.length) await sleep(everyMs);
    }
    return ended;
  };

  // Submit latency: createTask instant, then held 2 s by the mock.
  const latency = await account('bench-dispatch-latency', 10_000);
  const submitRows: Array<Array<string | number>> = [];
  const p50s: number[] = [];
  let latencyNon202 = 0;
  for (const [label, createLatencyMs] of [
    ['createTask instant', 0],
    ['createTask 2 s', 2000],
  ] as const) {
    await control({ createLatencyMs });
    const samples: number[] = [];
    const taskIds: string[] = [];
    for (let i = 0; i < SUBMITS; i++) {
      const answer = await submit(latency);
      if (answer.status !== 202) latencyNon202++;
      if (answer.taskId) taskIds.push(answer.taskId);
      samples.push(answer.ms);
    }
    p50s.push(percentile(samples, 50));
    submitRows.push([label, SUBMITS, ms(percentile(samples, 50)), ms(percentile(samples, 99))]);
    note(`${label}: waiting for the ${SUBMITS} tasks to finish before the next run`);
    await untilDone(latency, taskIds, 1000);
  }
  await control({ createLatencyMs: null });
  table(['Upstream', 'Submits', 'p50 ms', 'p99 ms'], submitRows, ['l', 'r', 'r', 'r']);
  out();
  const [instant = 1, slow = 1] = p50s;
  goal(
    'submit p50 with a 2 s createTask within 1.5x of an instant one',
    slow <= 1.5 * instant,
    `${(slow / instant).toFixed(2)}x`,
  );

  // Burst: 100 tasks of one account, then one of another.
  note('burst: 100 tasks of one account, 2 s later one task of a second account');
  await sleep(11_000); // an empty window at the mock, as at the start of a day
  await control({ resetStats: true });
  const burst = await account('bench-dispatch-burst', BURST * IMAGE_COST);
  const other = await account('bench-dispatch-other', 10);
  const started = performance.now();
  const startedAt = Date.now();
  const burstAnswers = await Promise.all(Array.from({ length: BURST }, () => submit(burst)));
  await sleep(Math.max(0, 2000 - (performance.now() - started)));
  const otherStarted = performance.now();
  const otherAnswer = await submit(other);
  const otherDone = untilDone(other, otherAnswer.taskId ? [otherAnswer.taskId] : [], 100);
  const burstIds = burstAnswers.flatMap((answer) => (answer.taskId ? [answer.taskId] : []));
  const [burstEnded, otherEnded] = await Promise.all([untilDone(burst, burstIds, 1000), otherDone]);
  const makespanMs = Math.max(...burstEnded.values()) - started;
  const otherMs = Math.max(...otherEnded.values()) - otherStarted;
  const stats = (await (await fetch(`${mock}/__stats`)).json()) as {
    createTaskCalls: number;
    createTaskRefused: number;
    lastCreatedAt: number;
  };
  // The dispatch makespan: until the provider created the last task (the mock's clock is this machine's).
  const dispatchMs = stats.lastCreatedAt - startedAt;
  const non202 = [...burstAnswers, otherAnswer].filter((answer) => answer.status !== 202).length + latencyNon202;
  const idealMs = ((BURST - 20) / 2) * 1000;
  const audits = await Promise.all([burst, other, latency].map((who) => auditUser(store, who.userId)));
  doc.destroy();
  const moneyExact = audits.every((audit) => audit.ok);
  const refusedShare = stats.createTaskCalls === 0 ? 0 : stats.createTaskRefused / stats.createTaskCalls;
  table(
    ['Figure', 'Value'],
    [
      ['second account: submit -> status 1', `${ms(otherMs)} ms`],
      ['burst makespan: submit -> last task created upstream', `${ms(dispatchMs)} ms`],
      ['burst: submit -> last task read status 1 (1 s polls of 100 tasks)', `${ms(makespanMs)} ms`],
      ['ideal makespan (80 beyond the first window / 2 per s)', `${ms(idealMs)} ms`],
      ['createTask calls / refused (429)', `${stats.createTaskCalls} / ${stats.createTaskRefused}`],
      ['non-202 answers (all submits of this section)', non202],
      ['money (ledger = balances, every account)', moneyExact ? 'exact' : 'NOT EXACT'],
      ['balances after', audits.map((audit) => audit.balance).join(', ')],
    ],
    ['l', 'r'],
  );
  out();
  goal('second account served within 5 s', otherMs <= 5000, `${ms(otherMs)} ms`);
  goal('makespan within 1.2x of the ideal', dispatchMs <= 1.2 * idealMs, `${(dispatchMs / idealMs).toFixed(2)}x`);
  goal('at most 5% of createTask calls refused', refusedShare <= 0.05, `${(refusedShare * 100).toFixed(1)}%`);
  goal(
    'no non-202 answer, money exact',
    non202 === 0 && moneyExact,
    `${non202} non-202, money ${moneyExact ? 'exact' : 'NOT exact'}`,
  );
}
