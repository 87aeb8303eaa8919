import {
  IdempotencyConflictError,
  InsufficientCreditsError,
  ServiceBusyError,
  UnauthorizedError,
} from '../../functions/core/errors';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { getBalance } from '../../functions/store/accounts';
import { markKeyEnd } from '../../functions/store/balance';
import { auditUser } from '../../functions/store/ledger';
import { stampLimitVersion } from '../../functions/store/spend';
import type { IdempotencyInput } from '../../functions/store/tasks';
import { thinLately } from '../../functions/store/thin-balance';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { attachRequestCounter, type RequestCounter } from '../support/request-counter';
import { newTask, newUserId, T0 } from '../support/store-fixtures';

// A guard against hangs on a loaded machine, not a speed check.
jest.setTimeout(60_000);

const T0_SECONDS = Math.floor(T0.getTime() / 1000);

/**
 * A refusal on an account whose balance read says it cannot pay sends no transaction: what outranks
 * the 402 (an ended key 401, a key limit changed 503, an Idempotency-Key used before: a replay or 409)
 * is read from the items a try would check (store/outranking-reads.ts,
 * docs/decisions/0019-thin-accept-in-one-request.md). Through the conflict layer, as the bench runs it.
 */
describe('refusals without a transaction (conflict layer on)', () => {
  let store: TestStore;
  let counter: RequestCounter;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 10 } });
    counter = attachRequestCounter(store.doc);
  });

  afterAll(async () => {
    counter.detach();
    await store.dispose();
  });

  /** An account holding `credits` that a refusal has taught this process is thin. */
  async function thinAccount(credits: number): Promise<string> {
    const userId = newUserId();
    if (credits > 0) await grantCredits(store, { userId, amount: credits });
    const taught = await acceptTask(store, { task: newTask(userId, 3) }).catch((error: unknown) => error);
    expect(taught).toBeInstanceOf(InsufficientCreditsError);
    expect(thinLately(userId)).toBe(true);
    return userId;
  }

  /** What an accept answers, and the requests it sent by command. */
  async function answerOf(
    userId: string,
    idempotency?: IdempotencyInput,
  ): Promise<{ answer: unknown; requests: Record<string, number> }> {
    counter.reset();
    const answer = await acceptTask(store, { task: newTask(userId, 3), ...(idempotency ? { idempotency } : {}) }).catch(
      (error: unknown) => error,
    );
    return { answer, requests: counter.counts };
  }

  it('a refusal on a balance found thin is a 402 from one Query and one GetItem, with no transaction', async () => {
    // Prepare
    const userId = await thinAccount(2);

    // Act
    const { answer, requests } = await answerOf(userId);

    // Assert
    expect(answer).toBeInstanceOf(InsufficientCreditsError);
    expect(answer).toMatchObject({ required: 3, balance: 2 });
    expect(requests).toEqual({ QueryCommand: 1, GetItemCommand: 1 });
    expect(await auditUser(store, userId)).toEqual({ userId, balance: 2, ledgerSum: 2, entries: 1, ok: true });
  });

  it('an ended key on an empty account still answers 401, with no transaction', async () => {
    // Prepare
    const userId = await thinAccount(0);
    await markKeyEnd(store, { userId, keyId: 'key-1', endSeconds: T0_SECONDS });

    // Act
    const { answer, requests } = await answerOf(userId);

    // Assert
    expect(answer).toBeInstanceOf(UnauthorizedError);
    expect(requests.TransactWriteItemsCommand).toBeUndefined();
  });

  it('a replay on an empty account still replays its task, and another request under its key is a 409, with no transaction', async () => {
    // Prepare: the key's task took the last credits; a refusal taught the process the account is thin.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 3 });
    const idempotency = { key: 'replayed', requestHash: 'h1' };
    const original = await acceptTask(store, { task: newTask(userId, 3), idempotency });
    await expect(acceptTask(store, { task: newTask(userId, 3) })).rejects.toBeInstanceOf(InsufficientCreditsError);

    // Act
    const replay = await answerOf(userId, idempotency);
    const other = await answerOf(userId, { ...idempotency, requestHash: 'h2' });

    // Assert
    expect(replay.answer).toEqual({ task: original.task, replayed: true });
    expect(replay.requests.TransactWriteItemsCommand).toBeUndefined();
    expect(other.answer).toBeInstanceOf(IdempotencyConflictError);
    expect(other.requests.TransactWriteItemsCommand).toBeUndefined();
    expect(await getBalance(store, userId)).toBe(0);
    expect(await auditUser(store, userId)).toEqual({ userId, balance: 0, ledgerSum: 0, entries: 2, ok: true });
  });

  it('an ended key outranks an Idempotency-Key used before, with no transaction', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 3 });
    const idempotency = { key: 'used', requestHash: 'h1' };
    await acceptTask(store, { task: newTask(userId, 3), idempotency });
    await expect(acceptTask(store, { task: newTask(userId, 3) })).rejects.toBeInstanceOf(InsufficientCreditsError);
    await markKeyEnd(store, { userId, keyId: 'key-1', endSeconds: T0_SECONDS - 60 });

    // Act
    const { answer, requests } = await answerOf(userId, idempotency);

    // Assert
    expect(answer).toBeInstanceOf(UnauthorizedError);
    expect(requests.TransactWriteItemsCommand).toBeUndefined();
  });

  /**
   * Each judgement of an item read (the key's end, its limit stamp, the Idempotency-Key's record) held
   * to DynamoDB's: the same items decide a try on a funded account by the try's own conditions.
   */
  it.each([
    ['the key ended at the accept time', 'ended', UnauthorizedError, UnauthorizedError],
    ['the key ends a second after it', 'ends later', InsufficientCreditsError, 'accepted'],
    ['the key limit changed since the authorizer read it', 'limit changed', ServiceBusyError, ServiceBusyError],
    ['the Idempotency-Key record expired', 'expired record', InsufficientCreditsError, 'accepted'],
  ] as const)('%s: a refusal answers as a try would', async (_name, state, refusal, funded) => {
    // Prepare: the same state on an empty account found thin and on a funded one.
    const idempotency = { key: 'judged', requestHash: 'h1' };
    const prepare = async (userId: string) => {
      if (state === 'ended') await markKeyEnd(store, { userId, keyId: 'key-1', endSeconds: T0_SECONDS });
      if (state === 'ends later') await markKeyEnd(store, { userId, keyId: 'key-1', endSeconds: T0_SECONDS + 1 });
      if (state === 'limit changed') await stampLimitVersion(store, { userId, keyId: 'key-1', version: 1, now: T0 });
      if (state === 'expired record') {
        await grantCredits(store, { userId, amount: 3 });
        await acceptTask(store, { task: newTask(userId, 3), idempotency: { ...idempotency, ttlSeconds: -1 } });
      }
    };
    const empty = await thinAccount(0);
    await prepare(empty);
    const rich = newUserId();
    await grantCredits(store, { userId: rich, amount: 1_000 });
    await prepare(rich);
    const withKey = state === 'expired record' ? idempotency : undefined;

    // Act
    const refused = await answerOf(empty, withKey);
    const tried = await answerOf(rich, withKey);

    // Assert
    expect(refused.answer).toBeInstanceOf(refusal);
    expect(refused.requests.TransactWriteItemsCommand).toBeUndefined();
    if (funded === 'accepted') expect(tried.answer).toMatchObject({ replayed: false });
    else expect(tried.answer).toBeInstanceOf(funded);
    expect(tried.requests.TransactWriteItemsCommand).toBeGreaterThanOrEqual(1);
  });
});
