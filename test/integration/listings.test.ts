/**
 * The listings around a task: the caller's tasks (task index, newest first, filters) and the ledger,
 * paged with cursors over hundreds of items, one Query per page; and their HTTP handlers (validation,
 * ownership, the catalog).
 */

import { MODELS } from '../../functions/core/catalog';
import { handler as getCredits } from '../../functions/get-credits/handler';
import { handler as listModels } from '../../functions/list-models/handler';
import { handler as listTasksHandler } from '../../functions/list-tasks/handler';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { failAndRefund } from '../../functions/money/refund';
import { listLedger, listLedgerPage } from '../../functions/store/ledger';
import { listTasks } from '../../functions/store/task-list';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { attachRequestCounter, type RequestCounter } from '../support/request-counter';
import { apiEvent, invoke, type ServiceHarness, startServiceHarness, type TestUser } from '../support/service-harness';
import { newTask, newUserId, T0 } from '../support/store-fixtures';

// A guard against hangs, not a speed check: seeding 240 accepts one after another can take minutes on
// a machine busy with a second copy of the suite.
jest.setTimeout(300_000);

const TASKS = 240;
const at = (i: number) => new Date(T0.getTime() + i * 1000);

/** `count` tasks of `userId`, one a second from T0: even ones images, odd ones videos, every 5th refunded. */
async function seed(store: TestStore, userId: string, count: number): Promise<string[]> {
  await grantCredits(store, { userId, amount: count * 10, now: T0 });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const type = i % 2 === 0 ? 'image' : 'video';
    const { task } = await acceptTask(store, { task: newTask(userId, 3, { type, now: at(i) }) });
    if (i % 5 === 0) {
      await failAndRefund(store, {
        userId,
        taskId: task.taskId,
        errorCode: 'PROVIDER_ERROR',
        errorMessage: 'x',
        now: at(i),
        task,
      });
    }
    ids.push(task.taskId);
  }
  return ids;
}

describe('store listings', () => {
  let store: TestStore;
  let counter: RequestCounter;
  const userId = newUserId();
  let ids: string[];

  beforeAll(async () => {
    store = await createTestStore();
    ids = await seed(store, userId, TASKS);
    await seed(store, newUserId(), 5); // someone else's, never listed
    counter = attachRequestCounter(store.doc);
  });

  afterAll(async () => {
    counter.detach();
    await store.dispose();
  });

  it('pages every task once, newest first, one Query per page', async () => {
    // Act
    const seen: string[] = [];
    let afterSortKey: string | undefined;
    let pages = 0;
    counter.reset();
    do {
      const page = await listTasks(store, userId, { limit: 50, ...(afterSortKey ? { afterSortKey } : {}) });
      seen.push(...page.items.map((task) => task.taskId));
      pages++;
      afterSortKey = page.next === undefined ? undefined : Buffer.from(page.next, 'base64url').toString('utf8');
    } while (afterSortKey);

    // Assert
    expect(seen).toEqual([...ids].reverse());
    expect(counter.counts).toEqual({ QueryCommand: pages });
    expect(pages).toBeGreaterThanOrEqual(5);
  });

  it('filters by status and type, still one Query per page', async () => {
    // Prepare
    counter.reset();

    // Act
    const page = await listTasks(store, userId, { limit: 100, status: 2, type: 'image' });

    // Assert: tasks 0..99 are read; refunded images among them are i % 10 === 0.
    expect(page.items.map((task) => task.taskId)).toEqual(
      ids.filter((_, i) => i >= TASKS - 100 && i % 10 === 0).reverse(),
    );
    expect(page.items.every((task) => task.status === 2 && task.errorCode === 'PROVIDER_ERROR')).toBe(true);
    expect(counter.counts).toEqual({ QueryCommand: 1 });
  });

  it('pages the whole ledger newest first, one Query per page, equal to the full ledger', async () => {
    // Act
    const seen: string[] = [];
    let afterSortKey: string | undefined;
    let pages = 0;
    counter.reset();
    do {
      const page = await listLedgerPage(store, userId, { limit: 100, ...(afterSortKey ? { afterSortKey } : {}) });
      seen.push(...page.items.map((entry) => `${entry.kind}:${entry.taskId ?? entry.grantId}:${entry.delta}`));
      pages++;
      afterSortKey = page.next === undefined ? undefined : Buffer.from(page.next, 'base64url').toString('utf8');
    } while (afterSortKey);
    const queries = counter.counts.QueryCommand;
    const full = await listLedger(store, userId);

    // Assert
    expect(seen).toHaveLength(1 + TASKS + TASKS / 5);
    expect(seen).toEqual(
      full.map((entry) => `${entry.kind}:${entry.taskId ?? entry.grantId}:${entry.delta}`).reverse(),
    );
    expect(queries).toBe(pages);
  });
});

describe('listing handlers', () => {
  let harness: ServiceHarness;
  let owner: TestUser;
  let stranger: TestUser;

  beforeAll(async () => {
    harness = await startServiceHarness();
    owner = await harness.createUser(1000);
    stranger = await harness.createUser(50);
    for (let i = 0; i < 7; i++) {
      await acceptTask(harness.store, {
        task: newTask(owner.userId, 3, { now: at(i), type: i < 4 ? 'image' : 'video' }),
      });
    }
  });

  afterAll(async () => {
    await harness.dispose();
  });

  const get = (path: string, user: TestUser, query: Record<string, string> = {}) => {
    const event = apiEvent({ method: 'GET', path, resource: path, user, headers: { Authorization: 'Bearer gsk_x' } });
    event.queryStringParameters = Object.keys(query).length ? query : null;
    return event;
  };

  it('GET /api/ai/tasks pages with the cursor it returns, and filters', async () => {
    // Act
    const first = await invoke<{ tasks: { taskId: string; type: string }[]; next: string | null }>(
      listTasksHandler,
      get('/api/ai/tasks', owner, { limit: '4' }),
    );
    const second = await invoke<{ tasks: { taskId: string }[]; next: string | null }>(
      listTasksHandler,
      get('/api/ai/tasks', owner, { limit: '4', cursor: first.body.next ?? '' }),
    );
    const videos = await invoke<{ tasks: { type: string }[] }>(
      listTasksHandler,
      get('/api/ai/tasks', owner, { type: 'video' }),
    );

    // Assert
    expect(first.statusCode).toBe(200);
    expect(first.body.tasks).toHaveLength(4);
    expect(second.body.tasks).toHaveLength(3);
    expect(second.body.next).toBeNull();
    expect(new Set([...first.body.tasks, ...second.body.tasks].map((t) => t.taskId)).size).toBe(7);
    expect(videos.body.tasks.map((t) => t.type)).toEqual(['video', 'video', 'video']);
  });

  it("another user's listing shows none of the owner's tasks, even with the owner's cursor", async () => {
    // Prepare
    const first = await invoke<{ next: string }>(listTasksHandler, get('/api/ai/tasks', owner, { limit: '2' }));

    // Act
    const answer = await invoke<{ tasks: unknown[] }>(
      listTasksHandler,
      get('/api/ai/tasks', stranger, { cursor: first.body.next }),
    );

    // Assert
    expect(answer.statusCode).toBe(200);
    expect(answer.body.tasks).toEqual([]);
  });

  it.each([
    [{ limit: '0' }, 'limit'],
    [{ limit: '101' }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ status: '3' }, 'status'],
    [{ type: 'audio' }, 'type'],
    [{ cursor: 'not a cursor' }, 'cursor'],
    [{ cursor: Buffer.from('USER#x').toString('base64url') }, 'cursor'],
  ])('GET /api/ai/tasks with %j -> 400 naming %s', async (query, field) => {
    // Act
    const answer = await invoke<{ details: { fieldErrors: Record<string, string[]> } }>(
      listTasksHandler,
      get('/api/ai/tasks', owner, query),
    );

    // Assert
    expect(answer.statusCode).toBe(400);
    expect(Object.keys(answer.body.details.fieldErrors)).toEqual([field]);
  });

  it('GET /api/ai/credits: the balance equals the sum of the ledger; debits name their task', async () => {
    // Act
    const answer = await invoke<{
      balance: number;
      entries: { kind: string; delta: number; taskId?: string }[];
      next: null;
    }>(getCredits, get('/api/ai/credits', owner));

    // Assert
    expect(answer.statusCode).toBe(200);
    expect(answer.body.balance).toBe(1000 - 7 * 3);
    expect(answer.body.entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(answer.body.balance);
    expect(answer.body.entries.filter((e) => e.kind === 'debit').every((e) => typeof e.taskId === 'string')).toBe(true);
    expect(answer.body.next).toBeNull();
  });

  it('GET /api/ai/models lists all 20 models with their prices and no provider names', async () => {
    // Act
    const answer = await invoke<{ models: { id: string; prices: unknown[] }[] }>(
      listModels,
      get('/api/ai/models', owner),
    );

    // Assert
    expect(answer.statusCode).toBe(200);
    expect(answer.body.models.map((m) => m.id)).toEqual(MODELS.map((m) => m.id));
    expect(answer.body.models.every((m) => m.prices.length > 0)).toBe(true);
    expect(answer.rawBody).not.toContain('provider/');
  });
});
