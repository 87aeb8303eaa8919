import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { TaskStatus } from '../../functions/core/task';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { failAndRefund } from '../../functions/money/refund';
import { getBalance } from '../../functions/store/accounts';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { ledgerEntryItem } from '../../functions/store/ledger-entry';
import { claimRefresh, completeTask, getTask, recordProviderTask } from '../../functions/store/tasks';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { newTask, newUserId, retriedWhileBusy, T0 } from '../support/store-fixtures';

// DynamoDB Local runs every transaction through one JVM; racing hundreds of them takes seconds, and
// beside a second copy of the suite a race of tens took over a minute.
jest.setTimeout(180_000);

/** Callers racing one refund: tens still race through the conflict layer; the stress run takes 200. */
const REFUND_RACERS = atScale(25, 200);

const INTERVAL_MS = 30_000;
const at = (ms: number): Date => new Date(T0.getTime() + ms);

describe('the task lifecycle writes on DynamoDB Local', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 5 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  /** A user with `credits` and one accepted task costing `cost`. */
  async function acceptedTask(credits = 10, cost = 4) {
    const userId = newUserId();
    await grantCredits(store, { userId, amount: credits });
    const { task } = await acceptTask(store, { task: newTask(userId, cost) });
    return task;
  }

  describe('getTask', () => {
    it('does not find another owner’s task', async () => {
      // Prepare
      const task = await acceptedTask();

      // Act
      const asOwner = await getTask(store, task.userId, task.taskId);
      const asStranger = await getTask(store, newUserId(), task.taskId);

      // Assert
      expect(asOwner?.taskId).toBe(task.taskId);
      expect(asStranger).toBeUndefined();
    });

    it('returns the record without table keys', async () => {
      // Prepare
      const task = await acceptedTask();

      // Act
      const read = await getTask(store, task.userId, task.taskId);

      // Assert
      expect(Object.keys(read ?? {}).filter((name) => /^(PK|SK|GSI1PK|GSI1SK)$/.test(name))).toEqual([]);
    });

    it('returns undefined for an unknown task', async () => {
      // Act
      const read = await getTask(store, newUserId(), 'no-such-task');

      // Assert
      expect(read).toBeUndefined();
    });

    it('finds no task for an id too long to be a key, instead of failing', async () => {
      // Prepare
      const task = await acceptedTask();

      // Act
      const read = await getTask(store, task.userId, 'x'.repeat(1100));

      // Assert
      expect(read).toBeUndefined();
    });
  });

  describe('claimRefresh', () => {
    it('counts the acceptance as the first contact: no claim wins within one interval of it', async () => {
      // Prepare
      const task = await acceptedTask();
      const claim = (now: Date) =>
        claimRefresh(store, { userId: task.userId, taskId: task.taskId, now, intervalMs: INTERVAL_MS });

      // Act
      const atAcceptance = await Promise.all(Array.from({ length: 20 }, () => claim(at(0))));
      const justBefore = await Promise.all(Array.from({ length: 20 }, () => claim(at(INTERVAL_MS - 1))));
      const afterOneInterval = await Promise.all(Array.from({ length: 20 }, () => claim(at(INTERVAL_MS))));

      // Assert
      expect(task.lastCheckedAt).toBe(T0.getTime());
      expect(atAcceptance.filter((result) => result !== undefined)).toHaveLength(0);
      expect(justBefore.filter((result) => result !== undefined)).toHaveLength(0);
      const winners = afterOneInterval.filter((result) => result !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toEqual(expect.objectContaining({ lastCheckedAt: at(INTERVAL_MS).getTime(), attempts: 1 }));
    });

    it('lets exactly one of 20 racers win per interval, and one more after it', async () => {
      // Prepare
      const task = await acceptedTask();
      const claim = (now: Date) =>
        claimRefresh(store, { userId: task.userId, taskId: task.taskId, now, intervalMs: INTERVAL_MS });
      // The acceptance at T0 is the first contact, so the first claim is due one interval later.
      const firstDue = INTERVAL_MS + 1000;

      // Act
      const firstRound = await Promise.all(Array.from({ length: 20 }, () => claim(at(firstDue))));
      const tooEarly = await Promise.all(Array.from({ length: 20 }, () => claim(at(firstDue + INTERVAL_MS - 1))));
      const secondRound = await Promise.all(Array.from({ length: 20 }, () => claim(at(firstDue + INTERVAL_MS))));

      // Assert
      const firstWinners = firstRound.filter((result) => result !== undefined);
      expect(firstWinners).toHaveLength(1);
      expect(firstWinners[0]).toEqual(expect.objectContaining({ lastCheckedAt: at(firstDue).getTime(), attempts: 1 }));
      expect(tooEarly.filter((result) => result !== undefined)).toHaveLength(0);
      const secondWinners = secondRound.filter((result) => result !== undefined);
      expect(secondWinners).toHaveLength(1);
      expect(secondWinners[0]).toEqual(
        expect.objectContaining({ lastCheckedAt: at(firstDue + INTERVAL_MS).getTime(), attempts: 2 }),
      );
      expect((await auditUser(store, task.userId)).ok).toBe(true);
    });

    it('never claims a terminal or missing task', async () => {
      // Prepare
      const task = await acceptedTask();
      await completeTask(store, { userId: task.userId, taskId: task.taskId, resultKeys: ['r/1.png'], now: at(1) });

      // Act
      const terminal = await claimRefresh(store, {
        userId: task.userId,
        taskId: task.taskId,
        now: at(2),
        intervalMs: 0,
      });
      const missing = await claimRefresh(store, { userId: task.userId, taskId: 'missing', now: at(2), intervalMs: 0 });

      // Assert
      expect(terminal).toBeUndefined();
      expect(missing).toBeUndefined();
    });
  });

  describe('recordProviderTask', () => {
    it('records the provider id once', async () => {
      // Prepare
      const task = await acceptedTask();
      const ids = { userId: task.userId, taskId: task.taskId };

      // Act
      const first = await recordProviderTask(store, { ...ids, providerTaskId: 'p-1', now: at(10) });
      const second = await recordProviderTask(store, { ...ids, providerTaskId: 'p-2', now: at(20) });

      // Assert
      expect(first).toEqual(expect.objectContaining({ providerTaskId: 'p-1', updatedAt: at(10).toISOString() }));
      expect(second).toBeUndefined();
      expect((await getTask(store, task.userId, task.taskId))?.providerTaskId).toBe('p-1');
    });
  });

  describe('completeTask', () => {
    it('completes a pending task once; it then cannot be completed, failed or refunded', async () => {
      // Prepare
      const task = await acceptedTask(10, 4);
      const ids = { userId: task.userId, taskId: task.taskId };

      // Act
      const completed = await completeTask(store, { ...ids, resultKeys: ['a.png', 'b.png'], now: at(5) });
      const again = await completeTask(store, { ...ids, resultKeys: ['c.png'], now: at(6) });
      const refund = await failAndRefund(store, {
        ...ids,
        errorCode: 'TIMEOUT',
        errorMessage: 'late',
        now: at(7),
        task,
      });

      // Assert
      expect(completed).toEqual({
        ...task,
        status: TaskStatus.COMPLETED,
        resultKeys: ['a.png', 'b.png'],
        updatedAt: at(5).toISOString(),
      });
      expect(again).toBeUndefined();
      expect(refund).toEqual({ task: completed, refunded: false });
      expect(await getTask(store, task.userId, task.taskId)).toEqual(completed);
      expect(await auditUser(store, task.userId)).toEqual(expect.objectContaining({ balance: 6, ok: true }));
    });
  });

  describe('failAndRefund', () => {
    it('fails the task and gives the credits back', async () => {
      // Prepare
      const task = await acceptedTask(10, 4);

      // Act
      const result = await failAndRefund(store, {
        userId: task.userId,
        taskId: task.taskId,
        errorCode: 'PROVIDER_ERROR',
        errorMessage: 'the provider failed',
        now: at(9),
      });

      // Assert
      const failed = {
        ...task,
        status: TaskStatus.FAILED,
        creditsRefunded: true,
        errorCode: 'PROVIDER_ERROR',
        errorMessage: 'the provider failed',
        updatedAt: at(9).toISOString(),
      };
      expect(result).toEqual({ task: failed, refunded: true });
      expect(await getTask(store, task.userId, task.taskId)).toEqual(failed);
      expect(await getBalance(store, task.userId)).toBe(10);
      const refunds = (await listLedger(store, task.userId)).filter((entry) => entry.kind === 'refund');
      expect(refunds).toEqual([
        { userId: task.userId, kind: 'refund', delta: 4, at: at(9).toISOString(), taskId: task.taskId },
      ]);
      expect(await auditUser(store, task.userId)).toEqual(expect.objectContaining({ balance: 10, ok: true }));
    });

    it.each([
      ['with the caller’s copy of the task', true],
      ['reading the task first', false],
    ])(`refunds exactly once when ${REFUND_RACERS} callers race (%s)`, async (_label, withCopy) => {
      // Prepare
      const task = await acceptedTask(10, 4);

      // Act: each racer retries a busy answer, as the sweeper and the next poll retry a refund that lost
      // to contention (on a loaded machine the racers can outlast one call's retry budget).
      const results = await Promise.all(
        Array.from({ length: REFUND_RACERS }, (_, i) =>
          retriedWhileBusy(() =>
            failAndRefund(store, {
              userId: task.userId,
              taskId: task.taskId,
              errorCode: 'PROVIDER_ERROR',
              errorMessage: `racer ${i}`,
              now: at(100 + i),
              ...(withCopy ? { task } : {}),
            }),
          ),
        ),
      );

      // Assert
      expect(results.filter((result) => result?.refunded === true)).toHaveLength(1);
      expect(results.filter((result) => result?.refunded === false)).toHaveLength(REFUND_RACERS - 1);
      for (const result of results) {
        expect(result?.task).toEqual(expect.objectContaining({ status: TaskStatus.FAILED, creditsRefunded: true }));
      }
      const refunds = (await listLedger(store, task.userId)).filter((entry) => entry.kind === 'refund');
      expect(refunds).toHaveLength(1);
      expect(await auditUser(store, task.userId)).toEqual(expect.objectContaining({ balance: 10, ok: true }));
    });

    it('cannot complete a failed task', async () => {
      // Prepare
      const task = await acceptedTask();
      const ids = { userId: task.userId, taskId: task.taskId };
      await failAndRefund(store, { ...ids, errorCode: 'TIMEOUT', errorMessage: 'too old', now: at(1), task });

      // Act
      const completed = await completeTask(store, { ...ids, resultKeys: ['x.png'], now: at(2) });

      // Assert
      expect(completed).toBeUndefined();
      expect(await getTask(store, task.userId, task.taskId)).toEqual(
        expect.objectContaining({ status: TaskStatus.FAILED, errorCode: 'TIMEOUT' }),
      );
      expect((await auditUser(store, task.userId)).ok).toBe(true);
    });

    it('returns undefined for a missing task, with or without a copy', async () => {
      // Prepare
      const task = await acceptedTask();
      const ghost = { ...task, taskId: 'ghost' };
      const input = {
        userId: task.userId,
        taskId: 'ghost',
        errorCode: 'TIMEOUT' as const,
        errorMessage: 'x',
        now: at(1),
      };

      // Act
      const read = await failAndRefund(store, input);
      const withCopy = await failAndRefund(store, { ...input, task: ghost });

      // Assert
      expect(read).toBeUndefined();
      expect(withCopy).toBeUndefined();
      expect((await auditUser(store, task.userId)).ok).toBe(true);
    });

    it('refuses a copy that does not match the stored task, refunding nothing', async () => {
      // Prepare
      const task = await acceptedTask(10, 4);

      // Act
      const refund = failAndRefund(store, {
        userId: task.userId,
        taskId: task.taskId,
        errorCode: 'PROVIDER_ERROR',
        errorMessage: 'x',
        now: at(1),
        task: { ...task, creditsUsed: 40 },
      });

      // Assert
      await expect(refund).rejects.toThrow('does not match');
      expect(await getBalance(store, task.userId)).toBe(6);
      expect((await getTask(store, task.userId, task.taskId))?.status).toBe(TaskStatus.PENDING);
      expect((await auditUser(store, task.userId)).ok).toBe(true);
    });

    it('answers refunded:false, writing nothing, when a condition failed on a task still pending and charged as the copy says; a later try refunds', async () => {
      // Prepare: the task's refund entry is there already (delta 0, so the ledger still sums to the
      // balance), so the refund's ledger condition fails while the task itself stays refundable.
      const task = await acceptedTask(10, 4);
      const planted = ledgerEntryItem(
        { userId: task.userId, kind: 'refund', delta: 0, at: at(1).toISOString(), taskId: task.taskId },
        task.createdAt,
      );
      await store.doc.send(new PutCommand({ TableName: store.tableName, Item: planted }));
      const input = {
        userId: task.userId,
        taskId: task.taskId,
        errorCode: 'TIMEOUT' as const,
        errorMessage: 'x',
        task,
      };

      // Act
      const refused = await failAndRefund(store, { ...input, now: at(1) });
      const balanceAfterRefused = await getBalance(store, task.userId);
      const taskAfterRefused = await getTask(store, task.userId, task.taskId);
      await store.doc.send(new DeleteCommand({ TableName: store.tableName, Key: { PK: planted.PK, SK: planted.SK } }));
      const retried = await failAndRefund(store, { ...input, now: at(2) });

      // Assert
      expect(refused?.refunded).toBe(false);
      expect(refused?.task.status).toBe(TaskStatus.PENDING);
      expect(balanceAfterRefused).toBe(6);
      expect(taskAfterRefused).toEqual(expect.objectContaining({ status: TaskStatus.PENDING, creditsRefunded: false }));
      expect(retried?.refunded).toBe(true);
      expect(await getBalance(store, task.userId)).toBe(10);
      expect((await auditUser(store, task.userId)).ok).toBe(true);
    });
  });
});
