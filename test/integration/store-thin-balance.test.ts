import { InsufficientCreditsError } from '../../functions/core/errors';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { getBalance } from '../../functions/store/accounts';
import { readShards } from '../../functions/store/balance';
import { auditUser } from '../../functions/store/ledger';
import { readLayout, thinLately } from '../../functions/store/thin-balance';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { attachRequestCounter } from '../support/request-counter';
import { newTask, newUserId, retriedWhileBusy } from '../support/store-fixtures';

// A guard against hangs on a loaded machine, not a speed check.
jest.setTimeout(60_000);

/**
 * An accept on a balance this process found thin reads the shards before its first try instead of
 * after a short one (store/thin-balance.ts, docs/decisions/0018-thin-balance-bursts.md).
 */
describe('accepts on a thin balance (conflict layer on)', () => {
  let store: TestStore;

  beforeAll(async () => {
    // The bench's hold (`npm run bench -- thin-burst`), so the race here is the one measured there.
    store = await createTestStore({ conflicts: { holdMs: 10 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  it('after a read found the balance thin, the next accept takes from a shard that covers it in one transaction', async () => {
    // Prepare: 40 credits spread evenly (1 or 2 a shard: a cost of 3 fits on none). Every blind pick is
    // the last shard, which the first accept's gathering leaves empty.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 40 });
    const lastShard = { ...store, retry: { random: () => 0.999 } };
    await acceptTask(lastShard, { task: newTask(userId, 3) });
    // The process's memory lasts 10 s of wall clock: read again just before acting, so a slow first
    // accept on a loaded machine cannot let it lapse in between.
    await readLayout(store, userId, 3);
    const before = store.conflicts?.stats().forwardedTransactions ?? 0;

    // Act
    await acceptTask(lastShard, { task: newTask(userId, 3) });

    // Assert: one transaction (no short try on the empty last shard first), money exact.
    expect(thinLately(userId)).toBe(true);
    expect((store.conflicts?.stats().forwardedTransactions ?? 0) - before).toBe(1);
    expect((await readShards(store, userId))[31]).toBe(0);
    expect(await getBalance(store, userId)).toBe(34);
    expect(await auditUser(store, userId)).toEqual({ userId, balance: 34, ledgerSum: 34, entries: 3, ok: true });
  });

  it('accepts at once on a balance found thin plan from the layout this process remembers: one transaction each, no read, no conflict', async () => {
    // Prepare: 40 credits spread evenly (1 or 2 a shard); the first accept's gathering puts them into
    // lumps, and a read just before acting (the memory lasts 10 s of wall clock) remembers them.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 40 });
    await acceptTask(store, { task: newTask(userId, 3) });
    await readLayout(store, userId, 3);
    const counter = attachRequestCounter(store.doc);
    const before = store.conflicts?.stats().cancelledTransactions ?? 0;

    // Act: 8 at once, each planning its first try from the remembered layout less the others' holds.
    const answers = await Promise.all(Array.from({ length: 8 }, () => acceptTask(store, { task: newTask(userId, 3) })));
    counter.detach();

    // Assert
    expect(answers.map(({ replayed }) => replayed)).toEqual(new Array(8).fill(false));
    expect(counter.counts).toEqual({ TransactWriteItemsCommand: 8 });
    expect((store.conflicts?.stats().cancelledTransactions ?? 0) - before).toBe(0);
    expect(await getBalance(store, userId)).toBe(13);
    expect(await auditUser(store, userId)).toEqual({ userId, balance: 13, ledgerSum: 13, entries: 10, ok: true });
  });

  it('a refusal on a balance found thin is still a 402 with nothing written, and a grant is seen at once', async () => {
    // Prepare: 2 credits cannot pay 3; the first refusal teaches the process the account is thin.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 2 });
    const first = await acceptTask(store, { task: newTask(userId, 3) }).catch((error: unknown) => error);

    // Act
    const refusal = await acceptTask(store, { task: newTask(userId, 3) }).catch((error: unknown) => error);
    await grantCredits(store, { userId, amount: 1 });
    const accepted = await acceptTask(store, { task: newTask(userId, 3) });

    // Assert
    expect(first).toBeInstanceOf(InsufficientCreditsError);
    expect(refusal).toBeInstanceOf(InsufficientCreditsError);
    expect(refusal).toMatchObject({ required: 3, balance: 2 });
    expect(accepted.replayed).toBe(false);
    expect(await getBalance(store, userId)).toBe(0);
    expect(await auditUser(store, userId)).toEqual({ userId, balance: 0, ledgerSum: 0, entries: 3, ok: true });
  });

  it('a first wave of 32 accepts at once on an account this process knows nothing of sends one blind try, not 32', async () => {
    // Prepare: 64 credits spread 2 a shard (a cost of 3 fits on none), a process that never read them.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 64 });
    const stats = () => store.conflicts?.stats() ?? { forwardedTransactions: 0, cancelledTransactions: 0 };
    const before = stats();

    // Act: 32 at once, as a burst's first wave reaches one process.
    const answers = await Promise.all(
      Array.from({ length: 32 }, () =>
        retriedWhileBusy(() => acceptTask(store, { task: newTask(userId, 3) })).catch((error: unknown) => error),
      ),
    );

    // Assert: 21 fit, 11 refused, money exact; the transactions sent are fewer than the 32 blind tries
    // the wave sent before (each short, then a read and a gathering each: 53 at the very least).
    const after = stats();
    const sent =
      after.forwardedTransactions +
      after.cancelledTransactions -
      before.forwardedTransactions -
      before.cancelledTransactions;
    expect(answers.filter((answer) => !(answer instanceof Error))).toHaveLength(21);
    expect(answers.filter((answer) => answer instanceof InsufficientCreditsError)).toHaveLength(11);
    expect(sent).toBeLessThan(32);
    // One blind try (short), one gathering, 20 single-shard debits; a little room for a stale plan.
    expect(sent).toBeLessThanOrEqual(24);
    expect(await getBalance(store, userId)).toBe(1);
    expect(await auditUser(store, userId)).toEqual({ userId, balance: 1, ledgerSum: 1, entries: 22, ok: true });
  });

  it('32 accepts at once on a thick account debit 32 different shards: no try cancelled', async () => {
    // Prepare: plenty on every shard; this process has seen nothing of the account.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 32_000 });
    const stats = () => store.conflicts?.stats() ?? { forwardedTransactions: 0, cancelledTransactions: 0 };
    const before = stats();

    // Act
    const answers = await Promise.all(
      Array.from({ length: 32 }, () => acceptTask(store, { task: newTask(userId, 3) })),
    );

    // Assert: blind picks of one process go around its tries in flight, so none met another (they used
    // to pick at random: 32 picks on 32 shards nearly always share some).
    const after = stats();
    expect(answers.map(({ replayed }) => replayed)).toEqual(new Array(32).fill(false));
    expect(after.cancelledTransactions - before.cancelledTransactions).toBe(0);
    expect(after.forwardedTransactions - before.forwardedTransactions).toBe(32);
    expect(await getBalance(store, userId)).toBe(32_000 - 96);
    expect(await auditUser(store, userId)).toEqual({
      userId,
      balance: 31_904,
      ledgerSum: 31_904,
      entries: 33,
      ok: true,
    });
  });

  it.each([16, 32])(
    'a burst of 64 accepts of cost 3, %i in flight, on 64 credits spread 2 a shard accepts exactly 21 and refuses 43',
    async (inFlight) => {
      // Prepare: the bench's thin burst (bench/big-customer.ts): no shard covers a cost of 3.
      const userId = newUserId();
      await grantCredits(store, { userId, amount: 64 });
      const tasks = Array.from({ length: 64 }, () => newTask(userId, 3));
      const answers: unknown[] = [];

      // Act: `inFlight` callers, each sending its next accept when the last one is answered (and again
      // after a 503, as the API tells it to).
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          for (let task = tasks.shift(); task; task = tasks.shift()) {
            const answer = retriedWhileBusy(() => acceptTask(store, { task }));
            answers.push(await answer.catch((error: unknown) => error));
          }
        }),
      );

      // Assert
      const refused = answers.filter((answer) => answer instanceof InsufficientCreditsError);
      expect(answers.filter((answer) => !(answer instanceof Error))).toHaveLength(21);
      expect(refused).toHaveLength(43);
      for (const reason of refused) expect([0, 1, 2]).toContainEqual((reason as InsufficientCreditsError).balance);
      expect(await getBalance(store, userId)).toBe(1);
      expect(await auditUser(store, userId)).toEqual({ userId, balance: 1, ledgerSum: 1, entries: 22, ok: true });
    },
  );
});
