import {
  creditsLeft,
  spendLimitContext,
  spendLimitFromContext,
  spendLimitProblem,
  spendPeriodOf,
} from '../../functions/core/spend-limit';

describe('spend limit periods (UTC)', () => {
  it.each([
    ['2026-11-25T00:00:00.000Z', '2026-11-25', '2026-11-25T00:00:00.000Z', '2026-11-26T00:00:00.000Z'],
    ['2026-11-25T23:59:59.999Z', '2026-11-25', '2026-11-25T00:00:00.000Z', '2026-11-26T00:00:00.000Z'],
    ['2026-12-31T12:00:00.000Z', '2026-12-31', '2026-12-31T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['2028-02-28T23:00:00.000Z', '2028-02-28', '2028-02-28T00:00:00.000Z', '2028-02-29T00:00:00.000Z'],
    // A time written with an offset is the UTC day it falls in.
    ['2026-11-25T23:30:00.000-02:00', '2026-11-26', '2026-11-26T00:00:00.000Z', '2026-11-27T00:00:00.000Z'],
  ])('day of %s is %s, from %s, resets at %s', (at, name, startsAt, resetsAt) => {
    // Act
    const period = spendPeriodOf('day', new Date(at));

    // Assert
    expect(period).toEqual({ name, startsAt: new Date(startsAt), resetsAt: new Date(resetsAt) });
  });

  it.each([
    ['2026-11-01T00:00:00.000Z', '2026-11', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
    ['2026-11-30T23:59:59.999Z', '2026-11', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
    ['2026-12-15T08:00:00.000Z', '2026-12', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['2028-02-29T10:00:00.000Z', '2028-02', '2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
  ])('month of %s is %s, from %s, resets at %s', (at, name, startsAt, resetsAt) => {
    // Act
    const period = spendPeriodOf('month', new Date(at));

    // Assert
    expect(period).toEqual({ name, startsAt: new Date(startsAt), resetsAt: new Date(resetsAt) });
  });

  it('a total budget has one period that never resets', () => {
    // Act
    const period = spendPeriodOf('total', new Date('2026-11-25T10:00:00Z'));

    // Assert
    expect(period).toEqual({ name: 'total', startsAt: undefined, resetsAt: undefined });
  });

  it.each([
    [{ credits: 10, period: 'day' }, undefined],
    [{ credits: 0, period: 'total' }, undefined],
    [{ credits: -1, period: 'day' }, 'credits must be a whole number from 0 to 1000000000'],
    [{ credits: 1.5, period: 'day' }, 'credits must be a whole number from 0 to 1000000000'],
    [{ credits: 10, period: 'week' }, 'period must be "day", "month" or "total"'],
    [{ credits: 10, period: 'day', extra: 1 }, 'has unknown field "extra"'],
    ['10/day', 'must be an object { credits, period } or null'],
  ])('validates %p', (value, problem) => {
    // Act
    const result = spendLimitProblem(value);

    // Assert
    expect(result).toBe(problem);
  });

  it('passes the limit through the authorizer context and back, also as strings', () => {
    // Prepare
    const limit = { credits: 50, period: 'month' as const, budgetKeyId: 'key-root' };

    // Act
    const context = spendLimitContext(limit, 3);
    const asStrings = Object.fromEntries(Object.entries(context).map(([name, value]) => [name, String(value)]));

    // Assert
    expect(spendLimitFromContext(asStrings)).toEqual({ spendLimit: limit, spendLimitVersion: 3 });
    expect(spendLimitFromContext({ ...spendLimitContext(undefined, undefined) })).toEqual({ spendLimitVersion: 0 });
    expect(creditsLeft(10, 12)).toBe(0);
  });
});
