/**
 * Section 13: spend limits and usage, with the store functions straight on DynamoDB Local.
 *
 * - The accept with and without a spend limit (goal: at most one extra item in the accept
 *   transaction, no extra round trip): latency, DynamoDB requests per accept by command, and the
 *   items of the `TransactWriteItems` (read by a middleware at the SDK's initialize step).
 * - The usage read of a month of an account with 10,000 tasks (`usageReportOf`, by day, key and
 *   model): time and requests, against reading the same month of the ledger back; and whether the
 *   usage totals equal the ledger's debits and refunds of that month.
 */

import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { IMAGE_MODEL_IDS } from '../functions/core/catalog';
import { ServiceBusyError } from '../functions/core/errors';
import type { TaskRecord } from '../functions/core/task';
import { usageReportOf } from '../functions/lifecycle/usage';
import { acceptTask } from '../functions/money/accept';
import { setAccountSpendLimit } from '../functions/money/account-limit';
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { failAndRefund } from '../functions/money/refund';
import { getApiKeyById } from '../functions/store/api-keys';
import type { StoreContext } from '../functions/store/client';
import { USAGE } from '../functions/store/keys';
import { TABLE } from '../functions/store/table';
import * as keys from '../functions/store/task-keys';
import { completeTask, type NewTask } from '../functions/store/tasks';
import { readUsageCounters } from '../functions/store/usage';
import { attachRequestCounter, type RequestCounter } from '../test/support/request-counter';
import { startInProcessEnv } from './in-process';
import { goal, median, ms, note, onCleanup, out, percentile, runCleanups, table } from './support';

const ACCEPTS = 300;
const WARM_UP = 30;
const TASKS = 10_000;
const IN_FLIGHT = 32;
const READ_RUNS = 10;
const MONTH = '2026-11';
const MONTH_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

/** `{ TransactWriteItemsCommand: 2, QueryCommand: 1 }` → `Query 1 + TransactWriteItems 2`. */
function describe(counts: Record<string, number>, per = 1): string {
  const parts = Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([name, n]) => `${name.replace(/Command$/, '')} ${Number.isInteger(n / per) ? n / per : (n / per).toFixed(2)}`,
    );
  return parts.length > 0 ? parts.join(' + ') : 'none';
}

function add(into: Record<string, number>, counts: Record<string, number>): void {
  for (const [name, n] of Object.entries(counts)) into[name] = (into[name] ?? 0) + n;
}

/** A deterministic PRNG (mulberry32), so every run seeds the same month. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Retries a busy answer (nothing written) as a client told 503 would; bounded. */
async function retriedWhileBusy<T>(operation: () => Promise<T>): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof ServiceBusyError) || round >= 50) throw error;
      await new Promise((wait) => setTimeout(wait, Math.random() * 100));
    }
  }
}

/** Runs `jobs` with at most `width` in flight. */
async function pool<T>(jobs: Array<() => Promise<T>>, width: number): Promise<T[]> {
  const results: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const index = next++;
        const job = jobs[index];
        if (job) results[index] = await job();
      }
    }),
  );
  return results;
}

/** The items of each `TransactWriteItems` sent, read at the initialize step (before any retry). */
function attachTransactItemsProbe(store: StoreContext): { last: () => number[]; reset: () => void } {
  const stack = store.doc.middlewareStack as DynamoDBClient['middlewareStack'];
  const name = 'benchTransactItems';
  let seen: number[] = [];
  stack.add(
    (next) => async (args) => {
      const items = (args.input as { TransactItems?: unknown[] }).TransactItems;
      if (Array.isArray(items)) seen.push(items.length);
      return next(args);
    },
    { step: 'initialize', name },
  );
  onCleanup(() => {
    stack.remove(name);
  });
  return {
    last: () => [...seen],
    reset: () => {
      seen = [];
    },
  };
}

export async function spendFigures(): Promise<void> {
  out('## 13. Spend limits and usage: the accept with a limit, a month of usage read back');
  out();
  try {
    const env = await startInProcessEnv();
    const counter = attachRequestCounter(env.store.doc);
    onCleanup(() => counter.detach());
    const probe = attachTransactItemsProbe(env.store);
    await acceptFigures(env.store, counter, probe);
    await usageFigures(env.store, counter);
  } finally {
    await runCleanups();
  }
}

interface Variant {
  label: string;
  fields: Partial<Pick<NewTask, 'userId' | 'keyId' | 'spendLimit' | 'spendLimitVersion'>>;
  latencies: number[];
  counts: Record<string, number>;
  items: Set<number>;
}

async function acceptFigures(
  store: StoreContext,
  counter: RequestCounter,
  probe: ReturnType<typeof attachTransactItemsProbe>,
): Promise<void> {
  const userId = `bench-spend-${randomUUID()}`;
  await grantCredits(store, { userId, amount: 10_000_000 });
  const plain = await putApiKey(store, { userId, name: 'no limit' });
  const limited = await putApiKey(store, {
    userId,
    name: 'daily limit',
    spendLimit: { credits: 1_000_000_000, period: 'day' },
  });
  const record = await getApiKeyById(store, limited.keyId);
  if (!record?.spendLimit) throw new Error('the limited key has no limit');
  // A second account, with the account-wide monthly limit (it never refuses here).
  const limitedAccount = `bench-spend-account-${randomUUID()}`;
  await grantCredits(store, { userId: limitedAccount, amount: 10_000_000 });
  const accountKey = await putApiKey(store, { userId: limitedAccount, name: 'account limit' });
  await setAccountSpendLimit(store, { userId: limitedAccount, credits: 1_000_000_000, now: new Date() });
  const variants: Variant[] = [
    { label: 'session (no key)', fields: {} },
    { label: 'API key, no spend limit', fields: { keyId: plain.keyId } },
    {
      label: 'API key with a daily spend limit',
      fields: { keyId: limited.keyId, spendLimit: record.spendLimit, spendLimitVersion: record.spendLimitVersion },
    },
    { label: 'API key, account with a monthly limit', fields: { userId: limitedAccount, keyId: accountKey.keyId } },
  ].map((variant) => ({ ...variant, latencies: [], counts: {}, items: new Set<number>() }));

  const task = (variant: Variant): NewTask => ({
    userId,
    taskId: randomUUID(),
    type: 'image',
    model: 'image-model-1',
    prompt: 'a lighthouse at dusk',
    request: { model: 'image-model-1', prompt: 'a lighthouse at dusk', numOutputs: 1 },
    creditsUsed: 3,
    now: new Date(),
    ...variant.fields,
  });

  note(`accept: ${WARM_UP} warm-up and ${ACCEPTS} measured accepts per variant, interleaved`);
  for (let round = 0; round < WARM_UP; round++) {
    for (const variant of variants) await acceptTask(store, { task: task(variant) });
  }
  for (let round = 0; round < ACCEPTS; round++) {
    // Interleaved, and the order turned each round, so machine noise and position hit every variant.
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(round + i) % variants.length];
      if (!variant) continue;
      const input = task(variant);
      counter.reset();
      probe.reset();
      const started = performance.now();
      await acceptTask(store, { task: input });
      variant.latencies.push(performance.now() - started);
      add(variant.counts, counter.counts);
      for (const n of probe.last()) variant.items.add(n);
    }
  }

  out(
    `Method: \`acceptTask\` (functions/store/tasks.ts) on DynamoDB Local, one account, image task of 3 credits; ${WARM_UP} ` +
      `warm-up accepts per variant, then ${ACCEPTS} sequential accepts per variant interleaved (the order turned each ` +
      'round); requests counted by a middleware at the SDK deserialize step (every attempt), transaction items by one ' +
      'at the initialize step (`TransactItems.length`); the limit is a daily one that never refuses.',
  );
  out();
  const totalRequests = (counts: Record<string, number>) => Object.values(counts).reduce((sum, n) => sum + n, 0);
  table(
    ['Variant', 'Items in the transaction', 'Requests per accept', 'p50 ms', 'p95 ms'],
    variants.map((variant) => [
      variant.label,
      [...variant.items].sort((a, b) => a - b).join(', '),
      `${totalRequests(variant.counts) / ACCEPTS} (${describe(variant.counts, ACCEPTS)})`,
      ms(median(variant.latencies)),
      ms(percentile(variant.latencies, 95)),
    ]),
    ['l', 'r', 'l', 'r', 'r'],
  );
  const [, withoutLimit, withLimit] = variants;
  if (!withoutLimit || !withLimit) return;
  const extraItems = Math.max(...withLimit.items) - Math.max(...withoutLimit.items);
  const extraRequests = (totalRequests(withLimit.counts) - totalRequests(withoutLimit.counts)) / ACCEPTS;
  goal(
    'a spend limit adds at most one item to the accept transaction and no round trip',
    extraItems <= 1 && extraRequests <= 0,
    `${extraItems} more item(s), ${extraRequests} more request(s) per accept; p50 ${ms(median(withLimit.latencies))} ms ` +
      `against ${ms(median(withoutLimit.latencies))} ms without a limit`,
  );
}

interface Plan {
  day: number;
  at: Date;
  keyId: string | undefined;
  model: string;
  cost: number;
  outcome: 'complete' | 'fail' | 'pending';
  endAt: Date;
}

const MODELS = [...IMAGE_MODEL_IDS.slice(0, 3), 'video-a/v2-1-standard', 'video-d3', 'video-f/1.5-pro'] as const;

function monthDay(day: number, offsetMs = 0): Date {
  return new Date(Date.parse(`${MONTH}-01T00:00:00.000Z`) + day * DAY_MS + offsetMs);
}

/** 10,000 accepts over the month's days; half complete, a fifth fail and are refunded (some days later). */
function planMonth(keyIds: readonly (string | undefined)[]): Plan[] {
  const random = prng(20_261_101);
  return Array.from({ length: TASKS }, (_, i): Plan => {
    const day = Math.floor(random() * MONTH_DAYS);
    const at = monthDay(day, Math.floor(random() * (DAY_MS - 3_600_000)));
    const outcome = i % 10 < 5 ? 'complete' : i % 10 < 7 ? 'fail' : 'pending';
    // Half the refunds a minute later, half 1-3 days later (within the month: the ledger check below
    // compares the month's entries, and a refund is dated on its own day).
    const laterDays = outcome === 'fail' && random() < 0.5 ? 1 + Math.floor(random() * 3) : 0;
    const endDay = Math.min(MONTH_DAYS - 1, day + laterDays);
    const endAt = endDay === day ? new Date(at.getTime() + 60_000) : monthDay(endDay, 3_600_000);
    return {
      day,
      at,
      keyId: keyIds[Math.floor(random() * keyIds.length)],
      model: MODELS[Math.floor(random() * MODELS.length)] ?? 'image-model-1',
      cost: 1 + Math.floor(random() * 20),
      outcome,
      endAt,
    };
  });
}

const count = (n: number): string => n.toLocaleString('en-US');

function seedRow(label: string, transactions: number, seconds: number): string[] {
  return [label, transactions.toLocaleString('en-US'), seconds.toFixed(1), (transactions / seconds).toFixed(0)];
}

interface Read {
  items: number;
  requests: number;
  readUnits: number | undefined;
}

/** Every item of `PK = :pk AND <condition>`, paged, eventually consistent, with the read units consumed. */
async function queryAll(
  store: StoreContext,
  userId: string,
  condition: string,
  values: Record<string, string>,
): Promise<Read & { rows: Array<Record<string, unknown>> }> {
  const rows: Array<Record<string, unknown>> = [];
  let requests = 0;
  let readUnits: number | undefined;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await store.doc.send(
      new QueryCommand({
        TableName: store.tableName,
        KeyConditionExpression: `#pk = :pk AND ${condition}`,
        ExpressionAttributeNames: { '#pk': TABLE.partitionKey, '#sk': TABLE.sortKey },
        ExpressionAttributeValues: { ':pk': keys.account(userId).PK, ...values },
        ReturnConsumedCapacity: 'TOTAL',
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    requests++;
    const units = page.ConsumedCapacity?.CapacityUnits;
    if (units !== undefined) readUnits = (readUnits ?? 0) + units;
    rows.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return { rows, items: rows.length, requests, readUnits };
}

async function usageFigures(store: StoreContext, counter: RequestCounter): Promise<void> {
  const userId = `bench-usage-${randomUUID()}`;
  await grantCredits(store, { userId, amount: 1_000_000, now: new Date('2026-10-01T00:00:00.000Z') });
  const issued: string[] = [];
  for (let i = 1; i <= 5; i++) issued.push((await putApiKey(store, { userId, name: `key ${i}` })).keyId);
  const plans = planMonth([...issued, undefined]);

  note(`usage: seeding ${TASKS.toLocaleString('en-US')} tasks over ${MONTH}, ${IN_FLIGHT} in flight`);
  const seedStarted = performance.now();
  const accepted = await pool(
    plans.map((plan) => async (): Promise<{ plan: Plan; task: TaskRecord }> => {
      const task: NewTask = {
        userId,
        taskId: randomUUID(),
        type: plan.model.startsWith('video') ? 'video' : 'image',
        model: plan.model,
        prompt: 'a month of usage',
        request: { model: plan.model, prompt: 'a month of usage' },
        creditsUsed: plan.cost,
        keyId: plan.keyId,
        now: plan.at,
      };
      return { plan, task: (await retriedWhileBusy(() => acceptTask(store, { task }))).task };
    }),
    IN_FLIGHT,
  );
  const acceptSeconds = (performance.now() - seedStarted) / 1000;
  let lost = 0;
  await pool(
    accepted.map(({ plan, task }) => async () => {
      if (plan.outcome === 'complete') {
        const done = await completeTask(store, {
          userId,
          taskId: task.taskId,
          resultKeys: [`results/${task.taskId}/0.png`],
          now: plan.endAt,
          task,
        });
        if (!done) lost++;
      } else if (plan.outcome === 'fail') {
        const refund = await failAndRefund(store, {
          userId,
          taskId: task.taskId,
          errorCode: 'PROVIDER_ERROR',
          errorMessage: 'failed',
          now: plan.endAt,
          task,
        });
        if (!refund?.refunded) lost++;
      }
    }),
    IN_FLIGHT,
  );
  if (lost > 0) throw new Error(`${lost} completions or refunds of the seed did not take`);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const completes = plans.filter((plan) => plan.outcome === 'complete').length;
  const fails = plans.filter((plan) => plan.outcome === 'fail');
  const refundsLater = fails.filter(
    (plan) => plan.endAt.toISOString().slice(0, 10) !== plan.at.toISOString().slice(0, 10),
  );
  const transactions = TASKS + completes + fails.length;

  const from = `${MONTH}-01`;
  const to = `${MONTH}-${String(MONTH_DAYS).padStart(2, '0')}`;
  const counters = await readUsageCounters(store, { userId, from, to });

  // The reads, interleaved round by round so machine noise hits each of them alike.
  type Sample = { ms: number; requests: number; counted: number; items?: number; readUnits?: number | undefined };
  const reads: Array<{ label: string; samples: Sample[]; run: () => Promise<Omit<Sample, 'ms' | 'counted'>> }> = [
    ...(['day', 'key', 'model'] as const).map((groupBy) => ({
      label: `\`usageReportOf\`, groupBy=${groupBy}`,
      samples: [] as Sample[],
      run: async () => {
        const { requests } = await usageReportOf(store, { userId, query: { from, to, groupBy }, now: new Date() });
        return { requests, items: counters.items.length };
      },
    })),
    {
      label: 'the counter Query alone (same range, own Query)',
      samples: [],
      run: async () => {
        const read = await queryAll(store, userId, '#sk BETWEEN :from AND :to', {
          ':from': `${USAGE}${from}#`,
          ':to': `${USAGE}${to}#~`,
        });
        return { requests: read.requests, items: read.items, readUnits: read.readUnits };
      },
    },
    {
      label: `the ledger of ${MONTH} read back (Query, begins_with \`LEDGER#${MONTH}-\`)`,
      samples: [],
      run: async () => {
        const read = await queryAll(store, userId, 'begins_with(#sk, :month)', { ':month': `LEDGER#${MONTH}-` });
        return { requests: read.requests, items: read.items, readUnits: read.readUnits };
      },
    },
  ];
  note(`usage: ${READ_RUNS} runs of each read, interleaved`);
  // One untimed round first: the first read of a range warms DynamoDB Local's pages and the JIT.
  for (let round = -1; round < READ_RUNS; round++) {
    // The order turned each round: no read always follows the big ledger read (and its garbage).
    for (let i = 0; i < reads.length; i++) {
      const read = reads[(round + 1 + i) % reads.length];
      if (!read) continue;
      counter.reset();
      const started = performance.now();
      const result = await read.run();
      const elapsed = performance.now() - started;
      if (round >= 0) read.samples.push({ ms: elapsed, counted: counter.total(), ...result });
    }
  }

  // The check: usage totals against the ledger's entries dated in the month.
  const ledger = await queryAll(store, userId, 'begins_with(#sk, :month)', { ':month': `LEDGER#${MONTH}-` });
  const inMonth = ledger.rows.filter((row) => String(row.at).startsWith(`${MONTH}-`));
  const ledgerDebited = inMonth.filter((row) => row.kind === 'debit').reduce((sum, row) => sum - Number(row.delta), 0);
  const ledgerRefunded = inMonth
    .filter((row) => row.kind === 'refund')
    .reduce((sum, row) => sum + Number(row.delta), 0);
  const { report } = await usageReportOf(store, { userId, query: { from, to, groupBy: 'day' }, now: new Date() });
  const byKey = (await usageReportOf(store, { userId, query: { from, to, groupBy: 'key' }, now: new Date() })).report;
  const byModel = (await usageReportOf(store, { userId, query: { from, to, groupBy: 'model' }, now: new Date() }))
    .report;
  const planned = {
    debited: plans.reduce((sum, plan) => sum + plan.cost, 0),
    refunded: fails.reduce((sum, plan) => sum + plan.cost, 0),
  };
  const totalsEqual =
    report.totals.debited === ledgerDebited &&
    report.totals.refunded === ledgerRefunded &&
    ledgerDebited === planned.debited &&
    ledgerRefunded === planned.refunded;
  const groupsAgree = [byKey, byModel].every(
    (r) => r.totals.debited === report.totals.debited && r.totals.refunded === report.totals.refunded,
  );

  out(
    `Method: one account seeded with the store functions on DynamoDB Local: ${TASKS.toLocaleString('en-US')} accepts ` +
      `(\`acceptTask\`) at random times over the ${MONTH_DAYS} days of ${MONTH}, 5 API keys and the session, ` +
      `${MODELS.length} models, costs 1-20; then ${completes.toLocaleString('en-US')} completed (\`completeTask\`) and ` +
      `${fails.length.toLocaleString('en-US')} failed and refunded (\`failAndRefund\`), ${refundsLater.length.toLocaleString('en-US')} ` +
      `of them 1-3 days later; ${IN_FLIGHT} in flight, a busy answer retried.`,
  );
  out();
  table(
    ['Seeding', 'Transactions', 'Seconds', 'Per second'],
    [
      seedRow('accepts', TASKS, acceptSeconds),
      seedRow('completions and refunds', transactions - TASKS, seedSeconds - acceptSeconds),
      seedRow('all', transactions, seedSeconds),
    ],
    ['l', 'r', 'r', 'r'],
  );

  out(
    `Method: the month ${from}..${to} read ${READ_RUNS} times per read, interleaved round by round (the order turned ` +
      'each round) after one untimed round; requests counted at the SDK deserialize step (every attempt); items are counter items (at most one per ' +
      'balance shard and day) or ledger entries; read units from `ReturnConsumedCapacity: TOTAL` on our own Queries, ' +
      'eventually consistent as the usage read is (DynamoDB Local reports what DynamoDB would charge).',
  );
  out();
  table(
    ['Read of the month', 'Requests', 'Items read', 'Read units', 'median ms', 'p95 ms'],
    reads.map((read) => {
      const first = read.samples[0];
      const counted = [...new Set(read.samples.map((s) => s.counted))].join(', ');
      const said = [...new Set(read.samples.map((s) => s.requests))].join(', ');
      const times = read.samples.map((s) => s.ms);
      return [
        read.label,
        counted === said ? counted : `${counted} (says ${said})`,
        (first?.items ?? 0).toLocaleString('en-US'),
        first?.readUnits === undefined ? 'n/a' : first.readUnits.toFixed(1),
        ms(median(times)),
        ms(percentile(times, 95)),
      ];
    }),
    ['l', 'r', 'r', 'r', 'r', 'r'],
  );
  out(
    `Counter items of the month: ${counters.items.length} (${counters.requests} Query request(s) by \`readUsageCounters\`), ` +
      `for ${TASKS.toLocaleString('en-US')} tasks; ledger entries of the month: ${ledger.items.toLocaleString('en-US')}.`,
  );
  out();
  out(
    `Totals equal the ledger: ${totalsEqual && groupsAgree ? 'yes' : 'no'} (usage debited ${report.totals.debited.toLocaleString('en-US')}, ` +
      `refunded ${report.totals.refunded.toLocaleString('en-US')}; ledger entries dated in ${MONTH}: debits ` +
      `${ledgerDebited.toLocaleString('en-US')}, refunds ${ledgerRefunded.toLocaleString('en-US')}; by key and by model ` +
      `${groupsAgree ? 'the same totals' : 'OTHER totals'}; tasks accepted ${count(report.totals.tasks.accepted)}, ` +
      `completed ${count(report.totals.tasks.completed)}, failed ${count(report.totals.tasks.failed)}, pending ` +
      `${count(report.totals.tasks.pending)}).`,
  );
  out();
}
