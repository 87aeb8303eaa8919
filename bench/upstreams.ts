/**
 * Section `upstreams` (docs/guides/upstreams.md): the local stack as `npm start` runs it with
 * `MOCK_UPSTREAMS=2`, each mock limited to Kie's 20 creates per 10 s and the dispatcher told the same.
 *
 * - 200 image tasks from one account: makespan (first submit to last create) against the ideal at 4
 *   creates per second (50 s; one upstream alone needs 100 s), creates refused (goal: 0).
 * - The same with mock-1 failing every create (500) from 10 s into the burst: tasks failed (goal: 0),
 *   the rest dispatched against what mock-2 alone allows (goal: within 1.3x), and a second account's
 *   task submitted meanwhile sent within 5 s.
 * - The money of both accounts afterwards (the ledger audit, balance = grants - debits).
 */
import { createServer } from 'node:net';
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { createDocumentClient } from '../functions/store/client';
import { auditUser } from '../functions/store/ledger';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../local/dynamodb-local';
import { spawnLocalStack } from '../local/spawn-local-stack';
import { goal, note, onCleanup, out, table } from './support';

const RATE = '20/10';
const TASKS = 200;
const CREDITS = 100_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface CreateLogEntry {
  at: number;
  created: boolean;
  prompt: string;
}

/**
 * A free port whose next four are free too: mock-1, mock-2, the OpenID provider, the API, DynamoDB
 * Local (kept out of the ephemeral range, which other processes on a busy machine draw from).
 */
async function freeRun(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    let all = true;
    for (let port = base; port < base + 5 && all; port++) all = await free(port);
    if (all) return base;
  }
}

export async function upstreamFigures(): Promise<void> {
  out('## Two upstreams: capacity that adds up, and failover');
  out();
  note(`starting the local stack with two mock upstreams, each limited to ${RATE.replace('/', ' creates per ')} s`);
  const mockPort = await freeRun();
  const stack = await spawnLocalStack({
    readyTimeoutMs: 120_000,
    stopTimeoutMs: 20_000,
    env: {
      TABLE_NAME: 'bench-upstreams',
      LOG_LEVEL: 'error',
      METRICS: 'off',
      DYNAMODB_ENDPOINT: '',
      MOCK_UPSTREAMS: '2',
      MOCK_PROVIDER_PORT: String(mockPort),
      OIDC_PROVIDER_PORT: String(mockPort + 2),
      PORT: String(mockPort + 3),
      DYNAMODB_PORT: String(mockPort + 4),
      MOCK_PROVIDER_CREATE_RATE_LIMIT: RATE,
      PROVIDER_CREATE_RATE_LIMIT: RATE,
      KEY_RATE_LIMIT: '10000',
      KEY_BURST_LIMIT: '5000',
    },
  });
  onCleanup(() => stack.stop());
  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
  onCleanup(async () => doc.destroy());
  const store = { doc, tableName: 'bench-upstreams' };
  const mocks = [`http://127.0.0.1:${mockPort}`, `http://127.0.0.1:${mockPort + 1}`];
  const control = async (mock: string, body: Record<string, unknown>) => {
    const answer = await fetch(`${mock}/__control`, { method: 'POST', body: JSON.stringify(body) });
    if (!answer.ok) throw new Error(`mock control answered ${answer.status}`);
  };
  const stats = async (mock: string) =>
    (await (await fetch(`${mock}/__stats`)).json()) as { createLog: CreateLogEntry[]; createTaskRefused: number };

  const account = async (userId: string) => {
    await grantCredits(store, { userId, amount: CREDITS, grantId: userId });
    const { apiKey } = await putApiKey(store, { userId, name: 'bench upstreams' });
    return { userId, apiKey };
  };
  type Account = Awaited<ReturnType<typeof account>>;
  const submit = async (who: Account, prompt: string): Promise<string> => {
    const answer = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${who.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'image-model-1', prompt, providerInput: { mockDelayMs: 0 } }),
    });
    const body = (await answer.json()) as { taskId?: string };
    if (answer.status !== 202 || !body.taskId) throw new Error(`submit answered ${answer.status}`);
    return body.taskId;
  };
  const status = async (who: Account, taskId: string) => {
    const answer = await fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}`, {
      headers: { Authorization: `Bearer ${who.apiKey}` },
    });
    return ((await answer.json()) as { status: number }).status;
  };
  const priceOf = async (who: Account, taskId: string) => {
    const answer = await fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}`, {
      headers: { Authorization: `Bearer ${who.apiKey}` },
    });
    return Number(((await answer.json()) as { creditsUsed?: number }).creditsUsed);
  };
  const allEnded = async (who: Account, taskIds: readonly string[]) => {
    const ended = new Map<string, number>();
    while (ended.size < taskIds.length) {
      for (const taskId of taskIds.filter((id) => !ended.has(id))) {
        const value = await status(who, taskId);
        if (value !== 0) ended.set(taskId, value);
      }
      if (ended.size < taskIds.length) await sleep(1000);
    }
    return [...ended.values()];
  };
  /** Creates (answered with a task) at both mocks, with their prompts, after `since`. */
  const creates = async (prefix: string) =>
    (await Promise.all(mocks.map(async (mock) => (await stats(mock)).createLog)))
      .flat()
      .filter((entry) => entry.created && entry.prompt.startsWith(prefix));
  const refused = async () => (await Promise.all(mocks.map(stats))).reduce((sum, s) => sum + s.createTaskRefused, 0);
  const burst = async (who: Account, prefix: string) => {
    const ids: string[] = [];
    for (let start = 0; start < TASKS; start += 20) {
      ids.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(20, TASKS - start) }, (_, i) => submit(who, `${prefix} ${start + i}`)),
        )),
      );
    }
    return ids;
  };
  const waitForCreates = async (prefix: string, count: number) => {
    for (;;) {
      const made = await creates(prefix);
      if (made.length >= count) return made;
      await sleep(250);
    }
  };

  // 1. 200 tasks over two upstreams.
  await sleep(11_000);
  for (const mock of mocks) await control(mock, { resetStats: true });
  const one = await account('bench-upstreams-one');
  const startedAt = Date.now();
  const ids = await burst(one, 'burst');
  // On a loaded machine the submits themselves can take longer than the ideal makespan: shown apart.
  const submitsOne = Date.now() - startedAt;
  const made = await waitForCreates('burst', TASKS);
  const makespan = Math.max(...made.map((entry) => entry.at)) - startedAt;
  const refusedOne = await refused();
  const endsOne = await allEnded(one, ids);

  // 2. The same with mock-1 failing from 10 s into the burst.
  note('second run: waiting for empty windows at both mocks');
  await sleep(11_000);
  for (const mock of mocks) await control(mock, { resetStats: true });
  const two = await account('bench-upstreams-failover');
  const other = await account('bench-upstreams-other');
  const failing = (async () => {
    await sleep(10_000);
    await control(mocks[0] ?? '', { createFault: 'http_500' });
    return Date.now();
  })();
  const idsTwo = await burst(two, 'failover');
  const faultAt = await failing;
  const madeBeforeFault = (await creates('failover')).filter((entry) => entry.at <= faultAt).length;
  await sleep(5_000);
  const otherSubmitted = Date.now();
  await submit(other, 'other account');
  const [otherCreate] = await waitForCreates('other account', 1);
  const madeTwo = await waitForCreates('failover', TASKS);
  const lastTwo = Math.max(...madeTwo.map((entry) => entry.at));
  const endsTwo = await allEnded(two, idsTwo);
  await control(mocks[0] ?? '', { createFault: null });
  // What mock-2 alone allows for the rest: 2 creates per second.
  const rest = TASKS - madeBeforeFault;
  const restIdeal = (rest / 2) * 1000;
  const restActual = lastTwo - faultAt;
  const otherWait = (otherCreate?.at ?? Number.NaN) - otherSubmitted;

  const audits = await Promise.all([one, two, other].map((who) => auditUser(store, who.userId)));
  table(
    ['Run', 'figure'],
    [
      [
        `${TASKS} tasks, one account, 2 upstreams at ${RATE}: makespan (ideal 50 s)`,
        `${(makespan / 1000).toFixed(1)} s (${(makespan / 50_000).toFixed(2)}x)`,
      ],
      ['  of which submitting the 200 (20 at a time)', `${(submitsOne / 1000).toFixed(1)} s`],
      ['  creates refused', refusedOne],
      ['  tasks failed', endsOne.filter((value) => value === 2).length],
      [`same, mock-1 failing from 10 s: tasks failed`, endsTwo.filter((value) => value === 2).length],
      [
        `  the ${rest} after the fault, against mock-2 alone (${(restIdeal / 1000).toFixed(0)} s)`,
        `${(restActual / 1000).toFixed(1)} s (${(restActual / restIdeal).toFixed(2)}x)`,
      ],
      ["  a second account's task, submit to create", `${(otherWait / 1000).toFixed(1)} s`],
      ['money: audits ok', audits.every((audit) => audit.ok) ? 'yes' : 'NO'],
    ],
    ['l', 'r'],
  );
  out();
  goal(
    'makespan within 1.2x of the ideal at 4 creates per second',
    makespan <= 60_000,
    `${(makespan / 1000).toFixed(1)} s`,
  );
  goal('no create refused', refusedOne === 0, String(refusedOne));
  goal(
    '0 tasks failed with one upstream failing',
    endsTwo.every((value) => value === 1),
    `${endsTwo.filter((v) => v !== 1).length} not completed`,
  );
  goal(
    'the rest within 1.3x of what upstream 2 alone allows',
    restActual <= restIdeal * 1.3,
    `${(restActual / restIdeal).toFixed(2)}x`,
  );
  goal("a second account's task sent within 5 s", otherWait <= 5_000, `${(otherWait / 1000).toFixed(1)} s`);
  // One debit at the service's price per completed task, whichever upstream served it; none refunded.
  const price = await priceOf(one, ids[0] ?? '');
  const expected = [endsOne, endsTwo, [1]].map((ends) => CREDITS - ends.filter((value) => value === 1).length * price);
  goal(
    'money exact: every audit ok, balance = grant - price x completed tasks',
    audits.every((audit, index) => audit.ok && audit.balance === expected[index]),
    audits.map((audit, index) => `${audit.balance}/${expected[index]}`).join(', '),
  );
}
