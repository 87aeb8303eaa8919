import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { failAndRefund } from '../../functions/money/refund';
import { auditUser } from '../../functions/store/ledger';
import { TABLE } from '../../functions/store/table';
import { claimRefresh, completeTask, getTask } from '../../functions/store/tasks';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { attachRequestCounter, type RequestCounter } from '../support/request-counter';
import { newTask, newUserId, T0 } from '../support/store-fixtures';

// DynamoDB Local runs every transaction through one JVM; racing hundreds of them takes seconds.
jest.setTimeout(60_000);

describe('DynamoDB requests per store operation', () => {
  let store: TestStore;
  let counter: RequestCounter;

  beforeAll(async () => {
    store = await createTestStore();
    counter = attachRequestCounter(store.doc);
  });

  afterAll(async () => {
    counter.detach();
    await store.dispose();
  });

  async function pendingTask() {
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 10 });
    const { task } = await acceptTask(store, { task: newTask(userId, 3) });
    counter.reset();
    return task;
  }

  it('accept costs 1 request (with an idempotency key) when the picked balance shard covers the cost', async () => {
    // Prepare: a grant of at least (shards x cost) leaves every shard able to pay.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: TABLE.balanceShards * 3 });
    counter.reset();

    // Act
    await acceptTask(store, { task: newTask(userId, 3), idempotency: { key: 'k', requestHash: 'h' } });

    // Assert
    expect(counter.counts).toEqual({ TransactWriteItemsCommand: 1 });
    expect((await auditUser(store, userId)).ok).toBe(true);
  });

  it('accept costs 3 requests when the picked shard is short: the miss, one Query, the spread debit', async () => {
    // Prepare: 10 credits spread over the shards: no shard holds 3.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 10 });
    counter.reset();

    // Act
    await acceptTask(store, { task: newTask(userId, 3) });

    // Assert
    expect(counter.counts).toEqual({ TransactWriteItemsCommand: 2, QueryCommand: 1 });
    expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 7, ok: true }));
  });

  it('a grant during no contention costs 1 request plus the balance read', async () => {
    // Prepare
    const userId = newUserId();
    counter.reset();

    // Act
    await grantCredits(store, { userId, amount: 100 });

    // Assert
    expect(counter.counts).toEqual({ TransactWriteItemsCommand: 1, QueryCommand: 1 });
  });

  it('reading a task costs 1 request', async () => {
    // Prepare
    const task = await pendingTask();

    // Act
    await getTask(store, task.userId, task.taskId);

    // Assert
    expect(counter.counts).toEqual({ GetItemCommand: 1 });
  });

  it('a claim costs 1 request, won or lost', async () => {
    // Prepare
    const task = await pendingTask();
    // Acceptance counts as the first contact, so the first claim is due one interval after it.
    const intervalMs = 30_000;
    const claim = { userId: task.userId, taskId: task.taskId, now: new Date(T0.getTime() + intervalMs), intervalMs };

    // Act
    const won = await claimRefresh(store, claim);
    const afterWin = counter.total();
    const lost = await claimRefresh(store, claim);

    // Assert
    expect(won).toBeDefined();
    expect(lost).toBeUndefined();
    expect(afterWin).toBe(1);
    expect(counter.counts).toEqual({ UpdateItemCommand: 2 });
  });

  it('completing with the caller’s copy costs 1 request (the task and its usage counter, one transaction)', async () => {
    // Prepare
    const task = await pendingTask();

    // Act
    await completeTask(store, { userId: task.userId, taskId: task.taskId, resultKeys: ['a'], now: T0, task });

    // Assert
    expect(counter.counts).toEqual({ TransactWriteItemsCommand: 1 });
  });

  it('fail-and-refund with the caller’s copy costs 1 request', async () => {
    // Prepare
    const task = await pendingTask();

    // Act
    const result = await failAndRefund(store, {
      userId: task.userId,
      taskId: task.taskId,
      errorCode: 'PROVIDER_ERROR',
      errorMessage: 'failed',
      now: T0,
      task,
    });

    // Assert
    expect(result?.refunded).toBe(true);
    expect(counter.counts).toEqual({ TransactWriteItemsCommand: 1 });
    expect((await auditUser(store, task.userId)).ok).toBe(true);
  });
});
