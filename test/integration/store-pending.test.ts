import { UsageError } from '../../functions/core/errors';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { failAndRefund } from '../../functions/money/refund';
import { shardOf } from '../../functions/store/keys';
import { auditUser } from '../../functions/store/ledger';
import { TABLE } from '../../functions/store/table';
import { allPendingTasks, completeTask, listPendingTasks, type PendingTaskRef } from '../../functions/store/tasks';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newTask, newUserId, T0 } from '../support/store-fixtures';

// DynamoDB Local runs every transaction through one JVM; racing hundreds of them takes seconds.
jest.setTimeout(60_000);

/** A task id that lands in `shard` (ids are opaque; the shard is a hash of the id). */
function taskIdInShard(shard: number, seed: string): string {
  for (let i = 0; ; i++) {
    const id = `${seed}-${i}`;
    if (shardOf(id) === shard) return id;
  }
}

describe('the pending-task index on DynamoDB Local', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore();
  });

  afterAll(async () => {
    await store.dispose();
  });

  it('pages through one shard oldest first, past one page, with an opaque cursor', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 100 });
    const shard = 3;
    const accepted: PendingTaskRef[] = [];
    for (let i = 0; i < 7; i++) {
      // Accepted newest first, so the index order (by creation time) differs from insertion order.
      const now = new Date(T0.getTime() - i * 1000);
      const task = newTask(userId, 1, { taskId: taskIdInShard(shard, `page-${i}`), now });
      await acceptTask(store, { task });
      accepted.push({ userId, taskId: task.taskId, createdAt: now.toISOString() });
    }

    // Act
    const pages: PendingTaskRef[][] = [];
    let cursor: string | undefined;
    do {
      const page = await listPendingTasks(store, { shard, limit: 3, ...(cursor ? { cursor } : {}) });
      pages.push(page.tasks);
      cursor = page.cursor;
      if (cursor) expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    } while (cursor);

    // Assert
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(pages[0]).toHaveLength(3);
    expect(pages.flat()).toEqual([...accepted].reverse());
    expect((await auditUser(store, userId)).ok).toBe(true);
  });

  it('lists every shard, and only tasks that are still pending', async () => {
    // Prepare
    const userA = newUserId();
    const userB = newUserId();
    await grantCredits(store, { userId: userA, amount: 100 });
    await grantCredits(store, { userId: userB, amount: 100 });
    const pending: string[] = [];
    const ended: string[] = [];
    for (let shard = 0; shard < TABLE.pendingShards; shard++) {
      const userId = shard % 2 ? userA : userB;
      const task = newTask(userId, 2, { taskId: taskIdInShard(shard, `all-${shard}`) });
      await acceptTask(store, { task });
      pending.push(task.taskId);
    }
    const done = newTask(userA, 2);
    const failed = newTask(userB, 2);
    await acceptTask(store, { task: done });
    await acceptTask(store, { task: failed });
    await completeTask(store, { userId: userA, taskId: done.taskId, resultKeys: ['k'], now: T0 });
    await failAndRefund(store, {
      userId: userB,
      taskId: failed.taskId,
      errorCode: 'TIMEOUT',
      errorMessage: 'x',
      now: T0,
    });
    ended.push(done.taskId, failed.taskId);

    // Act
    const listed: PendingTaskRef[] = [];
    for await (const ref of allPendingTasks(store, 2)) listed.push(ref);

    // Assert
    const ids = listed.map((ref) => ref.taskId);
    expect(ids).toEqual(expect.arrayContaining(pending));
    for (const id of ended) expect(ids).not.toContain(id);
    const owners = new Map(listed.map((ref) => [ref.taskId, ref.userId]));
    expect(owners.get(pending[1] ?? '')).toBe(userA);
    expect(owners.get(pending[0] ?? '')).toBe(userB);
    expect((await auditUser(store, userA)).ok).toBe(true);
    expect((await auditUser(store, userB)).ok).toBe(true);
  });

  it('rejects a cursor it did not make and a shard out of range', async () => {
    // Act
    const badCursor = listPendingTasks(store, { shard: 0, cursor: 'not a cursor' });
    const badShard = listPendingTasks(store, { shard: TABLE.pendingShards });

    // Assert
    await expect(badCursor).rejects.toBeInstanceOf(UsageError);
    await expect(badShard).rejects.toBeInstanceOf(UsageError);
  });
});
