/**
 * Section `faults`: the dispatcher on an upstream's bad days (docs/design/dispatching.md), on the local
 * stack as `npm start` runs it, the mock limited to Kie's 20 creates per 10 s and the dispatcher told
 * the same rate. Each run starts on an empty window at the mock.
 *
 * - One `503` with `Retry-After: 3600` on a create of one model: the time until another account's task
 *   of another model is sent, until another account's task of the same model is sent, and until the
 *   refused task completes (the service honours at most `PROVIDER_MAX_RETRY_AFTER_SECONDS`, 60 s).
 * - Every create of one model answered `503` (no `Retry-After`) while one account keeps submitting it:
 *   another account's tasks of another model, submit -> status 1, against the same run unfaulted (goal:
 *   within 1.5x); the faulted model's tasks end refunded.
 * - Money of every account afterwards (the ledger audit).
 * - Creates whose answer is lost, 2 of 20 (bench/faults-lost-answers.ts, on a stack of its own):
 *   upstream creates per task (goal: 1.00) and the money.
 */
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { auditUser } from '../functions/store/ledger';
import { lostAnswerFigures } from './faults-lost-answers';
import { goal, ms, note, out, percentile, startPacedBenchStack, table } from './support';

const TABLE_NAME = 'bench-faults';
const RATE = '20/10';
/** The provider's name of the model the faults hit (the mock profile's mapping of image-model-1). */
const FAULTED_MODEL = 'image-model-1';
const FAULTED_PROVIDER_MODEL = 'provider/image-model-1';
const OTHER_MODEL = 'image-model-4';
const OTHER_TASKS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Account {
  userId: string;
  apiKey: string;
}

interface CreateLogEntry {
  at: number;
  created: boolean;
  prompt: string;
}

export async function faultFigures(): Promise<void> {
  out("## Upstream faults: bounded waits, one model's failures kept to that model");
  out();
  const { stack, mock, control, store } = await startPacedBenchStack(TABLE_NAME, RATE);
  const createLog = async (): Promise<CreateLogEntry[]> =>
    ((await (await fetch(`${mock}/__stats`)).json()) as { createLog: CreateLogEntry[] }).createLog;
  const accounts: Account[] = [];
  const account = async (userId: string): Promise<Account> => {
    await grantCredits(store, { userId, amount: 10_000, grantId: userId });
    const { apiKey } = await putApiKey(store, { userId, name: 'bench faults' });
    const made = { userId, apiKey };
    accounts.push(made);
    return made;
  };
  const submit = async (who: Account, model: string, prompt: string): Promise<string> => {
    const answer = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${who.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model, prompt, providerInput: { mockDelayMs: 0 } }),
    });
    const body = (await answer.json()) as { taskId?: string };
    if (answer.status !== 202 || !body.taskId) throw new Error(`submit answered ${answer.status}`);
    return body.taskId;
  };
  const statusOf = async (who: Account, taskId: string): Promise<number> => {
    const answer = await fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}`, {
      headers: { Authorization: `Bearer ${who.apiKey}` },
    });
    return ((await answer.json()) as { status: number }).status;
  };
  /** Resolves with the epoch ms at which the task was seen terminal (polled every 100 ms) and its status. */
  const ended = async (who: Account, taskId: string): Promise<{ at: number; status: number }> => {
    for (;;) {
      const status = await statusOf(who, taskId);
      if (status !== 0) return { at: Date.now(), status };
      await sleep(100);
    }
  };
  /** The epoch ms of the first create with this prompt at the mock (polled every 100 ms). */
  const sentAt = async (prompt: string): Promise<number> => {
    for (;;) {
      const entry = (await createLog()).find((line) => line.created && line.prompt === prompt);
      if (entry) return entry.at;
      await sleep(100);
    }
  };
  const freshWindow = async (label: string) => {
    note(`${label}: waiting for an empty window at the mock`);
    await sleep(11_000);
    await control({ resetStats: true });
  };

  // 1. One 503 with Retry-After: 3600 on one create.
  await freshWindow('Retry-After 3600');
  const refusedAccount = await account('bench-faults-refused');
  const otherModelAccount = await account('bench-faults-other-model');
  const sameModelAccount = await account('bench-faults-same-model');
  await control({
    createFault: 'http_503',
    createFaultTimes: 1,
    createFaultModel: FAULTED_PROVIDER_MODEL,
    faultRetryAfter: '3600',
  });
  const refusedTask = await submit(refusedAccount, FAULTED_MODEL, 'bench faults refused');
  // Once the refused create reached the mock (its one call so far), the other accounts submit.
  const createCalls = async () =>
    ((await (await fetch(`${mock}/__stats`)).json()) as { createTaskCalls: number }).createTaskCalls;
  while ((await createCalls()) < 1) await sleep(50);
  const refusedAt = Date.now();
  await submit(otherModelAccount, OTHER_MODEL, 'bench faults other model');
  const sameModelTask = await submit(sameModelAccount, FAULTED_MODEL, 'bench faults same model');
  const [otherSent, sameSent, refusedEnd] = await Promise.all([
    sentAt('bench faults other model'),
    sentAt('bench faults same model'),
    ended(refusedAccount, refusedTask),
    ended(sameModelAccount, sameModelTask),
  ]);
  await control({ createFault: null, createFaultTimes: null, createFaultModel: null, faultRetryAfter: null });
  table(
    ['After one 503 with Retry-After: 3600 (model A)', 's after the refusal'],
    [
      ["another account's task of model B sent", (Math.max(0, otherSent - refusedAt) / 1000).toFixed(1)],
      ["another account's task of model A sent", (Math.max(0, sameSent - refusedAt) / 1000).toFixed(1)],
      [
        `the refused task ended (status ${refusedEnd.status})`,
        (Math.max(0, refusedEnd.at - refusedAt) / 1000).toFixed(1),
      ],
    ],
    ['l', 'r'],
  );
  out();
  goal(
    'no task waits out the upstream hour: the refused task ends within the 60 s bound (and a pace step)',
    refusedEnd.at - refusedAt <= 70_000,
    `${ms(refusedEnd.at - refusedAt)} ms`,
  );
  goal(
    "another model's task is sent within a pace step of the refusal",
    otherSent - refusedAt <= 1_000,
    `${ms(otherSent - refusedAt)} ms`,
  );

  // 2. One model failing throughout, another model's tasks alongside.
  const otherModelRun = async (label: string, faulted: boolean): Promise<{ p50: number; refunded: number }> => {
    await freshWindow(label);
    const noisy = await account(`bench-faults-noisy-${label}`);
    const quiet = await account(`bench-faults-quiet-${label}`);
    if (faulted) await control({ createFault: 'http_503', createFaultModel: FAULTED_PROVIDER_MODEL });
    const noisyTasks: string[] = [];
    const durations: number[] = [];
    for (let i = 0; i < OTHER_TASKS; i++) {
      // The faulted model's submits keep coming, one before each task of the other model.
      noisyTasks.push(await submit(noisy, FAULTED_MODEL, `bench faults noisy ${i}`));
      const started = Date.now();
      const taskId = await submit(quiet, OTHER_MODEL, `bench faults quiet ${i}`);
      durations.push((await ended(quiet, taskId)).at - started);
    }
    // The faulted model's tasks end at their refusal limit, one refusal per model backoff (up to a
    // minute each): those still queued now are cancelled (refunded) rather than waited for.
    const noisyStatuses = await Promise.all(noisyTasks.map((taskId) => statusOf(noisy, taskId)));
    await control({ createFault: null, createFaultModel: null });
    await Promise.all(
      noisyTasks.map((taskId) =>
        fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}/cancel`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${noisy.apiKey}` },
        }).then((answer) => answer.body?.cancel()),
      ),
    );
    await Promise.all(noisyTasks.map((taskId) => ended(noisy, taskId)));
    return { p50: percentile(durations, 50), refunded: noisyStatuses.filter((status) => status === 2).length };
  };
  const clean = await otherModelRun('unfaulted', false);
  const faulted = await otherModelRun('model A failing', true);
  table(
    [
      'Run',
      `model B submit -> status 1, p50 ms (${OTHER_TASKS} tasks)`,
      'model A tasks ended by their refusal limit by then (refunded)',
    ],
    [
      ['unfaulted', ms(clean.p50), clean.refunded],
      ['every create of model A answered 503', ms(faulted.p50), faulted.refunded],
    ],
    ['l', 'r', 'r'],
  );
  out();
  goal(
    "one model's failures leave another model's tasks within 1.5x of the unfaulted run",
    faulted.p50 <= 1.5 * clean.p50,
    `${(faulted.p50 / clean.p50).toFixed(2)}x`,
  );

  const audits = await Promise.all(accounts.map((who) => auditUser(store, who.userId)));
  goal(
    'money exact for every account (ledger audit)',
    audits.every((audit) => audit.ok),
    `${audits.filter((audit) => audit.ok).length}/${audits.length} accounts`,
  );
  await lostAnswerFigures();
}
