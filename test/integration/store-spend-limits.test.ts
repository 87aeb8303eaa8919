import { ServiceBusyError, SpendLimitError } from '../../functions/core/errors';
import { TaskStatus } from '../../functions/core/task';
import { describeKeys } from '../../functions/http/key-views';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { revokeApiKey, rotateApiKey } from '../../functions/money/key-end';
import { putApiKey } from '../../functions/money/key-issue';
import { setSpendLimit } from '../../functions/money/key-limit';
import { failAndRefund } from '../../functions/money/refund';
import { getBalance } from '../../functions/store/accounts';
import { getApiKeyById } from '../../functions/store/api-keys';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { readSpent, stampLimitVersion } from '../../functions/store/spend';
import { getTask } from '../../functions/store/tasks';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { newTask, newUserId, retriedWhileBusy, T0 } from '../support/store-fixtures';

/** Racers on one key's limit of 10 tasks: tens race in `npm test`, 200 in `npm run test:stress`. */
const RACERS = atScale(40, 200);

// 200 accepts racing on one counter through the conflict layer: seconds, minutes on a loaded machine.
jest.setTimeout(300_000);

describe('spend limits per key, enforced in the accept transaction (DynamoDB Local, conflict layer on)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 5 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  /** A key of a new account with `credits` on the balance and the given limit, as the authorizer reads it. */
  async function limitedKey(balance: number, spendLimit: { credits: number; period: 'day' | 'month' | 'total' }) {
    const userId = newUserId();
    await grantCredits(store, { userId, amount: balance });
    const issued = await putApiKey(store, { userId, name: 'limited', spendLimit, now: T0 });
    const record = await getApiKeyById(store, issued.keyId);
    if (!record?.spendLimit) throw new Error('the key has no limit');
    return { userId, keyId: issued.keyId, spendLimit: record.spendLimit, spendLimitVersion: record.spendLimitVersion };
  }

  it(`${RACERS} parallel accepts with one key on a limit of 10 tasks accept exactly 10; the rest are 402`, async () => {
    // Prepare: plenty of credits, a daily budget of 10 tasks of cost 3.
    const key = await limitedKey(10_000, { credits: 30, period: 'day' });
    const tasks = Array.from({ length: RACERS }, () => newTask(key.userId, 3, { ...key }));

    // Act: callers retry a busy answer as the 503 tells them to.
    const results = await Promise.allSettled(tasks.map((task) => retriedWhileBusy(() => acceptTask(store, { task }))));

    // Assert
    const accepted = results.filter((result) => result.status === 'fulfilled');
    const refused = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(accepted).toHaveLength(10);
    expect(refused).toHaveLength(RACERS - 10);
    for (const reason of refused) {
      expect(reason).toBeInstanceOf(SpendLimitError);
      expect(reason).toMatchObject({ limit: 30, period: 'day', resetsAt: '2026-11-02T00:00:00.000Z' });
      expect([28, 29, 30]).toContain((reason as SpendLimitError).spent);
    }
    expect(await readSpent(store, key.userId, key.spendLimit, T0)).toBe(30);
    expect(await getBalance(store, key.userId)).toBe(10_000 - 30);
    const ledger = await listLedger(store, key.userId);
    expect(ledger.filter((entry) => entry.kind === 'debit').map((entry) => entry.delta)).toEqual(Array(10).fill(-3));
    expect(await auditUser(store, key.userId)).toMatchObject({ balance: 9970, ledgerSum: 9970, ok: true });
  });

  it('answers 402 with what was spent and debits nothing; a cost above the whole limit never fits', async () => {
    // Prepare
    const key = await limitedKey(100, { credits: 5, period: 'month' });
    await acceptTask(store, { task: newTask(key.userId, 4, { ...key }) });

    // Act
    const over = acceptTask(store, { task: newTask(key.userId, 2, { ...key }) });
    const tooBig = acceptTask(store, {
      task: newTask(key.userId, 6, { ...key, userId: key.userId }),
    });

    // Assert
    await expect(over).rejects.toEqual(new SpendLimitError(5, 'month', 4, '2026-12-01T00:00:00.000Z'));
    await expect(tooBig).rejects.toMatchObject({ limit: 5, spent: 4 });
    expect(await getBalance(store, key.userId)).toBe(96);
    const fresh = await limitedKey(100, { credits: 5, period: 'total' });
    await expect(acceptTask(store, { task: newTask(fresh.userId, 6, { ...fresh }) })).rejects.toEqual(
      new SpendLimitError(5, 'total', 0, null),
    );
    expect(await getBalance(store, fresh.userId)).toBe(100);
  });

  it('a refund gives the budget back to the period the task was counted in', async () => {
    // Prepare: the budget spent by two tasks.
    const key = await limitedKey(100, { credits: 6, period: 'day' });
    const first = await acceptTask(store, { task: newTask(key.userId, 3, { ...key }) });
    await acceptTask(store, { task: newTask(key.userId, 3, { ...key }) });
    await expect(acceptTask(store, { task: newTask(key.userId, 3, { ...key }) })).rejects.toBeInstanceOf(
      SpendLimitError,
    );

    // Act
    const refund = await failAndRefund(store, {
      userId: key.userId,
      taskId: first.task.taskId,
      errorCode: 'PROVIDER_ERROR',
      errorMessage: 'failed',
      now: new Date(T0.getTime() + 60_000),
    });

    // Assert: one more task fits again.
    expect(refund?.refunded).toBe(true);
    expect(first.task.spendCounter).toMatch(/^KEYSPEND#.+#2026-11-01$/);
    expect(await readSpent(store, key.userId, key.spendLimit, T0)).toBe(3);
    const again = await acceptTask(store, { task: newTask(key.userId, 3, { ...key }) });
    expect(again.task.status).toBe(TaskStatus.PENDING);
    expect(await readSpent(store, key.userId, key.spendLimit, T0)).toBe(6);
    expect(await auditUser(store, key.userId)).toMatchObject({ balance: 94, ok: true });
  });

  it('counts a task accepted the next UTC day in a new period', async () => {
    // Prepare
    const key = await limitedKey(100, { credits: 3, period: 'day' });
    await acceptTask(store, { task: newTask(key.userId, 3, { ...key, now: new Date('2026-11-01T23:59:59.999Z') }) });

    // Act
    const tomorrow = new Date('2026-11-02T00:00:00.000Z');
    const next = await acceptTask(store, { task: newTask(key.userId, 3, { ...key, now: tomorrow }) });

    // Assert
    expect(next.task.spendCounter).toMatch(/#2026-11-02$/);
    expect(await readSpent(store, key.userId, key.spendLimit, T0)).toBe(3);
    expect(await readSpent(store, key.userId, key.spendLimit, tomorrow)).toBe(3);
    await expect(acceptTask(store, { task: newTask(key.userId, 1, { ...key, now: tomorrow }) })).rejects.toMatchObject({
      resetsAt: '2026-11-03T00:00:00.000Z',
    });
  });

  it('an Idempotency-Key replay of an accepted task answers the task even over the limit', async () => {
    // Prepare
    const key = await limitedKey(100, { credits: 3, period: 'day' });
    const idempotency = { key: 'retry-me', requestHash: 'hash-1' };
    const original = await acceptTask(store, { task: newTask(key.userId, 3, { ...key }), idempotency });

    // Act
    const replay = await acceptTask(store, { task: newTask(key.userId, 3, { ...key }), idempotency });

    // Assert
    expect(replay).toEqual({ task: original.task, replayed: true });
    expect(await readSpent(store, key.userId, key.spendLimit, T0)).toBe(3);
  });

  it('a changed limit applies at once, and an accept holding the old one is refused (busy), never counted', async () => {
    // Prepare
    const key = await limitedKey(100, { credits: 30, period: 'day' });
    await acceptTask(store, { task: newTask(key.userId, 3, { ...key }) });

    // Act: lower the limit to 4; then an accept with the view read before the change.
    const changed = await setSpendLimit(store, {
      keyId: key.keyId,
      ownerId: key.userId,
      spendLimit: { credits: 4, period: 'day' },
      now: T0,
    });
    const stale = acceptTask(store, { task: newTask(key.userId, 3, { ...key }) });

    // Assert
    expect(changed).toMatchObject({ spendLimit: { credits: 4, period: 'day', budgetKeyId: key.keyId } });
    expect(changed.spendLimitVersion).toBe(2);
    await expect(stale).rejects.toBeInstanceOf(ServiceBusyError);
    const current = { spendLimit: changed.spendLimit, spendLimitVersion: changed.spendLimitVersion };
    await expect(acceptTask(store, { task: newTask(key.userId, 3, { ...key, ...current }) })).rejects.toEqual(
      new SpendLimitError(4, 'day', 3, '2026-11-02T00:00:00.000Z'),
    );
    await acceptTask(store, { task: newTask(key.userId, 1, { ...key, ...current }) });
    expect(await getBalance(store, key.userId)).toBe(96);
  });

  it('removing the limit (null) lets the key spend without a counter; adding one to an unlimited key counts', async () => {
    // Prepare
    const key = await limitedKey(100, { credits: 3, period: 'day' });

    // Act
    const removed = await setSpendLimit(store, { keyId: key.keyId, ownerId: key.userId, spendLimit: null, now: T0 });
    const free = await acceptTask(store, {
      task: newTask(key.userId, 10, { keyId: key.keyId, spendLimitVersion: removed.spendLimitVersion }),
    });
    const unlimited = await putApiKey(store, { userId: key.userId, name: 'plain', now: T0 });
    const staleUnlimited = acceptTask(store, { task: newTask(key.userId, 1, { keyId: unlimited.keyId }) });
    const raceGuard = setSpendLimit(store, {
      keyId: unlimited.keyId,
      ownerId: key.userId,
      spendLimit: { credits: 2, period: 'total' },
      now: T0,
    });

    // Assert
    expect(removed.spendLimit).toBeUndefined();
    expect(free.task.spendCounter).toBeUndefined();
    // The accept that raced the new limit either came first (accepted, before any counter) or met the
    // stamped guard and was refused busy, as a view from before the limit is (below): never a 402.
    const stale = await staleUnlimited.then(
      () => 'accepted',
      (error: unknown) => (error instanceof ServiceBusyError ? 'busy' : Promise.reject(error)),
    );
    expect(['accepted', 'busy']).toContain(stale);
    const added = await raceGuard;
    expect(added.spendLimitVersion).toBe(1);
    // A view from before the limit existed (version 0) is refused now.
    await expect(
      acceptTask(store, { task: newTask(key.userId, 1, { keyId: unlimited.keyId, spendLimitVersion: 0 }) }),
    ).rejects.toBeInstanceOf(ServiceBusyError);
    const fresh = { keyId: unlimited.keyId, spendLimit: added.spendLimit, spendLimitVersion: 1 };
    await acceptTask(store, { task: newTask(key.userId, 2, fresh) });
    await expect(acceptTask(store, { task: newTask(key.userId, 1, fresh) })).rejects.toBeInstanceOf(SpendLimitError);
  });

  it('a revoked key is still 401 rather than busy, whatever limit stamp its guards carry', async () => {
    // Prepare
    const key = await limitedKey(100, { credits: 30, period: 'day' });
    await stampLimitVersion(store, { userId: key.userId, keyId: key.keyId, version: 1, now: T0 });
    await revokeApiKey(store, { keyId: key.keyId, now: T0 });

    // Act
    const accept = acceptTask(store, { task: newTask(key.userId, 3, { ...key, now: new Date(T0.getTime() + 1000) }) });

    // Assert
    await expect(accept).rejects.toMatchObject({ name: 'UnauthorizedError' });
  });

  it('rotation carries the limit and the spending: both keys count into one budget', async () => {
    // Prepare
    const key = await limitedKey(100, { credits: 9, period: 'day' });
    await acceptTask(store, { task: newTask(key.userId, 3, { ...key }) });

    // Act
    const rotated = await rotateApiKey(store, { keyId: key.keyId, graceSeconds: 3600, now: T0 });
    const next = await getApiKeyById(store, rotated.issued.keyId);
    const nextView = {
      keyId: rotated.issued.keyId,
      spendLimit: next?.spendLimit,
      spendLimitVersion: next?.spendLimitVersion,
    };
    await acceptTask(store, { task: newTask(key.userId, 3, nextView) });
    await acceptTask(store, { task: newTask(key.userId, 3, { ...key }) });

    // Assert
    expect(next?.spendLimit).toEqual({ credits: 9, period: 'day', budgetKeyId: key.keyId });
    await expect(acceptTask(store, { task: newTask(key.userId, 1, nextView) })).rejects.toMatchObject({ spent: 9 });
    const listed = await describeKeys(store, key.userId, T0);
    expect(listed.map((entry) => entry.spendLimit)).toEqual([
      { credits: 9, period: 'day', spent: 9, resetsAt: '2026-11-02T00:00:00.000Z' },
      { credits: 9, period: 'day', spent: 9, resetsAt: '2026-11-02T00:00:00.000Z' },
    ]);
    // Changing the old key's limit is refused: the newest key carries it.
    await expect(
      setSpendLimit(store, { keyId: key.keyId, spendLimit: { credits: 1, period: 'day' }, now: T0 }),
    ).rejects.toMatchObject({ name: 'ApiKeyStateError' });
    const task = await getTask(store, key.userId, (await listLedger(store, key.userId))[1]?.taskId ?? '');
    expect(task?.spendCounter).toBe(`KEYSPEND#${key.keyId}#2026-11-01`);
  });

  it('a limit changed on the newest key applies to the key in its rotation grace at once', async () => {
    // Prepare: a key with a loose limit, rotated with an hour of grace; the leaked old key's view as
    // the authorizer read it before the change.
    const key = await limitedKey(100, { credits: 90, period: 'day' });
    const rotated = await rotateApiKey(store, { keyId: key.keyId, graceSeconds: 3600, now: T0 });
    const oldView = { keyId: key.keyId, spendLimit: key.spendLimit, spendLimitVersion: key.spendLimitVersion };

    // Act: tightened on the newest key (the one the owner can change).
    await setSpendLimit(store, { keyId: rotated.issued.keyId, spendLimit: { credits: 3, period: 'day' }, now: T0 });

    // Assert: the old key's stored limit is the new one, a view of the old terms cannot commit, and the
    // old key spends within the new limit.
    const old = await getApiKeyById(store, key.keyId);
    expect(old?.spendLimit).toEqual({ credits: 3, period: 'day', budgetKeyId: key.keyId });
    await expect(acceptTask(store, { task: newTask(key.userId, 3, oldView) })).rejects.toBeInstanceOf(ServiceBusyError);
    const freshView = { keyId: key.keyId, spendLimit: old?.spendLimit, spendLimitVersion: old?.spendLimitVersion };
    await acceptTask(store, { task: newTask(key.userId, 3, freshView) });
    await expect(acceptTask(store, { task: newTask(key.userId, 3, freshView) })).rejects.toMatchObject({
      name: 'SpendLimitError',
      limit: 3,
      spent: 3,
    });
    expect(await getBalance(store, key.userId)).toBe(97);
    expect((await auditUser(store, key.userId)).ok).toBe(true);
  });

  it('a refused limit change leaves the key in grace usable on its former limit', async () => {
    // Prepare: rotated with grace, then the newest key revoked, so a change on it is refused.
    const key = await limitedKey(100, { credits: 9, period: 'day' });
    const rotated = await rotateApiKey(store, { keyId: key.keyId, graceSeconds: 3600, now: T0 });
    await revokeApiKey(store, { keyId: rotated.issued.keyId, now: T0 });

    // Act
    const change = setSpendLimit(store, {
      keyId: rotated.issued.keyId,
      spendLimit: { credits: 3, period: 'day' },
      now: T0,
    });

    // Assert
    await expect(change).rejects.toMatchObject({ name: 'ApiKeyStateError' });
    const old = await getApiKeyById(store, key.keyId);
    expect(old?.spendLimit).toEqual({ credits: 9, period: 'day', budgetKeyId: key.keyId });
    const view = { keyId: key.keyId, spendLimit: old?.spendLimit, spendLimitVersion: old?.spendLimitVersion };
    await acceptTask(store, { task: newTask(key.userId, 6, view) });
    expect(await getBalance(store, key.userId)).toBe(94);
  });
});
