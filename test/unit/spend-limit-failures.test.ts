/**
 * How a cancelled accept with a limited key is read (money/accept.ts `acceptAnswer`, by the accept's
 * declared precedence over its contributors' findings): an ended key
 * first (401), then the Idempotency-Key's replay, then a limit changed since the authorizer read it
 * (503), then a counter shard short of room (the accept then reads the budget's sum, which alone decides
 * a 402), beside the balance.
 */
import { type AttributeValue, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { ServiceBusyError, UnauthorizedError } from '../../functions/core/errors';
import { acceptAnswer } from '../../functions/money/accept';
import {
  balanceDebit,
  idempotencyRecord,
  keyGuard,
  ledgerEntry,
  newTask,
  spendAllowance,
  unconditioned,
} from '../../functions/money/contributors';
import type { AcceptFinding } from '../../functions/money/findings';
import { type ComposedTransaction, type Contributor, compose } from '../../functions/money/transaction';
import type { RetryingStoreContext } from '../../functions/store/errors';

type Reason = { Code: string; Item?: Record<string, AttributeValue> };

const cancelled = (...reasons: Reason[]) =>
  new TransactionCanceledException({ $metadata: {}, message: 'cancelled', CancellationReasons: reasons });

const none: Reason = { Code: 'None' };
const failed = (item?: Reason['Item']): Reason => ({ Code: 'ConditionalCheckFailed', ...(item ? { Item: item } : {}) });

// The accept's contributors as acceptTask composes them (only their items' order and conditions matter).
const ctx = { tableName: 'money' } as RetryingStoreContext;
const at = '2026-01-01T00:00:00.000Z';
const limit = { credits: 30, period: 'month', budgetKeyId: 'key-1' } as const;
const shard = (number: number, accountLimitVersion?: number) =>
  balanceDebit(ctx, { userId: 'u', shard: number, delta: -3, at, accountLimitVersion });
const counter = (scope: 'key' | 'account') =>
  spendAllowance(ctx, { scope, userId: 'u', limit, shard: 0, delta: -3, at: new Date(at) });
const rest = (): Array<Contributor<AcceptFinding>> => [
  newTask(ctx, {}),
  ledgerEntry<AcceptFinding>(ctx, {
    entry: { userId: 'u', kind: 'debit', delta: -3, at, taskId: 'task-2' },
    taken: { kind: 'task-taken' },
  }),
  idempotencyRecord(ctx, {
    userId: 'u',
    key: 'idem-1',
    taskId: 'task-2',
    requestHash: 'hash-1',
    createdAt: at,
    nowSeconds: 1000,
    ttlSeconds: 60,
  }),
  unconditioned('queue entry', []),
];

// Items: shard 0, key-end guard 1, spend counter 2, task 3, ledger 4, idempotency 5, queue entry (none here).
const LAYOUT: ComposedTransaction<AcceptFinding> = compose([
  shard(7),
  keyGuard(ctx, { userId: 'u', guard: { keyId: 'key-1', nowSeconds: 1000, limitVersion: 0 }, shard: 7 }),
  counter('key'),
  ...rest(),
]);
const replayRecord = failed({ taskId: { S: 'task-1' }, requestHash: { S: 'hash-1' } });

describe('acceptAnswer with a spend limit', () => {
  it('a counter shard short of room is short for the key budget: the sum decides, not the shard', () => {
    // Act
    const outcome = acceptAnswer(cancelled(none, none, failed({ spent: { N: '28' } }), none, none, none, none), LAYOUT);
    const fresh = acceptAnswer(cancelled(none, none, failed(), none, none, none, none), LAYOUT);

    // Assert
    expect(outcome).toEqual({ kind: 'short', shards: [], spend: ['key'] });
    expect(fresh).toEqual({ kind: 'short', shards: [], spend: ['key'] });
  });

  it('a replay wins over the limit', () => {
    // Act
    const outcome = acceptAnswer(
      cancelled(none, none, failed({ spent: { N: '30' } }), none, none, replayRecord, none),
      LAYOUT,
    );

    // Assert
    expect(outcome).toEqual({ kind: 'replay', replayOf: 'task-1' });
  });

  it('a guard stamped with a newer limit version is busy (503), after the replay', () => {
    // Prepare
    const stale = failed({ limitVersion: { N: '4' } });

    // Act
    const read = () =>
      acceptAnswer(cancelled(none, stale, failed({ spent: { N: '30' } }), none, none, none, none), LAYOUT);
    const replay = acceptAnswer(cancelled(none, stale, none, none, none, replayRecord, none), LAYOUT);

    // Assert
    expect(read).toThrow(ServiceBusyError);
    expect(replay).toEqual({ kind: 'replay', replayOf: 'task-1' });
  });

  it('an ended key is 401 before anything, whatever stamp its guard carries', () => {
    // Prepare
    const ended = failed({ endsAt: { N: '999' }, limitVersion: { N: '4' } });

    // Act
    const read = () => acceptAnswer(cancelled(none, ended, failed(), none, none, replayRecord, none), LAYOUT);

    // Assert
    expect(read).toThrow(UnauthorizedError);
  });
});

describe('acceptAnswer with the account-wide limit', () => {
  // Items: shard 0, account counter 1, task 2, ledger 3, idempotency 4, queue entry (none here).
  const ACCOUNT: ComposedTransaction<AcceptFinding> = compose([shard(4, 2), counter('account'), ...rest()]);

  it('a shard stamped with another version teaches the limit on it (or that there is none)', () => {
    // Act
    const changed = acceptAnswer(
      cancelled(failed({ balance: { N: '50' }, acctLimitVersion: { N: '3' }, acctLimitCredits: { N: '40' } }), none),
      ACCOUNT,
    );
    const removed = acceptAnswer(cancelled(failed({ acctLimitVersion: { N: '4' } }), none), ACCOUNT);

    // Assert
    expect(changed).toEqual({ kind: 'account-limit', version: 3, credits: 40 });
    expect(removed).toEqual({ kind: 'account-limit', version: 4, credits: undefined });
  });

  it('a shard with the version the accept holds is short, as always', () => {
    // Act
    const outcome = acceptAnswer(
      cancelled(failed({ balance: { N: '1' }, acctLimitVersion: { N: '2' } }), none),
      ACCOUNT,
    );

    // Assert
    expect(outcome).toEqual({ kind: 'short', shards: [4] });
  });

  it('a month counter shard short of room is short for the account budget; a replay wins over it', () => {
    // Act
    const over = acceptAnswer(cancelled(none, failed({ spent: { N: '99' } }), none, none, none, none), ACCOUNT);
    const both = acceptAnswer(
      cancelled(failed({ balance: { N: '1' }, acctLimitVersion: { N: '2' } }), failed({ spent: { N: '99' } })),
      ACCOUNT,
    );
    const replay = acceptAnswer(
      cancelled(none, failed({ spent: { N: '99' } }), none, none, replayRecord, none),
      ACCOUNT,
    );

    // Assert
    expect(over).toEqual({ kind: 'short', shards: [], spend: ['account'] });
    expect(both).toEqual({ kind: 'short', shards: [4], spend: ['account'] });
    expect(replay).toEqual({ kind: 'replay', replayOf: 'task-1' });
  });
});
