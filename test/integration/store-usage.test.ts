import { randomUUID } from 'node:crypto';
import { parseUsageQuery, type UsageReport, usageReport } from '../../functions/core/usage';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { failAndRefund } from '../../functions/money/refund';
import { listLedger } from '../../functions/store/ledger';
import { completeTask } from '../../functions/store/tasks';
import { readUsageCounters } from '../../functions/store/usage';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { newTask, newUserId, retriedWhileBusy, T0 } from '../support/store-fixtures';

/** Accepts on the account (a multiple of 11: the plans' outcomes repeat every 11). */
const ACCEPTS = atScale(220, 1100);
/** Debits (every accept) and refunds (9 of 11 fail): 400 in `npm test`, 2,000 in the stress run. */
const LEDGER_ENTRIES = (ACCEPTS * 20) / 11;

// Thousands of transactions through the conflict layer: a minute, more on a loaded machine.
jest.setTimeout(600_000);

const DAY_MS = 24 * 60 * 60 * 1000;
const day = (n: number) => new Date(T0.getTime() + n * DAY_MS);
const dayName = (n: number) => day(n).toISOString().slice(0, 10);

/** Runs `jobs` with at most `width` in flight. */
async function inBatches<T>(jobs: Array<() => Promise<T>>, width: number): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < jobs.length; i += width) {
    results.push(...(await Promise.all(jobs.slice(i, i + width).map((job) => job()))));
  }
  return results;
}

async function report(store: TestStore, userId: string, query: Record<string, string>): Promise<UsageReport> {
  const parsed = parseUsageQuery(query, day(10));
  expect(parsed.fieldErrors).toEqual({});
  const { items } = await readUsageCounters(store, { userId, from: parsed.query.from, to: parsed.query.to });
  return usageReport(parsed.query, items);
}

/**
 * The bookkeeping over hundreds of entries in `npm test` and thousands in `npm run test:stress`
 * (ACCEPTS below), on DynamoDB Local without the conflict layer: 2,000
 * transactions through it took over ten minutes inside the full suite (42 s alone). How counters
 * behave under contention is the conflict-layer suite's below (races, retries), and store-accept's.
 */
describe('usage counters over thousands of ledger entries (DynamoDB Local)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore();
  });

  afterAll(async () => {
    await store.dispose();
  });

  it(`on an account with ${LEDGER_ENTRIES} ledger entries, every range totals what the ledger says, by key and model too`, async () => {
    // Prepare: ACCEPTS accepts over 5 days with 3 keys (and the dashboard) and 3 models; 9 of 11 fail
    // (half of those refunded a day later), 1 of 11 completes: at full scale 1,100 accepts, 900
    // failures, 100 completions, 2,000 debits and refunds in the ledger.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 1_000_000 });
    const keyIds = ['key-a', 'key-b', 'key-c', undefined] as const;
    const models = ['image-model-1', 'image-model-2', 'video-d3'] as const;
    const plans = Array.from({ length: ACCEPTS }, (_, i) => ({
      dayIndex: i % 5,
      keyId: keyIds[i % 4],
      model: models[i % 3] ?? 'image-model-1',
      cost: 1 + (i % 7),
      outcome: i % 11 <= 8 ? 'fail' : i % 11 === 9 ? 'complete' : 'pending',
      refundLater: i % 2 === 0,
    }));
    const accepted = await inBatches(
      plans.map((plan) => async () => {
        const task = newTask(userId, plan.cost, {
          taskId: randomUUID(),
          model: plan.model,
          keyId: plan.keyId,
          now: new Date(day(plan.dayIndex).getTime() + 1000),
        });
        return { plan, record: (await retriedWhileBusy(() => acceptTask(store, { task }))).task };
      }),
      25,
    );
    await inBatches(
      accepted.map(({ plan, record }) => async () => {
        const at = new Date(Date.parse(record.createdAt) + (plan.refundLater ? DAY_MS : 60_000));
        if (plan.outcome === 'fail') {
          const result = await failAndRefund(store, {
            userId,
            taskId: record.taskId,
            errorCode: 'PROVIDER_ERROR',
            errorMessage: 'failed',
            now: at,
            task: record,
          });
          expect(result?.refunded).toBe(true);
        } else if (plan.outcome === 'complete') {
          const done = await completeTask(store, {
            userId,
            taskId: record.taskId,
            resultKeys: ['r'],
            now: at,
            task: record,
          });
          expect(done?.status).toBe(1);
        }
      }),
      25,
    );
    const ledger = await listLedger(store, userId);
    const ledgerIn = (from: number, to: number) => {
      const inRange = ledger.filter(
        (entry) => entry.at.slice(0, 10) >= dayName(from) && entry.at.slice(0, 10) <= dayName(to),
      );
      return {
        debited: inRange.filter((e) => e.kind === 'debit').reduce((sum, e) => sum - e.delta, 0),
        refunded: inRange.filter((e) => e.kind === 'refund').reduce((sum, e) => sum + e.delta, 0),
      };
    };
    const ranges: Array<[number, number]> = [
      [0, 5],
      [0, 0],
      [1, 3],
      [4, 5],
      [5, 5],
    ];

    // Act
    const reports = await Promise.all(
      ranges.map(([from, to]) => report(store, userId, { from: dayName(from), to: dayName(to), groupBy: 'day' })),
    );
    const byKey = await report(store, userId, { from: dayName(0), to: dayName(5), groupBy: 'key' });
    const byModel = await report(store, userId, { from: dayName(0), to: dayName(5), groupBy: 'model' });

    // Assert: the ledger and the counters agree on every range.
    expect(ledger.length).toBeGreaterThan(LEDGER_ENTRIES);
    ranges.forEach(([from, to], i) => {
      const expected = ledgerIn(from, to);
      expect(reports[i]?.totals).toMatchObject({ ...expected, net: expected.debited - expected.refunded });
    });
    // Tasks by status, on the day they were accepted.
    const all = reports[0];
    const eleventh = ACCEPTS / 11;
    expect(all?.totals.tasks).toEqual({
      accepted: ACCEPTS,
      completed: eleventh,
      failed: 9 * eleventh,
      pending: eleventh,
    });
    expect(all?.rows.map((row) => row.group)).toEqual([0, 1, 2, 3, 4, 5].map(dayName));
    expect(all?.rows[5]).toMatchObject({ debited: 0, tasks: { accepted: 0 } });
    expect(all?.rows[5]?.refunded).toBe(ledgerIn(5, 5).refunded);
    // By key and by model: what the plans say.
    const sumOf = (pick: (plan: (typeof plans)[number]) => boolean) => {
      const chosen = plans.filter(pick);
      const debited = chosen.reduce((sum, plan) => sum + plan.cost, 0);
      const refunded = chosen.filter((plan) => plan.outcome === 'fail').reduce((sum, plan) => sum + plan.cost, 0);
      return { debited, refunded, net: debited - refunded };
    };
    for (const keyId of keyIds) {
      const row = byKey.rows.find((r) => r.group === (keyId ?? 'session'));
      expect(row).toMatchObject(sumOf((plan) => plan.keyId === keyId));
      expect(row?.tasks.accepted).toBe(ACCEPTS / keyIds.length);
    }
    for (const model of models) {
      expect(byModel.rows.find((r) => r.group === model)).toMatchObject(sumOf((plan) => plan.model === model));
    }
    expect(byKey.totals).toEqual(all?.totals);
  });
});

describe('usage counters, kept in the transactions that move credits (DynamoDB Local, conflict layer on)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 2 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  it('a refund counts on its own day and the failed task on its accept day; a range is one Query', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 100 });
    const { task } = await acceptTask(store, { task: newTask(userId, 7, { model: 'image-model-2', now: day(0) }) });

    // Act
    await failAndRefund(store, {
      userId,
      taskId: task.taskId,
      errorCode: 'CANCELLED',
      errorMessage: 'x',
      now: day(2),
      task,
    });
    const read = await readUsageCounters(store, { userId, from: dayName(0), to: dayName(30) });
    const report = usageReport({ from: dayName(0), to: dayName(2), groupBy: 'day' }, read.items);

    // Assert
    expect(read.requests).toBe(1);
    expect(report.rows.map((row) => [row.group, row.debited, row.refunded, row.tasks.failed])).toEqual([
      [dayName(0), 7, 0, 1],
      [dayName(1), 0, 0, 0],
      [dayName(2), 0, 7, 0],
    ]);
    expect(report.totals).toEqual({
      debited: 7,
      refunded: 7,
      net: 0,
      tasks: { accepted: 1, completed: 0, failed: 1, pending: 0 },
    });
  });

  it('a task completed or refunded twice counts once', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 100 });
    const done = (await acceptTask(store, { task: newTask(userId, 3, { now: day(0) }) })).task;
    const failed = (await acceptTask(store, { task: newTask(userId, 4, { now: day(0) }) })).task;

    // Act
    const completions = await Promise.all(
      [1, 2, 3].map(() =>
        completeTask(store, { userId, taskId: done.taskId, resultKeys: ['r'], now: day(0), task: done }),
      ),
    );
    const refunds = await Promise.all(
      [1, 2, 3].map(() =>
        failAndRefund(store, {
          userId,
          taskId: failed.taskId,
          errorCode: 'PROVIDER_ERROR',
          errorMessage: 'x',
          now: day(0),
        }),
      ),
    );
    const report = usageReport(
      { from: dayName(0), to: dayName(0), groupBy: 'model' },
      (await readUsageCounters(store, { userId, from: dayName(0), to: dayName(0) })).items,
    );

    // Assert
    expect(completions.filter((task) => task !== undefined)).toHaveLength(1);
    expect(refunds.filter((result) => result?.refunded)).toHaveLength(1);
    expect(report.totals).toEqual({
      debited: 7,
      refunded: 4,
      net: 3,
      tasks: { accepted: 2, completed: 1, failed: 1, pending: 0 },
    });
    expect(report.rows).toEqual([{ group: 'image-model-1', ...report.totals }]);
  });
});
