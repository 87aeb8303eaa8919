/**
 * Key ends and the balance, on DynamoDB Local: ending keys never grows the balance items (the key-end
 * guards are items of their own), the balance read follows every page, and a revocation racing a burst
 * of accepts behind the conflict layer lets no accept debit once `revokedAt` is recorded.
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { UnauthorizedError } from '../../functions/core/errors';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { revokeApiKey } from '../../functions/money/key-end';
import { putApiKey } from '../../functions/money/key-issue';
import { readShards, totalOf } from '../../functions/store/balance';
import { LEGACY_KEY_END_PREFIX } from '../../functions/store/conditions';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { TABLE } from '../../functions/store/table';
import * as keys from '../../functions/store/task-keys';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { atScale } from '../support/scale';
import { newTask, newUserId, retriedWhileBusy } from '../support/store-fixtures';

/**
 * Batches of ten keys created and revoked on one account: 30 keys in `npm test`, 300 in the stress run.
 * A revocation is 35 requests (a guard on each of the 32 shards), about 2.5 s each on a loaded machine
 * with DynamoDB Local serving one request at a time. 30 keys would still grow a shard to three times the
 * 400 bytes asserted below in a design that marked key ends on the shards (a 40-byte marker per key).
 */
const REVOKED_BATCHES = atScale(3, 30);

// Hundreds of revocations and a racing burst through one JVM: a guard against hangs, not a speed check.
jest.setTimeout(300_000);

/** The sizes of the account's balance shard items, in bytes of their attribute names and values. */
async function shardItemSizes(store: TestStore, userId: string): Promise<number[]> {
  const prefix = keys.balancePrefix(userId);
  const out = await store.doc.send(
    new QueryCommand({
      TableName: store.tableName,
      KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
      ExpressionAttributeNames: { '#pk': TABLE.partitionKey, '#sk': TABLE.sortKey },
      ExpressionAttributeValues: { ':pk': prefix.PK, ':prefix': prefix.SK },
    }),
  );
  return (out.Items ?? []).map((item) => Buffer.byteLength(JSON.stringify(item)));
}

describe('key ends and the balance', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore();
  });

  afterAll(async () => {
    await store.dispose();
  });

  it(`an account with ${REVOKED_BATCHES * 10} revoked keys keeps small shards, reads its whole balance and accepts with a live key`, async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 3200 });
    const revoked: string[] = [];
    for (let batch = 0; batch < REVOKED_BATCHES; batch++) {
      // Ten at a time, each retried while busy: they share the account's key count item.
      const created = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          retriedWhileBusy(() => putApiKey(store, { userId, name: `k${batch}-${index}` })),
        ),
      );
      await Promise.all(created.map((key) => retriedWhileBusy(() => revokeApiKey(store, { keyId: key.keyId }))));
      revoked.push(...created.map((key) => key.keyId));
    }
    const live = await putApiKey(store, { userId, name: 'live' });

    // Act
    const balance = totalOf(await readShards(store, userId));
    const accepted = await Promise.all(
      Array.from({ length: 10 }, () =>
        retriedWhileBusy(() =>
          acceptTask(store, { task: newTask(userId, 10, { keyId: live.keyId, now: new Date() }) }),
        ),
      ),
    );
    const refused = await Promise.allSettled(
      revoked.slice(0, 10).map((keyId) => acceptTask(store, { task: newTask(userId, 10, { keyId, now: new Date() }) })),
    );

    // Assert
    expect(balance).toBe(3200);
    expect(accepted.every((accept) => !accept.replayed)).toBe(true);
    expect(
      refused.map((outcome) => outcome.status === 'rejected' && outcome.reason instanceof UnauthorizedError),
    ).toEqual(Array(10).fill(true));
    // Each shard: its key, balance, user and times (well under 1 KB), however many keys ended.
    expect(Math.max(...(await shardItemSizes(store, userId)))).toBeLessThan(400);
    expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 3100, ok: true }));
  });

  it('reads every page of shards grown past one Query page, and the next revocation removes the legacy markers', async () => {
    // Prepare: each shard carries ~40 KB of legacy `keyEnd_*` markers, as earlier versions left them,
    // so the 32 shards need more than one 1 MB Query page.
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 320 });
    const markers = Object.fromEntries(
      Array.from({ length: 1000 }, (_, index) => [`${LEGACY_KEY_END_PREFIX}key_${String(index).padStart(28, '0')}`, 1]),
    );
    // Each shard read and written back whole with its markers: one Put per shard, where UpdateItems could
    // add at most 100 markers each (an expression may hold at most 4 KB) and 320 of them took 80 s of a
    // loaded machine.
    await Promise.all(
      Array.from({ length: TABLE.balanceShards }, async (_, shard) => {
        const shardKey = keys.balanceShard(userId, shard);
        const current = await store.doc.send(new GetCommand({ TableName: store.tableName, Key: shardKey }));
        await store.doc.send(
          new PutCommand({ TableName: store.tableName, Item: { ...current.Item, ...shardKey, ...markers } }),
        );
      }),
    );
    const key = await putApiKey(store, { userId, name: 'k' });

    // Act
    const before = await readShards(store, userId);
    await revokeApiKey(store, { keyId: key.keyId });
    const after = await readShards(store, userId);

    // Assert
    expect(Math.min(...(await shardItemSizes(store, userId)))).toBeLessThan(400);
    expect(totalOf(before)).toBe(320);
    expect(before.filter((shard) => shard > 0)).toHaveLength(32);
    expect(totalOf(after)).toBe(320);
  });

  it('the guards are items of their own with a TTL a day after the end', async () => {
    // Prepare
    const userId = newUserId();
    const key = await putApiKey(store, { userId, name: 'k' });

    // Act
    const revoked = await revokeApiKey(store, { keyId: key.keyId });
    const guard = await store.doc.send(
      new GetCommand({ TableName: store.tableName, Key: keys.keyEndGuard(userId, key.keyId, 31) }),
    );

    // Assert
    expect(guard.Item).toMatchObject({ endsAt: revoked.revokedAt, [TABLE.ttlAttribute]: revoked.revokedAt + 86_400 });
  });
});

/**
 * A store whose client runs `probe` just before and just after each transaction that records a key's
 * `revokedAt` (the moment a revocation becomes visible), so a test can try accepts at that moment.
 */
function withRevocationProbe(store: TestStore, probe: (when: 'before' | 'after') => Promise<void>): TestStore {
  const doc = Object.create(store.doc) as typeof store.doc;
  const send = store.doc.send.bind(store.doc) as (command: unknown) => Promise<unknown>;
  const records = (command: unknown) =>
    command instanceof TransactWriteCommand && JSON.stringify(command.input).includes('#revokedAt');
  (doc as unknown as { send: (command: unknown) => Promise<unknown> }).send = async (command) => {
    if (records(command)) await probe('before');
    const out = await send(command);
    if (records(command)) await probe('after');
    return out;
  };
  return { ...store, doc };
}

/** One accept with `keyId` whose first pick is shard `shard`, dated `now`: 'accepted' or 'refused'. */
async function acceptOnShard(store: TestStore, userId: string, keyId: string, shard: number, now: Date) {
  const onShard = { ...store, retry: { random: () => (shard + 0.5) / TABLE.balanceShards } };
  try {
    await acceptTask(onShard, { task: newTask(userId, 1, { keyId, now }) });
    return 'accepted';
  } catch (error) {
    if (error instanceof UnauthorizedError) return 'refused';
    throw error;
  }
}

describe('a revocation and the accepts around it', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore({ conflicts: { holdMs: 5 } });
  });

  afterAll(async () => {
    await store.dispose();
  });

  it('when revokedAt is recorded, an accept dated then is refused on every shard', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 3200 });
    const key = await putApiKey(store, { userId, name: 'probed' });
    const now = new Date();
    const seen: Record<string, string[]> = {};
    const probed = withRevocationProbe(store, async (when) => {
      seen[when] = await Promise.all(
        Array.from({ length: TABLE.balanceShards }, (_, shard) => acceptOnShard(store, userId, key.keyId, shard, now)),
      );
    });

    // Act
    await revokeApiKey(probed, { keyId: key.keyId, now });

    // Assert
    expect(seen.before).toEqual(Array(TABLE.balanceShards).fill('refused'));
    expect(seen.after).toEqual(Array(TABLE.balanceShards).fill('refused'));
    expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 3200, entries: 1, ok: true }));
  });

  it('a burst of accepts racing a revoke: money exact, and every accept after it returns is refused', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 10_000 });
    const key = await putApiKey(store, { userId, name: 'racing' });
    const accept = () =>
      retriedWhileBusy(() => acceptTask(store, { task: newTask(userId, 1, { keyId: key.keyId, now: new Date() }) }));
    let revoking = true;
    /** Accepts one after another, each dated when it starts, until the revocation has returned. */
    const racer = async () => {
      let accepted = 0;
      while (revoking) {
        try {
          await accept();
          accepted += 1;
        } catch (error) {
          if (!(error instanceof UnauthorizedError)) throw error;
        }
      }
      return accepted;
    };
    await accept();

    // Act
    const racers = Array.from({ length: 12 }, racer);
    // Retried while busy, as a caller retries a 503 with Retry-After: on a loaded machine the conflict layer can
    // outlast even the guards' retry budget, and a retried revocation keeps the earlier end it recorded.
    const revocation = retriedWhileBusy(() => revokeApiKey(store, { keyId: key.keyId }));
    // The racers stop however the revocation ends, and are awaited before anything is asserted.
    const [revoked] = await Promise.allSettled([revocation]).finally(() => {
      revoking = false;
    });
    const counts = await Promise.all(racers);
    const accepted = counts.reduce((sum, count) => sum + count, 1);
    const afterwards = await Promise.allSettled(Array.from({ length: 10 }, accept));

    // Assert
    expect(revoked).toMatchObject({ status: 'fulfilled', value: { alreadyRevoked: false } });
    expect(
      afterwards.map((outcome) => outcome.status === 'rejected' && outcome.reason instanceof UnauthorizedError),
    ).toEqual(Array(10).fill(true));
    const debits = (await listLedger(store, userId)).filter((entry) => entry.kind === 'debit');
    expect(debits).toHaveLength(accepted);
    expect(await auditUser(store, userId)).toEqual(expect.objectContaining({ balance: 10_000 - accepted, ok: true }));
  });
});
