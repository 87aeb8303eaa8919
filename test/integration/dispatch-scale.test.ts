/**
 * The dispatch's scale on DynamoDB's limits (docs/design/dispatching.md#scale), through the conflict
 * layer (local/conflict-proxy.ts), which models each partition's throughput and counts the units each
 * request consumed as DynamoDB Local reports them:
 * - the largest capacity item the settings allow is written and worked on by the store's own writes,
 *   and an item past 400 KB is refused as DynamoDB refuses it;
 * - the real writes add no more bytes per request of the rate and per task in flight than the bound
 *   at synth and start counts (functions/core/provider-capacity.ts);
 * - `queuedAhead` and the queue bound's count read a bounded number of units at any queue length;
 * - a partition past its rate is throttled, and submits and dispatch through the model end with the
 *   money exact.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import {
  CAPACITY_BYTES_PER_IN_FLIGHT,
  CAPACITY_BYTES_PER_REQUEST,
  CAPACITY_FIXED_BYTES,
  MAX_CAPACITY_ITEM_BYTES,
} from '../../functions/core/provider-capacity';
import { QUEUED_AHEAD_CAP } from '../../functions/core/task';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import {
  countQueued,
  holdInFlight,
  queuedAhead,
  readCapacity,
  recordAnswered,
  takeSlot,
} from '../../functions/store/dispatch';
import { auditUser, listLedger } from '../../functions/store/ledger';
import * as keys from '../../functions/store/task-keys';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { itemBytes } from '../../local/partition-throughput';
import { createTestStore, type TestStore } from '../support/dynamodb';
import {
  type ApiAnswer,
  getTaskEvent,
  IMAGE_COST,
  imageRequest,
  invoke,
  jestTimeoutFor,
  type ServiceHarness,
  sleep,
  startServiceHarness,
  submitEvent,
  TASK_END_BUDGET_MS,
} from '../support/service-harness';

const CAPACITY = { PK: 'DISPATCH#CAPACITY', SK: 'CREATE' };

/** The capacity item's size by DynamoDB's rules, as stored. */
async function capacityBytes(store: TestStore): Promise<number> {
  const out = await store.doc.send(new GetCommand({ TableName: store.tableName, Key: CAPACITY, ConsistentRead: true }));
  return itemBytes(marshall(out.Item ?? {}, { removeUndefinedValues: true }));
}

/** Units consumed so far on one partition of the store's table. */
function usage(store: TestStore, partitionKey: string) {
  const partitions = store.conflicts?.throughput().partitions;
  if (!partitions) throw new Error('this store has no conflict layer');
  return partitions.get(`${store.tableName} ${partitionKey}`) ?? { readUnits: 0, writeUnits: 0, throttled: 0 };
}

/** An epoch-ms time with all 13 digits significant (a round one is smaller), as real clocks give. */
const timeAt = (index: number) => 1_764_201_612_345 + index * 7919;

describe("the capacity item within DynamoDB's item size", () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 10 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  beforeEach(async () => {
    await store.doc.send(new PutCommand({ TableName: store.tableName, Item: { ...CAPACITY, n: 900_000_000_000_000 } }));
  });

  it('adds no more bytes per request of the rate and per task in flight than the bound counts', async () => {
    // Prepare: slot numbers of 15 digits (the version after years of sends), one slot taken first so
    // the attributes written once (cursor, tokens, the map) are there before measuring
    const ring = 1000;
    const slot = async (index: number, maxInFlight?: number) => {
      const state = await readCapacity(store);
      const taken = await takeSlot(store, {
        state,
        now: timeAt(index),
        keep: ring,
        account: randomUUID(),
        tokensLeft: 749.25,
        ...(maxInFlight === undefined ? {} : { maxInFlight }),
      });
      if (taken === undefined) throw new Error('slot not taken');
      await recordAnswered(store, { slot: taken, at: timeAt(index) + 431, ring });
      if (maxInFlight !== undefined) {
        await holdInFlight(store, { slot: taken, userId: randomUUID(), taskId: randomUUID(), sentAt: timeAt(index) });
      }
    };
    await slot(0);
    const start = await capacityBytes(store);

    // Act: 10 slots without a cap, then 10 with one
    for (let index = 1; index <= 10; index++) await slot(index);
    const afterRate = await capacityBytes(store);
    await slot(11, 10_000);
    const capped = await capacityBytes(store);
    for (let index = 12; index <= 21; index++) await slot(index, 10_000);
    const afterCap = await capacityBytes(store);

    // Assert
    const perRequest = (afterRate - start) / 10;
    const perInFlight = (afterCap - capped) / 10 - perRequest;
    expect(perRequest).toBeGreaterThan(30);
    expect(perRequest).toBeLessThanOrEqual(CAPACITY_BYTES_PER_REQUEST);
    expect(perInFlight).toBeGreaterThan(60);
    expect(perInFlight).toBeLessThanOrEqual(CAPACITY_BYTES_PER_IN_FLIGHT);
    expect(start).toBeLessThan(CAPACITY_FIXED_BYTES);
  });

  it('writes and works on the largest item the settings allow, each write costing its size in write units', async () => {
    // Prepare: 2,000 requests per window and the largest cap that fits beside them, the item filled as
    // the store's writes fill it (every ring position, every in-flight entry but one, 100 models in
    // backoff, user ids of 64 characters), then one more slot taken, claimed and answered by them
    const requests = 2000;
    const cap = Math.floor(
      (MAX_CAPACITY_ITEM_BYTES - CAPACITY_FIXED_BYTES - requests * CAPACITY_BYTES_PER_REQUEST) /
        CAPACITY_BYTES_PER_IN_FLIGHT,
    );
    const base = 900_000_000_000_000;
    const longUserId = 'u'.repeat(64);
    const item: Record<string, unknown> = {
      ...CAPACITY,
      n: base + requests,
      sends: Array.from({ length: requests }, (_, index) => timeAt(index)),
      tokens: 1499.123456789,
      tokensAt: timeAt(1),
      backoffUntil: timeAt(2),
      backoffMs: 60_000,
      lastServed: longUserId,
      wakeAt: timeAt(3),
      healAt: timeAt(4),
      modelBackoff: Object.fromEntries(
        Array.from({ length: 100 }, (_, index) => [
          `model-${index}-text-to-video`,
          { until: timeAt(index), ms: 32_000 },
        ]),
      ),
      running: Object.fromEntries(
        Array.from({ length: cap - 1 }, (_, index) => [randomUUID(), { sentAt: timeAt(index), userId: longUserId }]),
      ),
    };
    for (let slot = base + 1; slot <= base + requests; slot++) {
      item[`answered${slot % requests}`] = { slot, at: timeAt(slot - base) };
    }
    await store.doc.send(new PutCommand({ TableName: store.tableName, Item: item }));
    const before = usage(store, 'DISPATCH#CAPACITY').writeUnits;

    // Act
    const state = await readCapacity(store);
    const slot = await takeSlot(store, {
      state,
      now: Date.now(),
      keep: requests,
      account: longUserId,
      maxInFlight: cap,
    });
    await holdInFlight(store, { slot: slot ?? 0, userId: longUserId, taskId: randomUUID(), sentAt: Date.now() });
    await recordAnswered(store, { slot: slot ?? 0, at: Date.now(), ring: requests });
    const written = usage(store, 'DISPATCH#CAPACITY').writeUnits - before;
    const full = await readCapacity(store);
    const bytes = await capacityBytes(store);

    // Assert: written, full, within the bound and near it; three writes of about 280 units each
    expect(slot).toBe(base + requests + 1);
    expect(full.sends).toHaveLength(requests);
    expect(Object.keys(full.running ?? {})).toHaveLength(cap);
    expect(full.answered[base + requests + 1]).toEqual(expect.any(Number));
    expect(bytes).toBeLessThanOrEqual(MAX_CAPACITY_ITEM_BYTES);
    expect(bytes).toBeGreaterThan(0.9 * MAX_CAPACITY_ITEM_BYTES);
    expect(written).toBeGreaterThanOrEqual(3 * Math.floor(bytes / 1024));
  });

  it('is refused past 400 KB as DynamoDB refuses it, by a put and by an update, and nothing is written', async () => {
    // Prepare
    const big = 'x'.repeat(300 * 1024);

    // Act
    const put = store.doc.send(
      new PutCommand({ TableName: store.tableName, Item: { ...CAPACITY, n: 1, filler: `${big}${big}` } }),
    );
    await store.doc.send(new PutCommand({ TableName: store.tableName, Item: { ...CAPACITY, n: 2, filler: big } }));
    const update = store.doc.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: CAPACITY,
        UpdateExpression: 'SET more = :more',
        ExpressionAttributeValues: { ':more': big },
      }),
    );

    // Assert
    await expect(put).rejects.toMatchObject({
      name: 'ValidationException',
      message: 'Item size has exceeded the maximum allowed size',
    });
    await expect(update).rejects.toMatchObject({
      name: 'ValidationException',
      message: 'Item size to update has exceeded the maximum allowed size',
    });
    expect((await readCapacity(store)).n).toBe(2);
  });
});

describe('the queue counts at any queue length', () => {
  let store: TestStore;
  const userId = randomUUID();
  const entries = Array.from({ length: 600 }, (_, index) => {
    const taskId = randomUUID();
    const createdAt = new Date(Date.UTC(2026, 10, 27, 0, 0, index)).toISOString();
    return { ...keys.queueEntry(userId, createdAt, taskId), userId, taskId, createdAt, model: 'image-model-1' };
  });

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 10 } });
    // Written directly, as the accept transaction writes them, and another account's around them.
    const other = (at: number) => ({
      ...keys.queueEntry(randomUUID(), new Date(at).toISOString(), randomUUID()),
      model: 'image-model-1',
    });
    const items = [...entries.map(({ createdAt: _, ...entry }) => entry), other(0), other(Date.now())];
    for (let index = 0; index < items.length; index += 25) {
      const batch = items.slice(index, index + 25).map((Item) => ({ PutRequest: { Item } }));
      await store.doc.send(new BatchWriteCommand({ RequestItems: { [store.tableName]: batch } }));
    }
  });

  afterAll(async () => {
    await store.dispose();
  });

  /** The read units `read` consumed on `DISPATCH#QUEUE`, and its result. */
  async function measured<T>(read: () => Promise<T>): Promise<{ result: T; units: number }> {
    const before = usage(store, 'DISPATCH#QUEUE').readUnits;
    const result = await read();
    return { result, units: usage(store, 'DISPATCH#QUEUE').readUnits - before };
  }

  /** Units of a strongly consistent read of `count` queue entries (4 KB a unit), the largest entries counted. */
  const unitsFor = (count: number) =>
    Math.ceil((count * Math.max(...entries.map(({ createdAt: _, ...entry }) => itemBytes(marshall(entry))))) / 4096);

  it(`counts queuedAhead exactly below ${QUEUED_AHEAD_CAP} and caps it there, reading at most ${QUEUED_AHEAD_CAP + 1} entries`, async () => {
    // Act
    const last = entries[599];
    const tenth = entries[10];
    if (!last || !tenth) throw new Error('no entries');
    const deep = await measured(() => queuedAhead(store, last));
    const near = await measured(() => queuedAhead(store, tenth));

    // Assert
    expect(deep.result).toBe(QUEUED_AHEAD_CAP);
    expect(near.result).toBe(10);
    // Eventually consistent: half a unit per 4 KB
    expect(deep.units).toBeLessThanOrEqual(unitsFor(QUEUED_AHEAD_CAP + 1) / 2);
    expect(near.units).toBeLessThanOrEqual(unitsFor(11) / 2);
  });

  it("stops the queue bound's count at the bound, its units the bound's and not the queue's", async () => {
    // Act
    const atBound = await measured(() => countQueued(store, { userId, limit: 100 }));
    const belowBound = await measured(() => countQueued(store, { userId, limit: 1000 }));

    // Assert
    expect(atBound.result).toBe(100);
    expect(atBound.units).toBeLessThanOrEqual(unitsFor(100));
    expect(belowBound.result).toBe(600);
    expect(belowBound.units).toBeLessThanOrEqual(unitsFor(600));
    expect(belowBound.units).toBeGreaterThan(atBound.units);
  });
});

describe('throughput per partition', () => {
  it('throttles writes past the partition rate and the SDK retries them through; another partition is not throttled', async () => {
    // Prepare
    const store = await createTestStore({
      conflicts: { holdMs: 10, throughput: { readUnitsPerSecond: 30, writeUnitsPerSecond: 10 } },
    });
    try {
      const put = (pk: string, index: number) =>
        store.doc.send(new PutCommand({ TableName: store.tableName, Item: { PK: pk, SK: `item-${index}` } }));

      // Act: 25 one-unit writes on one partition at once, 5 on another
      await Promise.all([
        ...Array.from({ length: 25 }, (_, index) => put('HOT', index)),
        ...Array.from({ length: 5 }, (_, index) => put('COLD', index)),
      ]);

      // Assert
      expect(usage(store, 'HOT')).toMatchObject({ writeUnits: 25, throttled: expect.any(Number) });
      expect(usage(store, 'HOT').throttled).toBeGreaterThan(0);
      expect(usage(store, 'COLD')).toEqual({ readUnits: 0, writeUnits: 5, throttled: 0 });
    } finally {
      await store.dispose();
    }
  }, 60_000);
});

describe('submits and dispatch through the throughput model', () => {
  let h: ServiceHarness;
  const TASKS = 6;

  beforeAll(async () => {
    // The capacity item made the hot partition, as it is the first to throttle (docs/design/dispatching.md#scale):
    // 1 read unit a second, which the dispatcher loop's own steps pass however fast or slow the machine
    // (it reads the item at every step, at least 2.5 a second), and the account's partition at 20 write
    // units a second, which one account's burst of accepts (4 to 6 items each, twice over) meets too.
    h = await startServiceHarness({
      conflicts: {
        holdMs: 10,
        throughput: {
          readUnitsPerSecond: 3000,
          writeUnitsPerSecond: 20,
          byPartitionKey: { 'DISPATCH#CAPACITY': { readUnitsPerSecond: 1, writeUnitsPerSecond: 1000 } },
        },
      },
    });
  });

  afterAll(async () => {
    await h.dispose();
  });

  it(
    'accepts, sends and ends every task, refunds the failed ones, and the money is exact',
    async () => {
      // Prepare: submits at once, every third one failing at the provider; a 503 (the store's retries
      // met throttling throughout) is sent again with its Idempotency-Key after its Retry-After
      const user = await h.createUser(100);
      const fails = (index: number) => index % 3 === 2;
      const submitUntilAccepted = async (index: number): Promise<ApiAnswer> => {
        const headers = { 'Content-Type': 'application/json', 'Idempotency-Key': `scale-${index}` };
        const body = imageRequest(fails(index) ? { mockOutcome: 'fail' } : {});
        for (let round = 1; ; round++) {
          const answer = await invoke(submitImage, submitEvent('image', user, body, headers));
          if (answer.statusCode !== 503 || round >= 30) return answer;
          await sleep(Number(answer.headers['Retry-After'] ?? '1') * 1000);
        }
      };

      /** GETs (which end a task the provider has finished) until it has ended; a refusal is polled again, and kept. */
      const refusedGets: ApiAnswer[] = [];
      const untilEnded = async (taskId: string): Promise<ApiAnswer> => {
        const deadline = Date.now() + TASK_END_BUDGET_MS;
        for (;;) {
          const answer = await invoke(getTaskHandler, getTaskEvent(user, taskId));
          if (answer.statusCode !== 200) refusedGets.push(answer);
          const pending = answer.statusCode !== 200 || answer.body.status === 0;
          if (!pending || Date.now() > deadline) return answer;
          await sleep(1000);
        }
      };

      // Act
      const answers = await Promise.all(Array.from({ length: TASKS }, (_, index) => submitUntilAccepted(index)));
      const ended = await Promise.all(answers.map((answer) => untilEnded(String(answer.body.taskId))));

      // Assert: every task ended as asked, the failed ones refunded, the ledger and balance agree; and
      // the partition's limit was met on the way
      const failed = Array.from({ length: TASKS }, (_, index) => index).filter(fails).length;
      expect(answers.map((answer) => answer.statusCode)).toEqual(Array(TASKS).fill(202));
      // A GET the store's retries could not get through answers busy, never a 500
      expect(refusedGets.map((answer) => [answer.statusCode, answer.body])).toEqual(
        refusedGets.map(() => [503, { error: 'Service busy, retry later' }]),
      );
      expect(ended.map((answer) => answer.body.status)).toEqual(
        Array.from({ length: TASKS }, (_, index) => (fails(index) ? 2 : 1)),
      );
      const ledger = await listLedger(h.store, user.userId);
      expect(ledger.filter((entry) => entry.kind === 'debit')).toHaveLength(TASKS);
      expect(ledger.filter((entry) => entry.kind === 'refund')).toHaveLength(failed);
      expect(await auditUser(h.store, user.userId)).toMatchObject({
        ok: true,
        balance: 100 - (TASKS - failed) * IMAGE_COST,
      });
      const capacity = [...(h.store.conflicts?.throughput().partitions ?? [])].find(([partition]) =>
        partition.endsWith(' DISPATCH#CAPACITY'),
      );
      expect(capacity?.[1].throttled).toBeGreaterThan(0);
    },
    jestTimeoutFor(1),
  );
});
