/**
 * Part of section `faults` (bench/faults.ts): creates whose answer is lost (docs/design/dispatching.md, "Outcome unknown"), on the
 * local stack as `npm start` runs it (callbacks on, through its gateway), with the mock at Kie's 20
 * creates per 10 s and the dispatcher told the same rate. The mock creates the task and drops the
 * connection unanswered (`answer_lost`) for 2 of the N creates; each task must then be completed through
 * the callback that names the upstream's task, never created twice.
 *
 * - Upstream creates per task (goal: 1.00), tasks completed, tasks failed.
 * - Money: every account's ledger equals its balance, and the balance is what the completed tasks cost.
 */
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { auditUser } from '../functions/store/ledger';
import { goal, ms, out, startPacedBenchStack, table } from './support';

const TABLE_NAME = 'bench-faults-lost-answers';
const RATE = '20/10';
const TASKS = 20;
const LOST = 2;
const IMAGE_COST = 3;
const CREDITS = 1000;
/** The longest the run waits for its tasks to end (the unknown outcome's limit is 10 minutes). */
const RUN_BUDGET_MS = 300_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Upstream creates per task with 2 of N answers lost, and the money (a local stack of its own). */
export async function lostAnswerFigures(): Promise<void> {
  out('### Creates whose answer is lost (outcome unknown)');
  out();
  const { stack, mock, control, store } = await startPacedBenchStack(TABLE_NAME, RATE);
  const userId = 'bench-faults';
  await grantCredits(store, { userId, amount: CREDITS, grantId: userId });
  const { apiKey } = await putApiKey(store, { userId, name: 'bench faults' });
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };

  await control({ resetStats: true, createFault: 'answer_lost', createFaultTimes: LOST });
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: TASKS }, async () => {
      const answer = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'image-model-1', prompt: 'bench faults', providerInput: { mockDelayMs: 500 } }),
      });
      return { status: answer.status, taskId: ((await answer.json()) as { taskId?: string }).taskId };
    }),
  );
  const taskIds = answers.flatMap((answer) => (answer.taskId ? [answer.taskId] : []));
  const statuses = new Map<string, number>();
  const deadline = Date.now() + RUN_BUDGET_MS;
  while (statuses.size < taskIds.length && Date.now() < deadline) {
    for (const taskId of taskIds.filter((id) => !statuses.has(id))) {
      const answer = await fetch(`${stack.baseUrl}/api/ai/tasks/${taskId}`, { headers });
      const { status } = (await answer.json()) as { status: number };
      if (status !== 0) statuses.set(taskId, status);
    }
    if (statuses.size < taskIds.length) await sleep(1000);
  }
  const elapsedMs = performance.now() - started;
  const stats = (await (await fetch(`${mock}/__stats`)).json()) as { createTaskCalls: number; tasksCreated: number };
  await control({ createFault: null, createFaultTimes: null });
  const completed = [...statuses.values()].filter((status) => status === 1).length;
  const failed = [...statuses.values()].filter((status) => status === 2).length;
  const audit = await auditUser(store, userId);
  const moneyExact = audit.ok && audit.balance === CREDITS - completed * IMAGE_COST;
  const perTask = taskIds.length === 0 ? 0 : stats.tasksCreated / taskIds.length;

  table(
    ['Figure', `${LOST} of ${TASKS} answers lost`],
    [
      ['tasks accepted (202)', taskIds.length],
      ['upstream creates (tasks created) / createTask calls', `${stats.tasksCreated} / ${stats.createTaskCalls}`],
      ['upstream creates per task', perTask.toFixed(2)],
      ['completed / failed / still pending', `${completed} / ${failed} / ${taskIds.length - statuses.size}`],
      ['first submit -> last task read ended (1 s polls)', `${ms(elapsedMs)} ms`],
      ['balance / expected (credits - completed x 3)', `${audit.balance} / ${CREDITS - completed * IMAGE_COST}`],
    ],
    ['l', 'r'],
  );
  out();
  goal('upstream creates per task 1.00', stats.tasksCreated === taskIds.length, perTask.toFixed(2));
  goal(
    'every task completed, money exact',
    completed === TASKS && moneyExact,
    `${completed}/${TASKS} completed, money ${moneyExact ? 'exact' : 'NOT exact'}`,
  );
}
