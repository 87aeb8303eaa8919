/**
 * The sessions' named conditions on DynamoDB Local (store/sessions.ts): an idle expiry only moves
 * forward and never on a revoked session; a sign-out ends a session once.
 */
import { epochSeconds } from '../../functions/core/api-key';
import { hashSessionId } from '../../functions/core/session';
import { createSession, getSessionByHash, revokeSession, touchSession } from '../../functions/store/sessions';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newUserId, T0 } from '../support/store-fixtures';

describe('session conditions (DynamoDB Local)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore();
  });

  afterAll(async () => {
    await store.dispose();
  });

  it('moves the idle expiry forward only, refuses a revoked session, and signs out once', async () => {
    // Prepare
    const userId = newUserId();
    const { sessionId, record } = await createSession(store, {
      userId,
      email: 'a@example.com',
      idleSeconds: 600,
      absoluteSeconds: 86_400,
      now: T0,
    });
    const sessionHash = hashSessionId(sessionId);
    const later = new Date(T0.getTime() + 300_000);

    // Act
    const forward = await touchSession(store, { sessionHash, session: record, idleSeconds: 600, now: later });
    const backward = await touchSession(store, { sessionHash, session: record, idleSeconds: 600, now: T0 });
    const firstSignOut = await revokeSession(store, { userId, sessionHash, now: later });
    const secondSignOut = await revokeSession(store, { userId, sessionHash, now: later });
    const afterRevoke = await touchSession(store, {
      sessionHash,
      session: record,
      idleSeconds: 6000,
      now: new Date(T0.getTime() + 600_000),
    });

    // Assert
    expect([forward, backward]).toEqual([true, false]);
    expect([firstSignOut, secondSignOut]).toEqual([true, false]);
    expect(afterRevoke).toBe(false);
    const stored = await getSessionByHash(store, sessionHash);
    expect(stored?.idleExpiresAt).toBe(epochSeconds(later) + 600);
    expect(stored?.revokedAt).toBe(epochSeconds(later));
  });
});
