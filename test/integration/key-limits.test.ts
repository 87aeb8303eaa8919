/**
 * The cap on an account's active API keys (each key has a rate bucket of its own, so the cap bounds an
 * account's request rate), on DynamoDB Local: the count item is updated in the transaction that issues,
 * rotates or revokes a key, so the cap holds exactly under racing creations.
 */
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { issueKey, rotateKey } from '../../functions/auth/key-issuing';
import { KeyLimitError } from '../../functions/core/errors';
import { errorResponse } from '../../functions/http/error-handler';
import { revokeApiKey } from '../../functions/money/key-end';
import { putApiKey } from '../../functions/money/key-issue';
import { listApiKeys } from '../../functions/store/api-keys';
import { maxActiveKeysFromEnv, readKeyCount } from '../../functions/store/key-count';
import { accountKeys } from '../../functions/store/keys';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newUserId, retriedWhileBusy, T0 } from '../support/store-fixtures';

let store: TestStore;

beforeAll(async () => {
  store = await createTestStore({ conflicts: { holdMs: 5 } });
});

afterAll(async () => {
  await store?.dispose();
});

const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the cap on active keys', () => {
  test('the key beyond the cap is a 409 naming the limit, and nothing is written for it', async () => {
    // Prepare
    const userId = newUserId();
    for (const name of ['a', 'b', 'c']) await issueKey(store, undefined, { userId, name, maxActiveKeys: 3 });

    // Act
    const error = await refusal(issueKey(store, undefined, { userId, name: 'd', maxActiveKeys: 3 }));
    const answer = errorResponse(error, 'req-1');

    // Assert
    expect(error).toBeInstanceOf(KeyLimitError);
    expect(answer.statusCode).toBe(409);
    expect(JSON.parse(answer.body)).toEqual({
      error: 'This account already has 3 active API keys, the most it may hold; revoke one first',
      limit: 3,
    });
    expect((await listApiKeys(store, userId)).map((key) => key.name)).toEqual(['a', 'b', 'c']);
    expect((await readKeyCount(store, userId)).activeKeys).toBe(3);
  });

  test('revoking a key gives its place back; revoking it again gives nothing more', async () => {
    // Prepare
    const userId = newUserId();
    const first = await issueKey(store, undefined, { userId, name: 'a', maxActiveKeys: 2 });
    await issueKey(store, undefined, { userId, name: 'b', maxActiveKeys: 2 });

    // Act
    await revokeApiKey(store, { keyId: first.keyId });
    await revokeApiKey(store, { keyId: first.keyId });
    const third = await issueKey(store, undefined, { userId, name: 'c', maxActiveKeys: 2 });
    const fourth = await refusal(issueKey(store, undefined, { userId, name: 'd', maxActiveKeys: 2 }));

    // Assert
    expect(third.name).toBe('c');
    expect(fourth).toBeInstanceOf(KeyLimitError);
    expect((await readKeyCount(store, userId)).activeKeys).toBe(2);
  });

  test('racing creations: exactly the cap succeeds, the rest are refused with the limit', async () => {
    // Prepare
    const userId = newUserId();
    const limit = 5;

    // Act
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        refusal(
          retriedWhileBusy(() => issueKey(store, undefined, { userId, name: `k${index}`, maxActiveKeys: limit })),
        ),
      ),
    );

    // Assert
    expect(outcomes.filter((outcome) => outcome === undefined)).toHaveLength(limit);
    expect(outcomes.filter((outcome) => outcome instanceof KeyLimitError)).toHaveLength(12 - limit);
    expect(await listApiKeys(store, userId)).toHaveLength(limit);
    expect((await readKeyCount(store, userId)).activeKeys).toBe(limit);
  });

  test('a key past its expiry gives its place back when a creation finds no room', async () => {
    // Prepare
    const userId = newUserId();
    await issueKey(store, undefined, { userId, name: 'short', expiresAt: T0.getTime() / 1000 + 60, now: T0 });
    await issueKey(store, undefined, { userId, name: 'long', now: T0, maxActiveKeys: 2 });

    // Act
    const beforeExpiry = await refusal(
      issueKey(store, undefined, { userId, name: 'x', now: at(30), maxActiveKeys: 2 }),
    );
    const afterExpiry = await issueKey(store, undefined, { userId, name: 'y', now: at(120), maxActiveKeys: 2 });

    // Assert
    expect(beforeExpiry).toBeInstanceOf(KeyLimitError);
    expect(afterExpiry.name).toBe('y');
    expect((await readKeyCount(store, userId)).activeKeys).toBe(2);
  });

  test('at the cap a rotation with grace is refused (the old key stays active), one without grace is not', async () => {
    // Prepare
    const userId = newUserId();
    const only = await issueKey(store, undefined, { userId, name: 'a', maxActiveKeys: 1 });

    // Act
    const withGrace = await refusal(
      rotateKey(store, undefined, { keyId: only.keyId, graceSeconds: 3600, maxActiveKeys: 1 }),
    );
    const rotated = await rotateKey(store, undefined, { keyId: only.keyId, graceSeconds: 0, maxActiveKeys: 1 });

    // Assert
    expect(withGrace).toBeInstanceOf(KeyLimitError);
    expect(rotated.previous.revokedAt).toEqual(expect.any(Number));
    expect((await readKeyCount(store, userId)).activeKeys).toBe(1);
    expect((await listApiKeys(store, userId)).filter((key) => key.revokedAt === undefined)).toHaveLength(1);
  });

  test('an account from before the count has its active keys counted on its next creation', async () => {
    // Prepare: keys as older versions wrote them (no `counted`, no count item).
    const userId = newUserId();
    const legacy = [];
    for (const name of ['a', 'b', 'c']) legacy.push(await putApiKey(store, { userId, name }));
    const revoked = legacy[2];
    if (!revoked) throw new Error('no key');
    await revokeApiKey(store, { keyId: revoked.keyId });
    for (const key of legacy) {
      await store.doc.send(
        new UpdateCommand({
          TableName: store.tableName,
          Key: accountKeys.keyListing(userId, key.keyId),
          UpdateExpression: 'REMOVE #counted',
          ExpressionAttributeNames: { '#counted': 'counted' },
        }),
      );
    }
    await store.doc.send(new DeleteCommand({ TableName: store.tableName, Key: accountKeys.keyCount(userId) }));

    // Act
    await issueKey(store, undefined, { userId, name: 'd', maxActiveKeys: 3 });
    const over = await refusal(issueKey(store, undefined, { userId, name: 'e', maxActiveKeys: 3 }));

    // Assert
    expect(over).toBeInstanceOf(KeyLimitError);
    expect(await readKeyCount(store, userId)).toEqual({ activeKeys: 3, initialized: true });
  });

  test('the cap comes from MAX_ACTIVE_KEYS, 20 by default, and a bad value stops the function', () => {
    // Act
    const fallback = maxActiveKeysFromEnv({});
    const set = maxActiveKeysFromEnv({ MAX_ACTIVE_KEYS: '5' });

    // Assert
    expect(fallback).toBe(20);
    expect(set).toBe(5);
    expect(() => maxActiveKeysFromEnv({ MAX_ACTIVE_KEYS: '0' })).toThrow(/MAX_ACTIVE_KEYS/);
  });
});
