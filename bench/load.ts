/**
 * Section 4: load on the local stack (`npm start`'s code in a child process, DynamoDB Local in memory,
 * the mock provider, the real authorizer and handlers behind the local gateway) with autocannon from
 * this process: polls of a completed task, submits, and a mix, each for a fixed time.
 */
import autocannon from 'autocannon';
import { MAX_BURST, MAX_RATE_PER_SECOND } from '../functions/core/rate-plan';
import { createDocumentClient, type StoreContext } from '../functions/store/client';
import { auditUser, listLedger } from '../functions/store/ledger';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../local/dynamodb-local';
import { spawnLocalStack } from '../local/spawn-local-stack';
import { completedTask, createUser } from './in-process';
import { bounded, bytes, ms, note, onCleanup, out, runCleanups, table } from './support';

export const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS) || 10;
export const LOAD_CONNECTIONS = Number(process.env.BENCH_LOAD_CONNECTIONS) || 20;
const CREDITS = 10_000_000;
const TABLE_NAME = 'generation-bench';

interface RunningStack {
  url: string;
  dynamodbEndpoint: string;
}

/** Starts `local/start.ts` as `npm start` runs it and stops it when the benchmark ends. */
async function startStack(): Promise<RunningStack> {
  const stack = await spawnLocalStack({
    readyTimeoutMs: 90_000,
    stopTimeoutMs: 20_000,
    env: {
      TABLE_NAME,
      LOG_LEVEL: 'error',
      METRICS: 'off',
      // The default refresh interval (30 s), so polls of a pending task mostly hit the store; the
      // sweeper on AWS's schedule (every minute), so it does not run during a 10 s load run.
      PROVIDER_REFRESH_INTERVAL_SECONDS: '30',
      SWEEPER_INTERVAL_SECONDS: '60',
      DYNAMODB_ENDPOINT: '',
      // The per-key usage plan at its ceiling: this measures the service, not its rate limiter (whose
      // 429s would otherwise be most of the answers of one key at full speed).
      KEY_RATE_LIMIT: String(MAX_RATE_PER_SECOND),
      KEY_BURST_LIMIT: String(MAX_BURST),
    },
  });
  onCleanup(async () => {
    note('stopping the local stack');
    await stack.stop();
  });
  return { url: stack.baseUrl, dynamodbEndpoint: stack.dynamodbEndpoint };
}

interface LoadRow {
  name: string;
  result: autocannon.Result;
}

async function run(title: string, options: autocannon.Options): Promise<LoadRow> {
  note(`${title}: ${LOAD_SECONDS} s from ${LOAD_CONNECTIONS} connections`);
  const instance = autocannon({
    ...options,
    title,
    connections: LOAD_CONNECTIONS,
    duration: LOAD_SECONDS,
    timeout: 10,
  });
  try {
    const result = await bounded(title, (LOAD_SECONDS + 30) * 1000, Promise.resolve(instance));
    return { name: title, result };
  } catch (error) {
    instance.stop();
    throw error;
  }
}

export async function loadRuns(): Promise<void> {
  out('## 4. Load on the local stack');
  out();
  let store: StoreContext | undefined;
  try {
    note('starting the local stack (node bin/run-ts.cjs local/start.ts)');
    const stack = await startStack();
    store = {
      doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint }),
      tableName: TABLE_NAME,
    };
    const client = store;
    onCleanup(() => client.doc.destroy());
    const user = await createUser(store, CREDITS);
    const taskId = await completedTask(store, user.userId, user.keyId);

    const auth = { Authorization: `Bearer ${user.apiKey}` };
    const poll: autocannon.Request = { method: 'GET', path: `/api/ai/tasks/${taskId}`, headers: auth };
    const submitBody = JSON.stringify({ model: 'image-model-1', prompt: 'a lighthouse at dusk' });
    let accepted = 0;
    const submit: autocannon.Request = {
      method: 'POST',
      path: '/api/ai/image/generate',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: submitBody,
      onResponse: (status, body, context) => {
        if (status !== 202) return;
        accepted++;
        context.taskId = (JSON.parse(body) as { taskId?: string }).taskId;
      },
    };

    // One request of each kind first: a setup problem should fail here, not as 20 000 errors.
    for (const request of [poll, submit]) {
      const response = await bounded(
        'pre-flight request',
        10_000,
        fetch(`${stack.url}${request.path}`, { method: request.method, headers: request.headers, body: request.body }),
      );
      const text = await response.text();
      if (!response.ok)
        throw new Error(`pre-flight ${request.method} ${request.path} answered ${response.status}: ${text}`);
      if (request === submit) accepted++;
    }

    const rows: LoadRow[] = [];
    rows.push(await run('(a) GET poll of a completed task', { url: stack.url, requests: [poll] }));
    rows.push(await run('(b) POST submit (image-model-1, 3 credits)', { url: stack.url, requests: [submit] }));
    rows.push(
      await run('(c) mix: submit, poll it, 2 polls of a completed task', {
        url: stack.url,
        requests: [
          submit,
          {
            method: 'GET',
            headers: auth,
            // Polls the task this connection just submitted: pending, and within the refresh interval the
            // submit started, so the claim is lost and the stored record answers.
            setupRequest: (request, context) =>
              typeof context.taskId === 'string' ? { ...request, path: `/api/ai/tasks/${context.taskId}` } : undefined,
          },
          poll,
          poll,
        ],
      }),
    );
    // Requests still in flight when a run stopped finish on the server; let them land before the audit.
    await new Promise((r) => setTimeout(r, 2000));
    const audit = await auditUser(store, user.userId);
    // Less the debit of the completed task made for the polls.
    const debits = (await listLedger(store, user.userId)).filter((entry) => entry.kind === 'debit').length - 1;

    out(
      `autocannon ${LOAD_CONNECTIONS} connections, ${LOAD_SECONDS} s per run, loopback. The stack runs in its own ` +
        'Node process (the bundled TypeScript, as `npm start`), LOG_LEVEL=error, METRICS=off, DynamoDB Local in ' +
        'memory, the authorizer cache at its 60 s default (so nearly every request is a cache hit), ' +
        'PROVIDER_REFRESH_INTERVAL_SECONDS=30, the sweeper every 60 s. Latency in ms.',
    );
    out();
    table(
      ['Run', 'requests', 'req/s (mean)', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors', 'timeouts'],
      rows.map(({ name, result }) => [
        name,
        bytes(result.requests.total),
        result.requests.average.toFixed(0),
        ms(result.latency.p50),
        ms(result.latency.p90),
        ms(result.latency.p99),
        ms(result.latency.max),
        result.non2xx,
        result.errors,
        result.timeouts,
      ]),
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    );
    const failed = rows.filter(({ result }) => result.non2xx > 0 || result.errors > 0 || result.timeouts > 0);
    for (const { name, result } of failed) {
      out(
        `FAIL ${name}: ${result.non2xx} non-2xx (4xx ${result['4xx']}, 5xx ${result['5xx']}), ` +
          `${result.errors} errors, ${result.timeouts} timeouts`,
      );
    }
    if (failed.length === 0) out('PASS no non-2xx responses, no errors, no timeouts in any run');
    const inFlightMax = 2 * LOAD_CONNECTIONS;
    const ledgerOk = audit.ok && debits >= accepted && debits <= accepted + inFlightMax;
    out(
      `${ledgerOk ? 'PASS' : 'FAIL'} ledger: balance ${bytes(audit.balance)} = sum of ${bytes(audit.entries)} ledger ` +
        `entries (${audit.ok ? 'yes' : 'NO'}); ${bytes(accepted)} submits answered 202 and ${bytes(debits)} tasks ` +
        `were debited (the ${debits - accepted} more were in flight when a run stopped; at most ${inFlightMax})`,
    );
    out();
  } finally {
    await runCleanups();
  }
}
