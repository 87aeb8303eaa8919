/**
 * Every API key's API Gateway key is given back when the key ends (a region holds 10,000 by default, and
 * rotation alone would use them up in time): created -> enrolled, revoked -> deleted, rotated -> the old
 * one deleted after its grace, expired -> deleted by the sweeper, and whatever a crash or a refusal
 * interrupts is finished by the sweeper. The store is DynamoDB Local; API Gateway's control plane cannot
 * run locally, so its client is mocked (aws-sdk-client-mock) with a small registry of keys. The last
 * tests run the same path on the local stand-in (local/usage-plans.ts) and the local gateway's lookup.
 */
import {
  APIGatewayClient,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetApiKeysCommand,
  LimitExceededException,
  NotFoundException,
  TooManyRequestsException,
} from '@aws-sdk/client-api-gateway';
import { mockClient } from 'aws-sdk-client-mock';
import {
  ISSUING_REPAIR_SECONDS,
  issueKey,
  reconcileGatewayKeys,
  revokeKey,
  rotateKey,
} from '../../functions/auth/key-issuing';
import { enrollUsageKey, type UsageEnrollment, usageEnrollmentFromEnv } from '../../functions/auth/rate-limits';
import { apiGatewayUsagePlans } from '../../functions/aws/usage-plans';
import { DEFAULT_RATE_PLAN, usageKeyName, usageKeyOf } from '../../functions/core/rate-plan';
import { epochSeconds } from '../../functions/store/api-keys';
import { dueGatewayKeys, scheduleGatewayKey } from '../../functions/store/gateway-keys';
import { readKeyCount } from '../../functions/store/key-count';
import { localUsageEnrollment, storePlanLookup } from '../../local/usage-plans';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newUserId, T0 } from '../support/store-fixtures';

const gateway = mockClient(APIGatewayClient);
/** The mocked region's API Gateway keys: name -> id. */
const registry = new Map<string, string>();
let store: TestStore;
let enrollment: UsageEnrollment;

const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const nameOf = (keyId: string) => usageKeyName(store.tableName, { credential: 'key', keyId });

function throttled() {
  return new TooManyRequestsException({ message: 'Too Many Requests', $metadata: { httpStatusCode: 429 } });
}

beforeAll(async () => {
  store = await createTestStore();
  const found = usageEnrollmentFromEnv({ USAGE_PLAN_ID: 'plan-default' }, () =>
    apiGatewayUsagePlans({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'mocked' },
      maxAttempts: 1,
    }),
  );
  if (!found) throw new Error('no enrollment');
  enrollment = found;
});

/** The registry's answers (a test that makes one call fail first re-installs the answer after it). */
const answers = {
  getApiKeys: (input: { nameQuery?: string }) => ({
    items: [...registry].filter(([name]) => name === input.nameQuery).map(([name, id]) => ({ name, id })),
  }),
  deleteApiKey: (input: { apiKey?: string }) => {
    const entry = [...registry].find(([, id]) => id === input.apiKey);
    if (!entry) throw new NotFoundException({ message: 'gone', $metadata: {} });
    registry.delete(entry[0]);
    return {};
  },
};

beforeEach(() => {
  gateway.reset();
  registry.clear();
  gateway.on(CreateApiKeyCommand).callsFake((input: { name?: string }) => {
    const name = input.name ?? '';
    if (registry.has(name)) throw new ConflictException({ message: 'exists', $metadata: {} });
    const id = `gw-${registry.size + 1}-${name.slice(-6)}`;
    registry.set(name, id);
    return { id };
  });
  gateway.on(GetApiKeysCommand).callsFake(answers.getApiKeys);
  gateway.on(CreateUsagePlanKeyCommand).resolves({});
  gateway.on(DeleteApiKeyCommand).callsFake(answers.deleteApiKey);
});

afterAll(async () => {
  gateway.restore();
  await store?.dispose();
});

async function dueFor(userId: string, now: Date) {
  return (await dueGatewayKeys(store, now)).filter((due) => due.userId === userId);
}

describe('the API Gateway key of each API key, from creation to deletion', () => {
  test('create enrolls; revoke deletes at once and leaves nothing for the sweeper', async () => {
    // Prepare
    const userId = newUserId();
    const key = await issueKey(store, enrollment, { userId, name: 'ci', now: T0 });
    const enrolled = registry.has(nameOf(key.keyId));

    // Act
    await revokeKey(store, enrollment, { keyId: key.keyId, now: at(10) });

    // Assert
    expect(enrolled).toBe(true);
    expect(registry.has(nameOf(key.keyId))).toBe(false);
    expect(await dueFor(userId, at(10 + ISSUING_REPAIR_SECONDS + 1))).toEqual([]);
  });

  test('rotate with grace: the old API Gateway key goes after the grace (sweeper), the new one stays', async () => {
    // Prepare
    const userId = newUserId();
    const old = await issueKey(store, enrollment, { userId, name: 'ci', now: T0 });

    // Act
    const { issued } = await rotateKey(store, enrollment, { keyId: old.keyId, graceSeconds: 3600, now: at(10) });
    const duringGrace = await reconcileGatewayKeys(store, enrollment, at(1800));
    const oldDuringGrace = registry.has(nameOf(old.keyId));
    const afterGrace = await reconcileGatewayKeys(store, enrollment, at(3611));

    // Assert
    expect(duringGrace.deleted).toBe(0);
    expect(oldDuringGrace).toBe(true);
    expect(afterGrace.deleted).toBe(1);
    expect(registry.has(nameOf(old.keyId))).toBe(false);
    expect(registry.has(nameOf(issued.keyId))).toBe(true);
    expect((await readKeyCount(store, userId)).activeKeys).toBe(1);
  });

  test('rotate without grace deletes the old API Gateway key at once', async () => {
    // Prepare
    const userId = newUserId();
    const old = await issueKey(store, enrollment, { userId, name: 'ci', now: T0 });

    // Act
    const { issued } = await rotateKey(store, enrollment, { keyId: old.keyId, graceSeconds: 0, now: at(10) });

    // Assert
    expect(registry.has(nameOf(old.keyId))).toBe(false);
    expect(registry.has(nameOf(issued.keyId))).toBe(true);
    expect(await dueFor(userId, at(100_000))).toEqual([]);
  });

  test('expiry: the sweeper deletes the API Gateway key once the key has expired, and the key leaves the count', async () => {
    // Prepare
    const userId = newUserId();
    const key = await issueKey(store, enrollment, {
      userId,
      name: 'short',
      expiresAt: epochSeconds(T0) + 600,
      now: T0,
    });

    // Act
    const before = await reconcileGatewayKeys(store, enrollment, at(300));
    const stillThere = registry.has(nameOf(key.keyId));
    const after = await reconcileGatewayKeys(store, enrollment, at(601));

    // Assert
    expect(before.deleted).toBe(0);
    expect(stillThere).toBe(true);
    expect(after.deleted).toBeGreaterThanOrEqual(1);
    expect(registry.has(nameOf(key.keyId))).toBe(false);
    expect((await readKeyCount(store, userId)).activeKeys).toBe(0);
    expect(await dueFor(userId, at(100_000))).toEqual([]);
  });

  test('a revocation whose deletion was refused (as a crash between the two would leave it) is finished by the sweeper', async () => {
    // Prepare
    const userId = newUserId();
    const key = await issueKey(store, enrollment, { userId, name: 'ci', now: T0 });
    gateway.on(DeleteApiKeyCommand).rejectsOnce(throttled()).callsFake(answers.deleteApiKey);

    // Act
    const revoked = await revokeKey(store, enrollment, { keyId: key.keyId, now: at(10) });
    const leftBehind = registry.has(nameOf(key.keyId));
    const swept = await reconcileGatewayKeys(store, enrollment, at(70));

    // Assert
    expect(revoked.alreadyRevoked).toBe(false);
    expect(leftBehind).toBe(true);
    expect(swept.deleted).toBeGreaterThanOrEqual(1);
    expect(registry.has(nameOf(key.keyId))).toBe(false);
    expect(await dueFor(userId, at(100_000))).toEqual([]);
  });

  test('an issuing that crashed after enrolling, before the key was written: the sweeper deletes the orphan', async () => {
    // Prepare: what issueKey does before the key's transaction, and nothing after.
    const userId = newUserId();
    const keyId = `key_orphan${Date.now().toString(36)}`;
    await scheduleGatewayKey(store, { userId, keyId, due: at(ISSUING_REPAIR_SECONDS) });
    await enrollUsageKey(store, enrollment, userId, { credential: 'key', keyId });

    // Act
    const early = await reconcileGatewayKeys(store, enrollment, at(60));
    const orphanKept = registry.has(nameOf(keyId));
    const swept = await reconcileGatewayKeys(store, enrollment, at(ISSUING_REPAIR_SECONDS + 1));

    // Assert
    expect(early.deleted).toBe(0);
    expect(orphanKept).toBe(true);
    expect(swept.deleted).toBeGreaterThanOrEqual(1);
    expect(registry.has(nameOf(keyId))).toBe(false);
  });

  test('a refusal while sweeping leaves that key due; the next sweep finishes it', async () => {
    // Prepare
    const userId = newUserId();
    const key = await issueKey(store, enrollment, { userId, name: 'ci', expiresAt: epochSeconds(T0) + 60, now: T0 });
    gateway.on(GetApiKeysCommand).rejectsOnce(throttled()).callsFake(answers.getApiKeys);

    // Act
    const refused = await reconcileGatewayKeys(store, enrollment, at(61));
    const keptForNext = (await dueFor(userId, at(61))).map((due) => due.keyId);
    await reconcileGatewayKeys(store, enrollment, at(62));

    // Assert
    expect(refused.deleted).toBe(0);
    expect(refused.busy).toBeGreaterThanOrEqual(1);
    expect(keptForNext).toEqual([key.keyId]);
    expect(registry.has(nameOf(key.keyId))).toBe(false);
  });

  test('a busy answer (LimitExceeded) on the first due key does not stop the deletions behind it', async () => {
    // Prepare: two revoked keys whose deletions API Gateway refused at the time (left to the sweeper);
    // the first one due keeps being refused.
    const userId = newUserId();
    const first = await issueKey(store, enrollment, { userId, name: 'first', now: T0 });
    const behind = await issueKey(store, enrollment, { userId, name: 'behind', now: T0 });
    gateway.on(DeleteApiKeyCommand).rejects(throttled());
    await revokeKey(store, enrollment, { keyId: first.keyId, now: at(5) });
    await revokeKey(store, enrollment, { keyId: behind.keyId, now: at(6) });
    const firstId = registry.get(nameOf(first.keyId));
    gateway.on(DeleteApiKeyCommand).callsFake((input: { apiKey?: string }) => {
      if (input.apiKey === firstId) {
        throw new LimitExceededException({ message: 'Limit Exceeded', $metadata: { httpStatusCode: 429 } });
      }
      return answers.deleteApiKey(input);
    });

    // Act
    const swept = await reconcileGatewayKeys(store, enrollment, at(70));

    // Assert
    expect(registry.has(nameOf(behind.keyId))).toBe(false);
    expect(registry.has(nameOf(first.keyId))).toBe(true);
    expect((await dueFor(userId, at(70))).map((due) => due.keyId)).toEqual([first.keyId]);
    expect(swept.busy).toBeGreaterThanOrEqual(1);
  });
});

describe('the local stand-in runs the same path', () => {
  test('a revoked key is deleted from the stand-in, and the local gateway then finds its usage key in no plan', async () => {
    // Prepare
    const userId = newUserId();
    const local = localUsageEnrollment(() => store);
    const lookup = storePlanLookup(store, DEFAULT_RATE_PLAN, 0);
    const key = await issueKey(store, local, { userId, name: 'ci', now: T0 });
    const usageKey = usageKeyOf(store.tableName, { credential: 'key', keyId: key.keyId });
    const context = { credential: 'key', userId, keyId: key.keyId };
    const before = await lookup(usageKey, context);

    // Act
    await revokeKey(store, local, { keyId: key.keyId, now: at(10) });
    const after = await lookup(usageKey, context);

    // Assert
    expect(before).toEqual(DEFAULT_RATE_PLAN);
    expect(after).toBeUndefined();
    expect(await dueFor(userId, at(100_000))).toEqual([]);
  });

  test('an expired key is deleted from the stand-in by the sweeper', async () => {
    // Prepare
    const userId = newUserId();
    const local = localUsageEnrollment(() => store);
    const lookup = storePlanLookup(store, DEFAULT_RATE_PLAN, 0);
    const key = await issueKey(store, local, { userId, name: 'ci', expiresAt: epochSeconds(T0) + 60, now: T0 });
    const usageKey = usageKeyOf(store.tableName, { credential: 'key', keyId: key.keyId });

    // Act
    const report = await reconcileGatewayKeys(store, local, at(61));

    // Assert
    expect(report.deleted).toBeGreaterThanOrEqual(1);
    expect(await lookup(usageKey, { credential: 'key', userId, keyId: key.keyId })).toBeUndefined();
  });
});
