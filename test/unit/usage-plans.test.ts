import {
  DEFAULT_RATE_PLAN,
  QUOTA_RETRY_AFTER_SECONDS,
  type RatePlan,
  ratePlanProblems,
  usageKeyOf,
} from '../../functions/core/rate-plan';
import { createUsageLimiter, type PlanLookup } from '../../local/usage-plans';

const T0 = Date.parse('2026-05-01T23:59:00.000Z');
const CONTEXT = { credential: 'key', userId: 'user', keyId: 'key-1' };

/** A limiter over fixed plans per usage key, on a clock the test moves. */
function limiterWith(plans: Record<string, RatePlan>) {
  const clock = { now: T0 };
  const lookup: PlanLookup = async (usageKey) => plans[usageKey];
  const admit = createUsageLimiter(lookup, () => clock.now);
  return { clock, admit, plans };
}

async function statuses(admit: ReturnType<typeof createUsageLimiter>, key: string, count: number) {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const verdict = await admit(key, CONTEXT);
    out.push(verdict.ok ? 200 : verdict.status);
  }
  return out;
}

describe('the usage-plan limiter (token bucket per usage key, daily quota)', () => {
  it('lets a burst through, answers the next request 429 with Retry-After, and leaves another key alone', async () => {
    // Prepare
    const { admit } = limiterWith({ a: { ratePerSecond: 2, burst: 5 }, b: { ratePerSecond: 2, burst: 5 } });

    // Act
    const burst = await statuses(admit, 'a', 5);
    const over = await admit('a', CONTEXT);
    const other = await statuses(admit, 'b', 5);

    // Assert
    expect(burst).toEqual([200, 200, 200, 200, 200]);
    expect(over).toEqual({
      ok: false,
      status: 429,
      body: { error: 'Too many requests' },
      headers: { 'Retry-After': '1' },
    });
    expect(other).toEqual([200, 200, 200, 200, 200]);
  });

  it('refills at the steady rate, never beyond the burst', async () => {
    // Prepare
    const { admit, clock } = limiterWith({ a: { ratePerSecond: 3, burst: 4 } });
    await statuses(admit, 'a', 4);

    // Act
    clock.now += 1000;
    const afterOneSecond = await statuses(admit, 'a', 4);
    clock.now += 60_000;
    const afterAMinute = await statuses(admit, 'a', 5);

    // Assert
    expect(afterOneSecond).toEqual([200, 200, 200, 429]);
    expect(afterAMinute).toEqual([200, 200, 200, 200, 429]);
  });

  it('counts the daily quota per UTC day and says when to come back', async () => {
    // Prepare
    const { admit, clock } = limiterWith({ a: { ratePerSecond: 100, burst: 100, dailyQuota: 3 } });

    // Act
    const today = await statuses(admit, 'a', 3);
    const spent = await admit('a', CONTEXT);
    clock.now += 60_000; // past 00:00 UTC
    const tomorrow = await statuses(admit, 'a', 4);

    // Assert
    expect(today).toEqual([200, 200, 200]);
    expect(spent).toEqual({
      ok: false,
      status: 429,
      body: { error: 'Daily quota exceeded' },
      headers: { 'Retry-After': String(QUOTA_RETRY_AFTER_SECONDS) },
    });
    expect(tomorrow).toEqual([200, 200, 200, 429]);
  });

  it('answers 403 for a request without a usage key or with a key in no plan, as API Gateway does', async () => {
    // Prepare
    const { admit } = limiterWith({ a: DEFAULT_RATE_PLAN });

    // Act
    const missing = await admit(undefined, CONTEXT);
    const unknown = await admit('not-in-a-plan', CONTEXT);

    // Assert
    expect(missing).toMatchObject({ ok: false, status: 403, body: { error: 'Forbidden' } });
    expect(unknown).toMatchObject({ ok: false, status: 403, body: { error: 'Forbidden' } });
  });

  it('applies a changed plan to the existing bucket: a smaller burst caps what is left', async () => {
    // Prepare
    const { admit, plans } = limiterWith({ a: { ratePerSecond: 1, burst: 10 } });
    await admit('a', CONTEXT);

    // Act
    plans.a = { ratePerSecond: 1, burst: 2 };
    const after = await statuses(admit, 'a', 3);

    // Assert
    expect(after).toEqual([200, 200, 429]);
  });
});

describe('rate plan rules', () => {
  it('accepts the default plan and whole numbers in range', () => {
    expect(ratePlanProblems(DEFAULT_RATE_PLAN)).toEqual({});
    expect(ratePlanProblems({ ratePerSecond: 1, burst: 1, dailyQuota: 1 })).toEqual({});
  });

  it('names every bad field: fractions (Retry-After: 1 must hold), zero, beyond API Gateway limits', () => {
    expect(ratePlanProblems({ ratePerSecond: 0.5, burst: 0, dailyQuota: 0 })).toEqual({
      ratePerSecond: 'must be a whole number from 1 to 10000',
      burst: 'must be a whole number from 1 to 5000',
      dailyQuota: 'must be a whole number from 1 to 1000000000',
    });
    expect(Object.keys(ratePlanProblems({ ratePerSecond: 10_001, burst: 5_001 }))).toEqual(['ratePerSecond', 'burst']);
  });

  it('derives one usage key per API key (and one per account for sessions) and table, usable as an API Gateway key value', () => {
    const key = usageKeyOf('table-a', { credential: 'key', keyId: 'k1' });
    expect(key).toMatch(/^gsu_[0-9a-f]{64}$/);
    expect(usageKeyOf('table-a', { credential: 'key', keyId: 'k1' })).toBe(key);
    expect(usageKeyOf('table-a', { credential: 'key', keyId: 'k2' })).not.toBe(key);
    expect(usageKeyOf('table-b', { credential: 'key', keyId: 'k1' })).not.toBe(key);
    expect(usageKeyOf('table-a', { credential: 'session', userId: 'k1' })).not.toBe(key);
  });
});
