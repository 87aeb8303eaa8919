/**
 * The queue bound and queue hygiene (docs/design/dispatching.md) on real parts:
 * DynamoDB Local, the submit, GET and sweeper handlers' own wiring, the mock provider. The dispatcher
 * loop is off: a test sends queued tasks itself (`dispatchNext`), so what is asserted is a state, never
 * a duration.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { dispatchNext } from '../../functions/lifecycle/dispatch';
import { QUEUE_FULL_RETRY_AFTER_SECONDS } from '../../functions/lifecycle/submit-task';
import { sweepPendingTasks } from '../../functions/lifecycle/sweep';
import { failAndRefund } from '../../functions/money/refund';
import { logger } from '../../functions/observability/logger';
import { countQueued } from '../../functions/store/dispatch';
import { auditUser, listLedger } from '../../functions/store/ledger';
import * as keys from '../../functions/store/task-keys';
import { listTasks } from '../../functions/store/task-list';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import {
  getTaskEvent,
  IMAGE_COST,
  imageRequest,
  invoke,
  type ServiceHarness,
  startServiceHarness,
  submitEvent,
  type TestUser,
} from '../support/service-harness';

const LIMIT = 3;
const MAX_PENDING_SECONDS = 1800;
/** Long enough that no task the mock accepts ends during a test. */
const SLOW = { mockDelayMs: 600_000 };

describe('the queue bound', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      // Through the conflict layer: DynamoDB's per-item conflicts and per-partition throughput.
      conflicts: { holdMs: 10 },
      dispatcher: false,
      maxQueuedTasksPerAccount: LIMIT,
      maxPendingSeconds: MAX_PENDING_SECONDS,
    });
  });

  afterAll(async () => {
    await h.dispose();
  });

  const submit = (user: TestUser, headers: Record<string, string> = {}, body = imageRequest(SLOW)) =>
    invoke(submitImage, submitEvent('image', user, body, { 'Content-Type': 'application/json', ...headers }));

  /** Submits `count` tasks that are accepted (202), one after the other; their ids. */
  async function fill(user: TestUser, count = LIMIT): Promise<string[]> {
    const taskIds: string[] = [];
    for (let i = 0; i < count; i++) {
      const answer = await submit(user);
      expect(answer.statusCode).toBe(202);
      taskIds.push(String(answer.body.taskId));
    }
    return taskIds;
  }

  /** Dispatch steps until one of `taskIds` has been sent (other tests' tasks may go first). */
  async function sendOneOf(taskIds: string[]): Promise<string> {
    for (let step = 0; step < 100; step++) {
      const done = await dispatchNext(
        h.lifecycle(() => new Date()),
        {},
        logger,
      );
      if (done.kind === 'sent' && taskIds.includes(done.taskId)) return done.taskId;
      if (done.kind === 'idle') break;
    }
    throw new Error('none of the tasks was sent');
  }

  const queueEntry = async (user: TestUser, taskId: string) => {
    const task = await getTask(h.store, user.userId, taskId);
    const out = await h.store.doc.send(
      new GetCommand({
        TableName: h.store.tableName,
        Key: keys.queueEntry(user.userId, task?.createdAt ?? '', taskId),
        ConsistentRead: true,
      }),
    );
    return out.Item;
  };

  it('answers 429 Queue full with the limit and Retry-After past the bound, and writes nothing', async () => {
    // Prepare
    const user = await h.createUser(100);
    const accepted = await fill(user);
    const ledgerBefore = await listLedger(h.store, user.userId);

    // Act
    const answer = await submit(user);

    // Assert
    expect(answer.statusCode).toBe(429);
    expect(answer.body).toEqual({ error: 'Queue full', limit: LIMIT });
    expect(answer.headers['Retry-After']).toBe(String(QUEUE_FULL_RETRY_AFTER_SECONDS));
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - LIMIT * IMAGE_COST });
    expect(await listLedger(h.store, user.userId)).toEqual(ledgerBefore);
    const listed = await listTasks(h.store, user.userId, { limit: 100 });
    expect(listed.items.map((task) => task.taskId).sort()).toEqual([...accepted].sort());
    expect(await countQueued(h.store, { userId: user.userId, limit: 100 })).toBe(LIMIT);
  });

  it('accepts again once the dispatcher has sent one of the queued tasks', async () => {
    // Prepare
    const user = await h.createUser(100);
    const accepted = await fill(user);
    expect((await submit(user)).statusCode).toBe(429);

    // Act
    const sent = await sendOneOf(accepted);
    const answer = await submit(user);

    // Assert
    expect(await queueEntry(user, sent)).toBeUndefined();
    expect(answer.statusCode).toBe(202);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - 4 * IMAGE_COST });
  });

  it("leaves other accounts alone: another account submits while one account's queue is full", async () => {
    // Prepare
    const full = await h.createUser(100);
    const other = await h.createUser(100);
    await fill(full);

    // Act
    const refused = await submit(full);
    const answer = await submit(other);

    // Assert
    expect(refused.statusCode).toBe(429);
    expect(answer.statusCode).toBe(202);
    expect(await auditUser(h.store, other.userId)).toMatchObject({ ok: true, balance: 100 - IMAGE_COST });
  });

  it('answers an Idempotency-Key replay with its original task even when the queue is full; a new key gets 429 and leaves no record', async () => {
    // Prepare
    const user = await h.createUser(100);
    await fill(user, LIMIT - 1);
    const key = `replay-${randomUUID()}`;
    const original = await submit(user, { 'Idempotency-Key': key });
    expect(original.statusCode).toBe(202);
    const freshKey = `fresh-${randomUUID()}`;

    // Act
    const replay = await submit(user, { 'Idempotency-Key': key });
    const otherBody = await submit(user, { 'Idempotency-Key': key }, imageRequest(SLOW, { prompt: 'another prompt' }));
    const fresh = await submit(user, { 'Idempotency-Key': freshKey });

    // Assert
    expect(replay.statusCode).toBe(202);
    expect(replay.body).toEqual(original.body);
    expect(replay.headers['Idempotent-Replayed']).toBe('true');
    // The key reused with another body is refused as it is when the queue has room.
    expect(otherBody.statusCode).toBe(409);
    expect(fresh.statusCode).toBe(429);
    const record = await h.store.doc.send(
      new GetCommand({
        TableName: h.store.tableName,
        Key: keys.idempotency(user.userId, freshKey),
        ConsistentRead: true,
      }),
    );
    expect(record.Item).toBeUndefined();
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - LIMIT * IMAGE_COST });
  });

  it('keeps a burst of one account conflict-free: concurrent submits all answer 202 or 429, none 503, and the bound holds once they are done', async () => {
    // Prepare
    const user = await h.createUser(100);

    // Act
    const answers = await Promise.all(Array.from({ length: 8 }, () => submit(user)));
    const after = await submit(user);

    // Assert: a soft bound, so the burst itself may pass it by the submits that counted at once
    const statuses = answers.map((answer) => answer.statusCode);
    expect(statuses.every((status) => status === 202 || status === 429)).toBe(true);
    const accepted = statuses.filter((status) => status === 202).length;
    expect(accepted).toBeGreaterThanOrEqual(LIMIT);
    expect(after.statusCode).toBe(429);
    expect(await countQueued(h.store, { userId: user.userId, limit: 100 })).toBe(accepted);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - accepted * IMAGE_COST });
  });
});

describe('queue hygiene', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await startServiceHarness({
      // Through the conflict layer: DynamoDB's per-item conflicts and per-partition throughput.
      conflicts: { holdMs: 10 },
      dispatcher: false,
      maxQueuedTasksPerAccount: LIMIT,
      maxPendingSeconds: MAX_PENDING_SECONDS,
    });
  });

  afterAll(async () => {
    await h.dispose();
  });

  async function queued(user: TestUser): Promise<string> {
    const answer = await invoke(
      submitImage,
      submitEvent('image', user, imageRequest(SLOW), { 'Content-Type': 'application/json' }),
    );
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  const later = () => new Date(Date.now() + (MAX_PENDING_SECONDS + 60) * 1000);

  it('a queued task the sweeper times out leaves no queue entry, and the account may queue again', async () => {
    // Prepare
    const user = await h.createUser(100);
    const taskIds = [await queued(user), await queued(user), await queued(user)];
    expect(await countQueued(h.store, { userId: user.userId, limit: 100 })).toBe(LIMIT);

    // Act
    const report = await sweepPendingTasks(h.lifecycle(later), logger);

    // Assert
    expect(report.errors).toBe(0);
    for (const taskId of taskIds) {
      expect(await getTask(h.store, user.userId, taskId)).toMatchObject({ status: 2, errorCode: 'TIMEOUT' });
    }
    expect(await countQueued(h.store, { userId: user.userId, limit: 100 })).toBe(0);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 });
    await queued(user);
  });

  it('a queued task a poll times out leaves no queue entry', async () => {
    // Prepare
    const user = await h.createUser(100);
    const taskId = await queued(user);

    // Act
    const answer = await h.withClock(later, () => invoke(getTaskHandler, getTaskEvent(user, taskId)));

    // Assert
    expect(answer.body).toMatchObject({ status: 2, errorCode: 'TIMEOUT' });
    expect(await countQueued(h.store, { userId: user.userId, limit: 100 })).toBe(0);
  });

  it('the dispatcher drops an entry a task left behind when it ended (a crash between the two writes)', async () => {
    // Prepare: the task ended by the store's refund alone, its entry left in place, as a crash right
    // after the ending write would leave it
    const user = await h.createUser(100);
    const taskId = await queued(user);
    await failAndRefund(h.store, {
      userId: user.userId,
      taskId,
      errorCode: 'TIMEOUT',
      errorMessage: 'timed out',
      now: new Date(),
    });
    expect(await countQueued(h.store, { userId: user.userId, limit: 100 })).toBe(1);

    // Act: steps until the queue is empty (other tests' entries go too)
    for (let step = 0; step < 100; step++) {
      const done = await dispatchNext(
        h.lifecycle(() => new Date()),
        {},
        logger,
      );
      if (done.kind === 'idle') break;
    }

    // Assert
    expect(await countQueued(h.store, { userId: user.userId, limit: 100 })).toBe(0);
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({ status: 2, errorCode: 'TIMEOUT' });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 });
  });
});
