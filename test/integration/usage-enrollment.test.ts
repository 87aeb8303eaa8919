/**
 * The deployed side of per-key rate limits: keys enrolled in API Gateway usage plans, account plans
 * created and keys moved, through the SDK's own API Gateway client over real HTTP (an API Gateway
 * stand-in, test/support/api-gateway-stand-in.ts) and the store on DynamoDB Local.
 */

import {
  enrollUsageKey,
  resetAccountLimits,
  setAccountLimits,
  type UsageEnrollment,
  usageEnrollmentFromEnv,
} from '../../functions/auth/rate-limits';
import { apiGatewayUsagePlans } from '../../functions/aws/usage-plans';
import { UsageError } from '../../functions/core/errors';
import { usageKeyName, usageKeyOf } from '../../functions/core/rate-plan';
import { putApiKey } from '../../functions/money/key-issue';
import { listAudit } from '../../functions/store/audit';
import { getRatePlan } from '../../functions/store/rate-plans';
import { type ApiGatewayStandIn, startApiGatewayStandIn } from '../support/api-gateway-stand-in';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newUserId } from '../support/store-fixtures';

let store: TestStore;
let gateway: ApiGatewayStandIn;
let enrollment: UsageEnrollment;

beforeAll(async () => {
  store = await createTestStore();
  gateway = await startApiGatewayStandIn();
  const plans = () =>
    apiGatewayUsagePlans({
      endpoint: gateway.endpoint,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'stand-in' },
      maxAttempts: 1,
    });
  const found = usageEnrollmentFromEnv(
    { USAGE_PLAN_NAME: 'stack-default', REST_API_ID: 'api', STAGE_NAME: 'prod' },
    plans,
  );
  if (!found) throw new Error('no enrollment');
  enrollment = found;
});

afterAll(async () => {
  await gateway?.close();
  await store?.dispose();
});

describe('usage plan enrollment against the API Gateway API', () => {
  test('a new key gets an API Gateway key with its usage identifier, in the default plan found by name; a repeat changes nothing', async () => {
    // Prepare
    const userId = newUserId();
    const key = await putApiKey(store, { userId, name: 'first' });
    const subject = { credential: 'key', keyId: key.keyId } as const;

    // Act
    await enrollUsageKey(store, enrollment, userId, subject);
    await enrollUsageKey(store, enrollment, userId, subject);

    // Assert
    const name = usageKeyName(store.tableName, subject);
    const stored = [...gateway.keys.values()].filter((k) => k.name === name);
    expect(stored).toEqual([
      { id: expect.any(String), name, value: usageKeyOf(store.tableName, subject), enabled: true },
    ]);
    expect(gateway.plansOf(name)).toEqual(['default']);
  });

  test('limits set gives the account a plan of its own and moves every key and its sessions there; reset moves them back', async () => {
    // Prepare
    const userId = newUserId();
    const first = await putApiKey(store, { userId, name: 'one' });
    const second = await putApiKey(store, { userId, name: 'two' });
    const names = [
      usageKeyName(store.tableName, { credential: 'key', keyId: first.keyId }),
      usageKeyName(store.tableName, { credential: 'key', keyId: second.keyId }),
      usageKeyName(store.tableName, { credential: 'session', userId }),
    ];
    await enrollUsageKey(store, enrollment, userId, { credential: 'key', keyId: first.keyId });
    await enrollUsageKey(store, enrollment, userId, { credential: 'key', keyId: second.keyId });
    await enrollUsageKey(store, enrollment, userId, { credential: 'session', userId });

    // Act
    const set = await setAccountLimits(store, enrollment, {
      userId,
      plan: { ratePerSecond: 5, burst: 10, dailyQuota: 1000 },
      actor: { type: 'operator' },
    });
    const own = set.usagePlanId ?? '';
    const ownTags = gateway.plans.get(own)?.tags;
    const movedTo = names.map((name) => gateway.plansOf(name));
    const later = await putApiKey(store, { userId, name: 'later' });
    await enrollUsageKey(store, enrollment, userId, { credential: 'key', keyId: later.keyId });
    const laterPlans = gateway.plansOf(usageKeyName(store.tableName, { credential: 'key', keyId: later.keyId }));
    const changed = await setAccountLimits(store, enrollment, {
      userId,
      plan: { ratePerSecond: 7, burst: 14 },
      actor: { type: 'operator' },
    });
    const planAfterChange = gateway.plans.get(own);
    const reset = await resetAccountLimits(store, enrollment, { userId, actor: { type: 'operator' } });

    // Assert
    expect(own).not.toBe('');
    // Tagged with its API, the tag the functions' IAM policy requires of a plan they add keys to.
    expect(ownTags).toEqual({ 'generation-service:rest-api-id': 'api' });
    expect(movedTo).toEqual([[own], [own], [own]]);
    expect(laterPlans).toEqual([own]);
    expect(changed.usagePlanId).toBe(own);
    expect(planAfterChange?.throttle).toEqual({ rateLimit: 7, burstLimit: 14 });
    expect(planAfterChange?.quota).toBeUndefined();
    expect(reset).toEqual({ hadOwnPlan: true });
    expect(names.map((name) => gateway.plansOf(name))).toEqual([['default'], ['default'], ['default']]);
    expect(gateway.plans.has(own)).toBe(false);
    expect(await getRatePlan(store, userId)).toBeUndefined();
    const audit = await listAudit(store, userId, { limit: 10 });
    expect(audit.entries.map((entry) => entry.action)).toEqual(['limits.reset', 'limits.set', 'limits.set']);
  });

  test('a plan out of range is refused before anything is created', async () => {
    // Prepare
    const userId = newUserId();
    const before = gateway.plans.size;

    // Act
    const attempt = setAccountLimits(store, enrollment, {
      userId,
      plan: { ratePerSecond: 0, burst: 6000 },
      actor: { type: 'operator' },
    });

    // Assert
    await expect(attempt).rejects.toThrow(UsageError);
    await expect(attempt).rejects.toThrow(
      'ratePerSecond must be a whole number from 1 to 10000; burst must be a whole number from 1 to 5000',
    );
    expect(gateway.plans.size).toBe(before);
    expect(await getRatePlan(store, userId)).toBeUndefined();
  });

  test('without usage plans (the local stack) enrollment does nothing and limits are only recorded', async () => {
    // Prepare
    const userId = newUserId();
    const calls = gateway.calls.length;

    // Act
    await enrollUsageKey(store, undefined, userId, { credential: 'session', userId });
    const set = await setAccountLimits(store, undefined, {
      userId,
      plan: { ratePerSecond: 2, burst: 4 },
      actor: { type: 'operator' },
    });

    // Assert
    expect(gateway.calls.length).toBe(calls);
    expect(set).toEqual({ ratePerSecond: 2, burst: 4 });
    expect(await getRatePlan(store, userId)).toEqual({ ratePerSecond: 2, burst: 4 });
    expect(usageEnrollmentFromEnv({})).toBeUndefined();
  });
});
