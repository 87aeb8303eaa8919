/**
 * One account under a burst, with DynamoDB's per-item transaction conflicts modelled (the
 * conflict-faithful layer, 10 ms hold): accepts, refunds, grants and idempotent replays race, and the
 * money stays exact. Also: an ended key cannot spend, whatever an authorizer cache still allows.
 */
import { UnauthorizedError } from '../../functions/core/errors';
import { TaskStatus } from '../../functions/core/task';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { revokeApiKey, rotateApiKey } from '../../functions/money/key-end';
import { putApiKey } from '../../functions/money/key-issue';
import { failAndRefund } from '../../functions/money/refund';
import { getBalance } from '../../functions/store/accounts';
import { readShards } from '../../functions/store/balance';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newTask, newUserId, retriedWhileBusy } from '../support/store-fixtures';

// Bursts through one JVM take seconds, and minutes on a machine loaded by other work: a guard against
// hangs, not a speed check.
jest.setTimeout(240_000);

describe('one account, many writes in flight, with transaction conflicts modelled', () => {
  let store: TestStore;

  beforeAll(async () => {
    // The product's own retry budget: where a burst outlasts it (a loaded machine), an operation
    // answers busy having written nothing, and its caller tries again (retriedWhileBusy).
    store = await createTestStore({ conflicts: { holdMs: 10 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  it('accepts, refunds, grants and replays together: all succeed, money exact', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 600 });
    const toRefund = [];
    for (let i = 0; i < 12; i++) toRefund.push((await acceptTask(store, { task: newTask(userId, 3) })).task);
    const before = store.conflicts?.stats().cancelledTransactions ?? 0;
    const idempotent = Array.from({ length: 8 }, (_, i) => ({ key: `burst-${i}`, requestHash: `hash-${i}` }));

    // Act: 48 plain accepts, 8 keys sent 3 times each, 12 refunds each raced twice, 6 grants; each
    // caller tries again while the answer is busy, as a 503 (or the sweeper, for refunds) does.
    const accepts = Array.from({ length: 48 }, () => {
      const task = newTask(userId, 3);
      return retriedWhileBusy(() => acceptTask(store, { task }));
    });
    const replays = idempotent.flatMap((idempotency) =>
      Array.from({ length: 3 }, () => {
        const task = newTask(userId, 3);
        return retriedWhileBusy(() => acceptTask(store, { task, idempotency }));
      }),
    );
    const refunds = toRefund.flatMap((task) =>
      Array.from({ length: 2 }, () =>
        retriedWhileBusy(() =>
          failAndRefund(store, {
            userId,
            taskId: task.taskId,
            errorCode: 'PROVIDER_ERROR',
            errorMessage: 'failed',
            now: new Date(),
            task,
          }),
        ),
      ),
    );
    const grants = Array.from({ length: 6 }, (_, i) =>
      retriedWhileBusy(() => grantCredits(store, { userId, amount: 7, grantId: `burst-grant-${i}` })),
    );
    const [accepted, replayed, refunded, granted] = await Promise.all([
      Promise.all(accepts),
      Promise.all(replays),
      Promise.all(refunds),
      Promise.all(grants),
    ]);

    // Assert
    expect(accepted.every((result) => !result.replayed)).toBe(true);
    for (let i = 0; i < idempotent.length; i++) {
      const sent = replayed.slice(i * 3, i * 3 + 3);
      expect(new Set(sent.map((result) => result.task.taskId)).size).toBe(1);
      expect(sent.filter((result) => !result.replayed)).toHaveLength(1);
    }
    expect(refunded.filter((result) => result?.refunded)).toHaveLength(12);
    expect(granted).toHaveLength(6);
    const debits = 12 + 48 + idempotent.length;
    const expected = 600 + 6 * 7 - 3 * debits + 3 * 12;
    expect(await getBalance(store, userId)).toBe(expected);
    const ledger = await listLedger(store, userId);
    expect(ledger.filter((entry) => entry.kind === 'debit')).toHaveLength(debits);
    expect(ledger.filter((entry) => entry.kind === 'refund')).toHaveLength(12);
    expect(ledger.filter((entry) => entry.kind === 'grant')).toHaveLength(7);
    expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: expected, ok: true }));
    expect((await readShards(store, userId)).every((shard) => shard >= 0)).toBe(true);
    // The layer really did cancel transactions: the burst met DynamoDB's conflicts and won through them.
    expect((store.conflicts?.stats().cancelledTransactions ?? 0) - before).toBeGreaterThan(0);
  });

  it('accepts exactly what the credits pay for, however they are spread: 402 only for the last', async () => {
    // Prepare: 40 credits spread over 32 shards (1 or 2 each): no single shard can pay 3.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 40 });

    // Act
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, () => {
        const task = newTask(userId, 3);
        return retriedWhileBusy(() => acceptTask(store, { task }));
      }),
    );

    // Assert
    const accepted = results.filter((result) => result.status === 'fulfilled');
    const refused = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(accepted).toHaveLength(13);
    expect(refused).toHaveLength(3);
    for (const reason of refused) expect(reason).toMatchObject({ required: 3, balance: 1 });
    expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 1, ok: true }));
  });

  it('reads a balance written before sharding (the single ACCOUNT item) as shard 0 and spends it', async () => {
    // Prepare: the item as the service wrote it before balance shards existed.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 5 });
    const shards = await readShards(store, userId);

    // Act
    const accept = await acceptTask(store, { task: newTask(userId, 5) });

    // Assert
    expect(shards[0]).toBe(1);
    expect(shards.reduce((sum, balance) => sum + balance, 0)).toBe(5);
    expect(accept.replayed).toBe(false);
    expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 0, ok: true }));
  });

  describe('an ended key spends nothing, even behind a cached Allow', () => {
    async function userWithKey(credits: number) {
      const userId = newUserId();
      await grantCredits(store, { userId, amount: credits });
      const key = await putApiKey(store, { userId, name: 'k' });
      return { userId, keyId: key.keyId };
    }

    it('refuses an accept with a revoked key: 401, no debit, no task', async () => {
      // Prepare
      const { userId, keyId } = await userWithKey(30);
      await revokeApiKey(store, { keyId });
      const task = newTask(userId, 3, { keyId, now: new Date() });

      // Act
      const accept = acceptTask(store, { task });

      // Assert
      await expect(accept).rejects.toBeInstanceOf(UnauthorizedError);
      expect(await getTask(store, userId, task.taskId)).toBeUndefined();
      expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 30, entries: 1, ok: true }));
    });

    it('lets the rotated key spend until its grace ends and not a second longer; others keep spending', async () => {
      // Prepare
      const { userId, keyId } = await userWithKey(30);
      const now = new Date();
      const rotated = await rotateApiKey(store, { keyId, graceSeconds: 20, now });
      const end = (rotated.previous.expiresAt ?? 0) * 1000;

      // Act
      const inGrace = await acceptTask(store, { task: newTask(userId, 3, { keyId, now: new Date(end - 1000) }) });
      const atEnd = acceptTask(store, { task: newTask(userId, 3, { keyId, now: new Date(end) }) });
      const newKey = await acceptTask(store, {
        task: newTask(userId, 3, { keyId: rotated.issued.keyId, now: new Date(end) }),
      });
      const noKey = await acceptTask(store, { task: newTask(userId, 3, { keyId: undefined, now: new Date(end) }) });

      // Assert
      expect(inGrace.task.status).toBe(TaskStatus.PENDING);
      await expect(atEnd).rejects.toBeInstanceOf(UnauthorizedError);
      expect(newKey.replayed).toBe(false);
      expect(noKey.replayed).toBe(false);
      expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 21, ok: true }));
    });

    it('rotation with grace 0 stops the old key at once, even for a replay of its Idempotency-Key', async () => {
      // Prepare
      const { userId, keyId } = await userWithKey(30);
      const idempotency = { key: 'before-rotation', requestHash: 'h' };
      await acceptTask(store, { task: newTask(userId, 3, { keyId, now: new Date() }), idempotency });
      await rotateApiKey(store, { keyId, graceSeconds: 0 });

      // Act
      const replay = acceptTask(store, { task: newTask(userId, 3, { keyId, now: new Date() }), idempotency });
      const fresh = acceptTask(store, { task: newTask(userId, 3, { keyId, now: new Date() }) });

      // Assert
      await expect(replay).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(fresh).rejects.toBeInstanceOf(UnauthorizedError);
      expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 27, ok: true }));
    });
  });
});
