/**
 * How a cancelled accept with a limited key is read (store/errors.ts `acceptFailure`): an ended key
 * first (401), then the Idempotency-Key's replay, then a limit changed since the authorizer read it
 * (503), then a counter shard short of room (the accept then reads the budget's sum, which alone decides
 * a 402), beside the balance.
 */
import { type AttributeValue, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { ServiceBusyError, UnauthorizedError } from '../../functions/core/errors';
import { type AcceptLayout, acceptFailure } from '../../functions/store/errors';

type Reason = { Code: string; Item?: Record<string, AttributeValue> };

const cancelled = (...reasons: Reason[]) =>
  new TransactionCanceledException({ $metadata: {}, message: 'cancelled', CancellationReasons: reasons });

const none: Reason = { Code: 'None' };
const failed = (item?: Reason['Item']): Reason => ({ Code: 'ConditionalCheckFailed', ...(item ? { Item: item } : {}) });

// Items: shard 0, key-end guard 1, spend counter 2, task 3, ledger 4, idempotency 5, queue entry 6.
const LAYOUT: AcceptLayout = {
  shards: [7],
  keyEnd: 1,
  nowSeconds: 1000,
  spend: [2],
  task: 3,
  ledger: 4,
  idempotency: 5,
  requestHash: 'hash-1',
};
const replayRecord = failed({ taskId: { S: 'task-1' }, requestHash: { S: 'hash-1' } });

describe('acceptFailure with a spend limit', () => {
  it('a counter shard short of room is short for the key budget: the sum decides, not the shard', () => {
    // Act
    const outcome = acceptFailure(
      cancelled(none, none, failed({ spent: { N: '28' } }), none, none, none, none),
      LAYOUT,
    );
    const fresh = acceptFailure(cancelled(none, none, failed(), none, none, none, none), LAYOUT);

    // Assert
    expect(outcome).toEqual({ kind: 'short', shards: [], spend: ['key'] });
    expect(fresh).toEqual({ kind: 'short', shards: [], spend: ['key'] });
  });

  it('a replay wins over the limit', () => {
    // Act
    const outcome = acceptFailure(
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
      acceptFailure(cancelled(none, stale, failed({ spent: { N: '30' } }), none, none, none, none), LAYOUT);
    const replay = acceptFailure(cancelled(none, stale, none, none, none, replayRecord, none), LAYOUT);

    // Assert
    expect(read).toThrow(ServiceBusyError);
    expect(replay).toEqual({ kind: 'replay', replayOf: 'task-1' });
  });

  it('an ended key is 401 before anything, whatever stamp its guard carries', () => {
    // Prepare
    const ended = failed({ endsAt: { N: '999' }, limitVersion: { N: '4' } });

    // Act
    const read = () => acceptFailure(cancelled(none, ended, failed(), none, none, replayRecord, none), LAYOUT);

    // Assert
    expect(read).toThrow(UnauthorizedError);
  });
});

describe('acceptFailure with the account-wide limit', () => {
  // Items: shard 0, account counter 1, task 2, ledger 3, idempotency 4, queue entry 5.
  const ACCOUNT: AcceptLayout = {
    shards: [4],
    accountLimitVersion: 2,
    accountSpend: [1],
    task: 2,
    ledger: 3,
    idempotency: 4,
    requestHash: 'hash-1',
  };

  it('a shard stamped with another version teaches the limit on it (or that there is none)', () => {
    // Act
    const changed = acceptFailure(
      cancelled(failed({ balance: { N: '50' }, acctLimitVersion: { N: '3' }, acctLimitCredits: { N: '40' } }), none),
      ACCOUNT,
    );
    const removed = acceptFailure(cancelled(failed({ acctLimitVersion: { N: '4' } }), none), ACCOUNT);

    // Assert
    expect(changed).toEqual({ kind: 'account-limit', version: 3, credits: 40 });
    expect(removed).toEqual({ kind: 'account-limit', version: 4, credits: undefined });
  });

  it('a shard with the version the accept holds is short, as always', () => {
    // Act
    const outcome = acceptFailure(
      cancelled(failed({ balance: { N: '1' }, acctLimitVersion: { N: '2' } }), none),
      ACCOUNT,
    );

    // Assert
    expect(outcome).toEqual({ kind: 'short', shards: [4] });
  });

  it('a month counter shard short of room is short for the account budget; a replay wins over it', () => {
    // Act
    const over = acceptFailure(cancelled(none, failed({ spent: { N: '99' } }), none, none, none, none), ACCOUNT);
    const both = acceptFailure(
      cancelled(failed({ balance: { N: '1' }, acctLimitVersion: { N: '2' } }), failed({ spent: { N: '99' } })),
      ACCOUNT,
    );
    const replay = acceptFailure(
      cancelled(none, failed({ spent: { N: '99' } }), none, none, replayRecord, none),
      ACCOUNT,
    );

    // Assert
    expect(over).toEqual({ kind: 'short', shards: [], spend: ['account'] });
    expect(both).toEqual({ kind: 'short', shards: [4], spend: ['account'] });
    expect(replay).toEqual({ kind: 'replay', replayOf: 'task-1' });
  });
});
