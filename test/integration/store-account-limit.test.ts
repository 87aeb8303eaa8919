import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SpendLimitError } from '../../functions/core/errors';
import { acceptTask } from '../../functions/money/accept';
import { setAccountSpendLimit } from '../../functions/money/account-limit';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { failAndRefund } from '../../functions/money/refund';
import { getAccountSpendLimit } from '../../functions/store/account-limit';
import { getBalance } from '../../functions/store/accounts';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { newTask, newUserId, retriedWhileBusy, T0 } from '../support/store-fixtures';

/** Racers on the account's limit of 10 tasks: 60 in `npm test`, 240 in `npm run test:stress`. */
const RACERS = atScale(60, 240);

// Accepts racing on one counter through the conflict layer: seconds, minutes on a loaded machine.
jest.setTimeout(600_000);

describe('the account-wide monthly spend limit, enforced in the accept transaction (DynamoDB Local, conflict layer on)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 5 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  it(`${RACERS} parallel accepts from two keys and the dashboard on a limit of 10 tasks accept exactly 10; the rest are 402`, async () => {
    // Prepare: plenty of credits, a monthly limit of 10 tasks of cost 3.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 10_000 });
    await setAccountSpendLimit(store, { userId, credits: 30, now: T0 });
    const callers = [{ keyId: 'key-a' }, { keyId: 'key-b' }, { keyId: undefined }];
    const tasks = Array.from({ length: RACERS }, (_, i) => newTask(userId, 3, callers[i % 3]));

    // Act: callers retry a busy answer as the 503 tells them to.
    const results = await Promise.allSettled(tasks.map((task) => retriedWhileBusy(() => acceptTask(store, { task }))));

    // Assert
    const refused = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(10);
    expect(refused).toHaveLength(RACERS - 10);
    for (const reason of refused) {
      expect(reason).toBeInstanceOf(SpendLimitError);
      expect(reason).toMatchObject({
        scope: 'account',
        limit: 30,
        period: 'month',
        resetsAt: '2026-12-01T00:00:00.000Z',
      });
    }
    expect(await getAccountSpendLimit(store, userId, T0)).toEqual({
      credits: 30,
      period: 'month',
      spent: 30,
      resetsAt: '2026-12-01T00:00:00.000Z',
    });
    expect(await getBalance(store, userId)).toBe(10_000 - 30);
    expect(await auditUser(store, userId)).toMatchObject({ ok: true });
  });

  it('a change holds from the next accept on, whatever the process knew; a refund gives the budget back', async () => {
    // Prepare: this process learns "no limit" first, then the limit is set, lowered and removed.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 100 });
    await acceptTask(store, { task: newTask(userId, 4) });

    // Act
    const set = await setAccountSpendLimit(store, { userId, credits: 10, now: T0 });
    const first = await acceptTask(store, { task: newTask(userId, 6) });
    const over = acceptTask(store, { task: newTask(userId, 5) });
    await expect(over).rejects.toEqual(new SpendLimitError(10, 'month', 6, '2026-12-01T00:00:00.000Z', 'account'));
    await failAndRefund(store, {
      userId,
      taskId: first.task.taskId,
      errorCode: 'PROVIDER_ERROR',
      errorMessage: 'failed',
      now: T0,
      task: first.task,
    });
    const afterRefund = await getAccountSpendLimit(store, userId, T0);
    const fits = await acceptTask(store, { task: newTask(userId, 9) });
    await setAccountSpendLimit(store, { userId, credits: 5, now: T0 });
    const lowered = acceptTask(store, { task: newTask(userId, 1) });
    await expect(lowered).rejects.toMatchObject({ scope: 'account', limit: 5, spent: 9 });
    const removed = await setAccountSpendLimit(store, { userId, credits: null, now: T0 });
    const free = await acceptTask(store, { task: newTask(userId, 20) });

    // Assert: only the first 4 credits were spent before any limit, so they never counted.
    expect(set).toMatchObject({ credits: 10, spent: 0 });
    expect(first.task.accountSpendCounter).toBe('KEYSPEND#ACCOUNT#2026-11');
    expect(afterRefund?.spent).toBe(0);
    expect(fits.task.creditsUsed).toBe(9);
    expect(removed).toBeNull();
    expect(free.task.accountSpendCounter).toBeUndefined();
    expect(await getBalance(store, userId)).toBe(100 - 4 - 9 - 20);
    const ledger = await listLedger(store, userId);
    expect(ledger.filter((entry) => entry.kind === 'refund').map((entry) => entry.delta)).toEqual([6]);
  });

  it('a save that times out part way through its stamps shows nothing and lets nothing past; saved again it holds', async () => {
    // Prepare: the real DynamoDB Local client, wrapped so that the stamps of shards 16 to 31 time out
    // (a network fault DynamoDB Local cannot produce), as a Lambda cut off part way would leave them.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 100 });
    const faulty: TestStore = { ...store, doc: stampsTimingOut(store, userId, 16) };

    // Act
    const save = setAccountSpendLimit(faulty, { userId, credits: 6, now: T0 });

    // Assert: the 500's error, the limit not shown, and no shard left enforcing what is not shown.
    await expect(save).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(await getAccountSpendLimit(store, userId, T0)).toBeNull();
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => retriedWhileBusy(() => acceptTask(store, { task: newTask(userId, 3) }))),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(8);

    // Act: the caller saves again, without the fault.
    const saved = await setAccountSpendLimit(store, { userId, credits: 6, now: T0 });
    const racers = await Promise.allSettled(
      Array.from({ length: 8 }, () => retriedWhileBusy(() => acceptTask(store, { task: newTask(userId, 3) }))),
    );

    // Assert: shown and enforced on every shard, exactly.
    expect(saved).toMatchObject({ credits: 6, spent: 0 });
    expect(racers.filter((result) => result.status === 'fulfilled')).toHaveLength(2);
    for (const result of racers) {
      if (result.status === 'rejected') expect(result.reason).toMatchObject({ scope: 'account', limit: 6 });
    }
    expect(await getBalance(store, userId)).toBe(100 - 24 - 6);
    expect((await auditUser(store, userId)).ok).toBe(true);
  });

  it('with a key budget too, the smaller one refuses and names itself', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 100 });
    const issued = await putApiKey(store, { userId, name: 'k', spendLimit: { credits: 50, period: 'day' }, now: T0 });
    await setAccountSpendLimit(store, { userId, credits: 8, now: T0 });
    const key = {
      keyId: issued.keyId,
      spendLimit: { credits: 50, period: 'day' as const, budgetKeyId: issued.keyId },
      spendLimitVersion: 1,
    };

    // Act
    const accepted = await acceptTask(store, { task: newTask(userId, 5, key) });
    const refused = acceptTask(store, { task: newTask(userId, 5, key) });

    // Assert
    expect(accepted.task.spendCounter).toMatch(/^KEYSPEND#key_/);
    expect(accepted.task.accountSpendCounter).toBe('KEYSPEND#ACCOUNT#2026-11');
    await expect(refused).rejects.toMatchObject({ scope: 'account', limit: 8, spent: 5 });
  });
});

/**
 * The store's document client, except that an account-limit stamp on balance shard `from` or above of
 * `userId` times out (the SDK's TimeoutError, nothing written), as a save cut off part way leaves it.
 */
function stampsTimingOut(store: TestStore, userId: string, from: number): TestStore['doc'] {
  const send = (command: unknown) => {
    const input = (
      command as { input?: { Key?: { PK?: string; SK?: string }; ExpressionAttributeNames?: Record<string, string> } }
    ).input;
    const shard = /^ACCOUNT(?:#(\d+))?$/.exec(input?.Key?.SK ?? '');
    // A stamp is the one single-item update of a balance shard that writes the limit's version.
    const stamp =
      Object.values(input?.ExpressionAttributeNames ?? {}).includes('acctLimitVersion') &&
      input?.Key?.PK === `USER#${userId}`;
    if (command instanceof UpdateCommand && stamp && shard && Number(shard[1] ?? 0) >= from) {
      return Promise.reject(Object.assign(new Error('Request timed out'), { name: 'TimeoutError' }));
    }
    return store.doc.send(command as UpdateCommand);
  };
  return new Proxy(store.doc, { get: (target, name) => (name === 'send' ? send : Reflect.get(target, name)) });
}
