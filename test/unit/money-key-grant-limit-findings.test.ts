/**
 * The findings of the grant, key-issue, key-count, key-end and limit-change compositions (money/grant.ts,
 * money/key-issue.ts, money/key-cap.ts, money/key-end.ts, money/key-limit.ts, money/account-limit.ts): which failed item answers what, read from a cancellation
 * as DynamoDB returns it (one reason per item, in the transaction's order), and the precedence when
 * several failed at once. The real engine's failures are in the store-*.test.ts integration tests.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { KeyLimitError, UsageError } from '../../functions/core/errors';
import type { KeyEndFinding } from '../../functions/money/findings';
import { grantAnswer, grantTransaction } from '../../functions/money/grant';
import { keyCountAnswer, keyCounting, keyRetirement } from '../../functions/money/key-cap';
import {
  activeKeyCount,
  auditEntry,
  endedKey,
  keyListing,
  limitedKey,
  newKey,
} from '../../functions/money/key-contributors';
import { revokeAnswer, rotateAnswer } from '../../functions/money/key-end';
import { issueAnswer, issueTransaction } from '../../functions/money/key-issue';
import { keyLimitAnswer, newerLimitStands } from '../../functions/money/key-limit';
import { type ComposedTransaction, compose, type Finding } from '../../functions/money/transaction';
import { ApiKeyStateError } from '../../functions/store/api-keys';
import * as conditions from '../../functions/store/condition-fragments';
import { update } from '../../functions/store/conditions';
import type { CancellationReason } from '../../functions/store/errors';

const ctx = { doc: {} as DynamoDBDocumentClient, tableName: 'money-findings' };
const NOW = new Date('2026-01-01T00:00:00.000Z');

/** A cancelled transaction of `transaction`, failed on the items `failed` maps (index -> reason code). */
function cancelled<F extends Finding>(
  transaction: ComposedTransaction<F>,
  failed: Record<number, string>,
): Error & { CancellationReasons: CancellationReason[] } {
  const error = new Error('Transaction cancelled') as Error & { CancellationReasons: CancellationReason[] };
  error.name = 'TransactionCanceledException';
  error.CancellationReasons = transaction.items.map((_, index) => ({ Code: failed[index] ?? 'None' }));
  return error;
}

/** The index of the first item of `transaction` that `match` picks (by its key). */
function firstIndexWhere<F extends Finding>(
  transaction: ComposedTransaction<F>,
  match: (item: ComposedTransaction<F>['items'][number]) => boolean,
): number {
  const index = transaction.items.findIndex(match);
  if (index < 0) throw new Error('no such item in the transaction');
  return index;
}

const ref = { userId: 'user-1', keyId: 'key-old', keyHash: 'hash-old' };
const record = { keyId: 'key-new', userId: 'user-1', name: 'k', allowedCidrs: [], createdAt: NOW.toISOString() };

/** A rotation's transaction: new key (3 items), the old key's item, its listing, the count (+1), the audit. */
function rotation(limit: number | undefined) {
  return compose<KeyEndFinding>([
    newKey(ctx, { record, keyHash: 'hash-new', prefix: 'gsk_live_x' }),
    endedKey(ctx, {
      keyHash: ref.keyHash,
      change: update({ set: { expiresAt: 1, replacedBy: 'key-new' } }),
      condition: conditions.itemExists(),
    }),
    keyListing(ctx, { ...ref, change: update({ set: { expiresAt: 1 } }), condition: conditions.itemExists() }),
    activeKeyCount(ctx, { userId: ref.userId, delta: 1, ...(limit === undefined ? {} : { limit }) }),
    auditEntry(ctx, { userId: ref.userId, audit: { actor: { type: 'operator' }, action: 'key.rotate' }, now: NOW }),
  ]);
}

/** A revocation's transaction: the key's item, its listing, the count (-1). */
function revocation() {
  return compose<KeyEndFinding>([
    endedKey(ctx, {
      keyHash: ref.keyHash,
      change: update({ set: { revokedAt: 1 } }),
      condition: conditions.notRevoked(),
    }),
    keyListing(ctx, { ...ref, change: update({ set: { revokedAt: 1 } }), condition: conditions.itemExists() }),
    activeKeyCount(ctx, { userId: ref.userId, delta: -1 }),
  ]);
}

describe('the grant', () => {
  it('answers an existing ledger entry (the same grant id and instant) with UsageError naming the grant', () => {
    // Prepare
    const transaction = grantTransaction(ctx, {
      userId: 'user-1',
      amount: 64,
      at: NOW.toISOString(),
      grantId: 'promo-1',
      deltas: [
        [0, 32],
        [1, 32],
      ],
    });
    const ledger = transaction.items.length - 1;

    // Act
    const answer = () =>
      grantAnswer(cancelled(transaction, { [ledger]: 'ConditionalCheckFailed' }), transaction, 'promo-1');

    // Assert
    expect(transaction.items).toHaveLength(3);
    expect(answer).toThrow(UsageError);
    expect(answer).toThrow('Grant promo-1 is already recorded');
  });

  it('rethrows a cancellation no contributor reads (a conflict on a shard) and any other error', () => {
    // Prepare
    const transaction = grantTransaction(ctx, {
      userId: 'user-1',
      amount: 5,
      at: NOW.toISOString(),
      grantId: 'g',
      deltas: [[3, 5]],
    });
    const conflict = cancelled(transaction, { 0: 'TransactionConflict' });
    const other = new Error('network down');

    // Act
    const onConflict = () => grantAnswer(conflict, transaction, 'g');
    const onOther = () => grantAnswer(other, transaction, 'g');

    // Assert
    expect(onConflict).toThrow(conflict);
    expect(onOther).toThrow(other);
  });
});

describe('the key end', () => {
  it('reads a revocation: the key item changed wins over a listing that moved; the listing alone is a retry', () => {
    // Prepare
    const transaction = revocation();

    // Act
    const both = revokeAnswer(
      cancelled(transaction, { 0: 'ConditionalCheckFailed', 1: 'ConditionalCheckFailed' }),
      transaction,
    );
    const listingOnly = revokeAnswer(cancelled(transaction, { 1: 'ConditionalCheckFailed' }), transaction);
    const conflict = cancelled(transaction, { 2: 'TransactionConflict' });

    // Assert
    expect(both).toBe('key-changed');
    expect(listingOnly).toBe('listing-moved');
    expect(() => revokeAnswer(conflict, transaction)).toThrow(conflict);
  });

  it('reads a rotation: the full key count names the limit (409) over a key that changed at the same time', () => {
    // Prepare
    const transaction = rotation(3);
    const counter = firstIndexWhere(transaction, (item) => item.Update?.Key?.SK === 'KEYCOUNT');
    const oldKey = firstIndexWhere(transaction, (item) => item.Update?.Key?.PK === `APIKEY#${ref.keyHash}`);

    // Act
    const limited = rotateAnswer(
      cancelled(transaction, { [counter]: 'ConditionalCheckFailed', [oldKey]: 'ConditionalCheckFailed' }),
      transaction,
      { keyId: ref.keyId, limit: 3 },
    );
    const changed = rotateAnswer(cancelled(transaction, { [oldKey]: 'ConditionalCheckFailed' }), transaction, {
      keyId: ref.keyId,
      limit: 3,
    });
    const taken = rotateAnswer(cancelled(transaction, { 0: 'ConditionalCheckFailed' }), transaction, {
      keyId: ref.keyId,
      limit: 3,
    });

    // Assert
    expect(limited).toBeInstanceOf(KeyLimitError);
    expect((limited as KeyLimitError).message).toContain('3');
    expect(changed).toBeInstanceOf(ApiKeyStateError);
    expect((changed as Error).message).toBe(
      `API key ${ref.keyId} changed while rotating it (revoked or rotated); try again`,
    );
    expect(taken).toBeInstanceOf(ApiKeyStateError);
  });

  it('leaves a cancellation without a failed condition as it was (a conflict is retried by the runner)', () => {
    // Prepare
    const transaction = rotation(undefined);
    const conflict = cancelled(transaction, { 3: 'TransactionConflict' });

    // Act
    const answer = rotateAnswer(conflict, transaction, { keyId: ref.keyId, limit: undefined });

    // Assert
    expect(answer).toBe(conflict);
  });
});

describe('the key issue', () => {
  /** An issue's transaction: the new key (3 items), the count (+1, under `limit` when given), the audit. */
  const issue = (limit: number | undefined) =>
    issueTransaction(ctx, {
      record,
      keyHash: 'hash-new',
      prefix: 'gsk_live_x',
      limit,
      audit: { actor: { type: 'operator' }, action: 'key.create' },
      now: NOW,
    });

  it('names the limit (409) when the full key count failed, whatever else failed with it', () => {
    // Prepare
    const transaction = issue(2);
    const counter = firstIndexWhere(transaction, (item) => item.Update?.Key?.SK === 'KEYCOUNT');

    // Act
    const full = issueAnswer(cancelled(transaction, { [counter]: 'ConditionalCheckFailed' }), transaction, 2);
    const fullAndTaken = issueAnswer(
      cancelled(transaction, { 0: 'ConditionalCheckFailed', [counter]: 'ConditionalCheckFailed' }),
      transaction,
      2,
    );

    // Assert
    expect(transaction.items).toHaveLength(5);
    expect(transaction.items[counter]?.Update?.ConditionExpression).toContain('activeKeys');
    expect(full).toBeInstanceOf(KeyLimitError);
    expect((full as KeyLimitError).message).toContain('2');
    expect(fullAndTaken).toBeInstanceOf(KeyLimitError);
  });

  it('leaves a taken key item, a conflict and any other error as they were; without a cap the count has no condition', () => {
    // Prepare
    const transaction = issue(undefined);
    const counter = firstIndexWhere(transaction, (item) => item.Update?.Key?.SK === 'KEYCOUNT');
    const taken = cancelled(transaction, { 1: 'ConditionalCheckFailed' });
    const conflict = cancelled(transaction, { [counter]: 'TransactionConflict' });
    const other = new Error('network down');

    // Act
    const answers = [taken, conflict, other].map((error) => issueAnswer(error, transaction, undefined));

    // Assert
    expect(transaction.items[counter]?.Update?.ConditionExpression).toBeUndefined();
    expect(answers).toEqual([taken, conflict, other]);
  });
});

describe('the key count', () => {
  it("reads a retirement or a counting whose listing's condition failed as nothing to do (false)", () => {
    // Prepare
    const retirement = keyRetirement(ctx, ref, 100);
    const counting = keyCounting(ctx, ref, 100);
    const listing = (transaction: ComposedTransaction<KeyEndFinding>) =>
      firstIndexWhere(transaction, (item) => item.Update?.Key?.SK === `KEY#${ref.keyId}`);

    // Act
    const retired = keyCountAnswer(
      cancelled(retirement, { [listing(retirement)]: 'ConditionalCheckFailed' }),
      retirement,
    );
    const counted = keyCountAnswer(cancelled(counting, { [listing(counting)]: 'ConditionalCheckFailed' }), counting);

    // Assert
    expect(retired).toBe(false);
    expect(counted).toBe(false);
    expect(retirement.items[listing(retirement)]?.Update?.ConditionExpression).toContain('counted');
    expect(retirement.items[listing(retirement)]?.Update?.UpdateExpression).toContain('REMOVE');
  });

  it('rethrows a conflict on the count and any other error', () => {
    // Prepare
    const retirement = keyRetirement(ctx, ref, 100);
    const counter = firstIndexWhere(retirement, (item) => item.Update?.Key?.SK === 'KEYCOUNT');
    const conflict = cancelled(retirement, { [counter]: 'TransactionConflict' });
    const other = new Error('network down');

    // Act
    const onConflict = () => keyCountAnswer(conflict, retirement);
    const onOther = () => keyCountAnswer(other, retirement);

    // Assert
    expect(onConflict).toThrow(conflict);
    expect(onOther).toThrow(other);
  });
});

describe('the limit changes', () => {
  const limited = () =>
    compose(
      limitedKey(ctx, {
        key: ref,
        spendLimit: { credits: 10, period: 'month', budgetKeyId: ref.keyId },
        version: 2,
        keyCondition: conditions.spendLimitVersionIs(1),
        listingCondition: conditions.itemExists(),
      }),
    );

  it("answers the newest key's item or its listing failing with ApiKeyStateError (try again)", () => {
    // Prepare
    const transaction = limited();

    // Act
    const onKey = () => keyLimitAnswer(cancelled(transaction, { 0: 'ConditionalCheckFailed' }), transaction, 'key-old');
    const onListing = () =>
      keyLimitAnswer(cancelled(transaction, { 1: 'ConditionalCheckFailed' }), transaction, 'key-old');

    // Assert
    expect(onKey).toThrow(ApiKeyStateError);
    expect(onKey).toThrow('API key key-old changed meanwhile (revoked, rotated or limited); try again');
    expect(onListing).toThrow(ApiKeyStateError);
  });

  it('lets a newer limit version already written stand, and rethrows anything else', () => {
    // Prepare
    const transaction = compose(
      limitedKey(ctx, {
        key: ref,
        spendLimit: undefined,
        version: 4,
        keyCondition: conditions.spendLimitVersionAtMost(4),
        listingCondition: conditions.spendLimitVersionAtMost(4),
        newer: true,
      }),
    );
    const conflict = cancelled(transaction, { 0: 'TransactionConflict' });

    // Act
    const stands = newerLimitStands(cancelled(transaction, { 1: 'ConditionalCheckFailed' }), transaction);

    // Assert
    expect(stands).toBe(true);
    expect(() => newerLimitStands(conflict, transaction)).toThrow(conflict);
    expect(transaction.items[0]?.Update?.UpdateExpression).toContain('REMOVE #spendLimit');
  });
});
