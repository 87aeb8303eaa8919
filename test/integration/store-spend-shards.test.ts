/**
 * One big customer's accepts racing through the conflict layer, for each kind of budget: none (the
 * balance decides), a key's spend limit and the account's monthly limit, each split over counter shards
 * (store/spend.ts). Exactness only (how fast is `npm run bench -- big-customer`): exactly what fits is
 * accepted, never more spent than the limit, money exact.
 */
import { InsufficientCreditsError, SpendLimitError } from '../../functions/core/errors';
import { acceptTask } from '../../functions/money/accept';
import { setAccountSpendLimit } from '../../functions/money/account-limit';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { setSpendLimit } from '../../functions/money/key-limit';
import { getBalance } from '../../functions/store/accounts';
import { getApiKeyById } from '../../functions/store/api-keys';
import { auditUser } from '../../functions/store/ledger';
import { readSpent } from '../../functions/store/spend';
import type { NewTask } from '../../functions/store/tasks';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { newTask, newUserId, retriedWhileBusy, T0 } from '../support/store-fixtures';

const COST = 3;
/** Accepts that fit the budget in each race; twice as many race. */
const FITS = atScale(12, 160);

// Up to a hundred racing transactions through DynamoDB Local's one JVM: a guard against hangs on a
// loaded machine, not a speed check.
jest.setTimeout(120_000);

/** `tasks` accepted by `inFlight` workers back to back, each retrying a busy answer as a 503 tells it to. */
async function race(store: TestStore, tasks: NewTask[], inFlight: number) {
  const results: PromiseSettledResult<unknown>[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let index = next++; index < tasks.length; index = next++) {
        const task = tasks[index];
        if (!task) continue;
        results.push(
          await retriedWhileBusy(() => acceptTask(store, { task })).then(
            (value) => ({ status: 'fulfilled' as const, value }),
            (reason: unknown) => ({ status: 'rejected' as const, reason }),
          ),
        );
      }
    }),
  );
  return {
    accepted: results.filter((result) => result.status === 'fulfilled').length,
    refused: results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : [])),
  };
}

describe('one account racing on its budgets, split over shards (DynamoDB Local, conflict layer on)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 5 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  it.each([16, 32])(
    'no limit, %i in flight: the balance for exactly the tasks that fit, the rest 402',
    async (inFlight) => {
      // Prepare
      const userId = newUserId();
      await grantCredits(store, { userId, amount: FITS * COST });
      const tasks = Array.from({ length: FITS * 2 }, () => newTask(userId, COST));

      // Act
      const { accepted, refused } = await race(store, tasks, inFlight);

      // Assert
      expect(accepted).toBe(FITS);
      expect(refused).toHaveLength(FITS);
      for (const reason of refused) expect(reason).toBeInstanceOf(InsufficientCreditsError);
      expect(await auditUser(store, userId)).toMatchObject({ balance: 0, ledgerSum: 0, ok: true });
    },
  );

  it.each([16, 32])(
    'a key spend limit, %i in flight: exactly the limit is spent, the rest 402 naming it',
    async (inFlight) => {
      // Prepare: credits for twice the limit; a limit of FITS tasks.
      const userId = newUserId();
      await grantCredits(store, { userId, amount: FITS * COST * 2 });
      const issued = await putApiKey(store, {
        userId,
        name: 'big',
        spendLimit: { credits: FITS * COST, period: 'month' },
        now: T0,
      });
      const key = await getApiKeyById(store, issued.keyId);
      const view = { keyId: issued.keyId, spendLimit: key?.spendLimit, spendLimitVersion: key?.spendLimitVersion };
      const tasks = Array.from({ length: FITS * 2 }, () => newTask(userId, COST, view));

      // Act
      const { accepted, refused } = await race(store, tasks, inFlight);

      // Assert
      expect(accepted).toBe(FITS);
      for (const reason of refused) expect(reason).toMatchObject({ name: 'SpendLimitError', scope: 'key' });
      if (!key?.spendLimit) throw new Error('the key has no limit');
      expect(await readSpent(store, userId, key.spendLimit, T0)).toBe(FITS * COST);
      expect(await getBalance(store, userId)).toBe(FITS * COST);
      expect(await auditUser(store, userId)).toMatchObject({ ok: true });
    },
  );

  it.each([16, 32])(
    'an account monthly limit, %i in flight: exactly the limit is spent, the rest 402',
    async (inFlight) => {
      // Prepare
      const userId = newUserId();
      await grantCredits(store, { userId, amount: FITS * COST * 2 });
      await setAccountSpendLimit(store, { userId, credits: FITS * COST, now: T0 });
      const tasks = Array.from({ length: FITS * 2 }, () => newTask(userId, COST));

      // Act
      const { accepted, refused } = await race(store, tasks, inFlight);

      // Assert
      expect(accepted).toBe(FITS);
      for (const reason of refused) {
        expect(reason).toBeInstanceOf(SpendLimitError);
        expect(reason).toMatchObject({ scope: 'account', limit: FITS * COST });
      }
      expect(await getBalance(store, userId)).toBe(FITS * COST);
      expect(await auditUser(store, userId)).toMatchObject({ ok: true });
    },
  );

  it('a limit lowered below what some shards hold: racing accepts still spend exactly up to it', async () => {
    // Prepare: a large limit (100 a shard), three tasks of 90 counted on a shard each, then the limit
    // lowered to 320 (10 a shard): 50 credits of room left in all, on shards other than those three.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 10_000 });
    const issued = await putApiKey(store, {
      userId,
      name: 'big',
      spendLimit: { credits: 3200, period: 'day' },
      now: T0,
    });
    const key = await getApiKeyById(store, issued.keyId);
    const before = { keyId: issued.keyId, spendLimit: key?.spendLimit, spendLimitVersion: key?.spendLimitVersion };
    for (let i = 0; i < 3; i++) await acceptTask(store, { task: newTask(userId, 90, before) });
    const lowered = await setSpendLimit(store, {
      keyId: issued.keyId,
      ownerId: userId,
      spendLimit: { credits: 320, period: 'day' },
      now: T0,
    });
    const after = { keyId: issued.keyId, spendLimit: lowered.spendLimit, spendLimitVersion: lowered.spendLimitVersion };
    const tasks = Array.from({ length: 20 }, () => newTask(userId, 10, after));

    // Act
    const { accepted, refused } = await race(store, tasks, 16);

    // Assert
    expect(accepted).toBe(5);
    for (const reason of refused) expect(reason).toMatchObject({ name: 'SpendLimitError', limit: 320, spent: 320 });
    if (!lowered.spendLimit) throw new Error('the key has no limit');
    expect(await readSpent(store, userId, lowered.spendLimit, T0)).toBe(320);
    expect(await auditUser(store, userId)).toMatchObject({ balance: 10_000 - 320, ok: true });
  });
});
