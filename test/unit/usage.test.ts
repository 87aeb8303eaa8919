import { daysOf, parseUsageQuery, usageAttributes, usageReport } from '../../functions/core/usage';

const NOW = new Date('2026-11-25T13:00:00.000Z');

describe('usage queries', () => {
  it('default to the last 30 days, today included, by day', () => {
    // Act
    const parsed = parseUsageQuery({}, NOW);

    // Assert
    expect(parsed).toEqual({ query: { from: '2026-10-27', to: '2026-11-25', groupBy: 'day' }, fieldErrors: {} });
    expect(daysOf(parsed.query.from, parsed.query.to)).toHaveLength(30);
  });

  it('take a range of up to 366 days and refuse one longer, reversed or not made of real days', () => {
    // Act
    const leapYear = parseUsageQuery({ from: '2024-01-01', to: '2024-12-31' }, NOW);
    const longer = parseUsageQuery({ from: '2024-01-01', to: '2025-01-01' }, NOW);
    const reversed = parseUsageQuery({ from: '2026-11-02', to: '2026-11-01' }, NOW);
    const unreal = parseUsageQuery({ from: '2026-02-29', to: '2026-13-01', groupBy: 'hour' }, NOW);
    const onlyTo = parseUsageQuery({ to: '2026-03-01' }, NOW);

    // Assert
    expect(leapYear.fieldErrors).toEqual({});
    expect(longer.fieldErrors).toEqual({ from: ['The range may cover at most 366 days'] });
    expect(reversed.fieldErrors).toEqual({ from: ['Must not be after to'] });
    expect(unreal.fieldErrors).toEqual({
      from: ['Must be a day YYYY-MM-DD (UTC)'],
      to: ['Must be a day YYYY-MM-DD (UTC)'],
      groupBy: ['Must be one of day, key, model'],
    });
    expect(onlyTo.query).toEqual({ from: '2026-01-31', to: '2026-03-01', groupBy: 'day' });
  });
});

describe('usage reports', () => {
  const counters = (entries: Array<[string, string | undefined, string, number]>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const [metric, keyId, model, value] of entries) {
      for (const name of usageAttributes(metric as 'debited', keyId, model)) out[name] = (out[name] ?? 0) + value;
    }
    return out;
  };

  it('sum the shards of a day, name the dashboard group and the keys, and rank groups by credits', () => {
    // Prepare: two shards of one day, one of the next; a day outside the range is ignored.
    const items = [
      {
        day: '2026-11-24',
        counters: counters([
          ['debited', 'key-a', 'm1', 5],
          ['accepted', 'key-a', 'm1', 1],
        ]),
      },
      {
        day: '2026-11-24',
        counters: counters([
          ['debited', undefined, 'm2', 9],
          ['accepted', undefined, 'm2', 1],
        ]),
      },
      {
        day: '2026-11-25',
        counters: {
          ...counters([
            ['refunded', 'key-a', 'm1', 5],
            ['failed', 'key-a', 'm1', 1],
          ]),
          ttl: 9,
        },
      },
      { day: '2026-11-26', counters: counters([['debited', 'key-a', 'm1', 100]]) },
    ];
    const query = { from: '2026-11-24', to: '2026-11-25' };

    // Act
    const byKey = usageReport({ ...query, groupBy: 'key' }, items, new Map([['key-a', 'production']]));
    const byDay = usageReport({ ...query, groupBy: 'day' }, items);

    // Assert
    expect(byKey.totals).toEqual({
      debited: 14,
      refunded: 5,
      net: 9,
      tasks: { accepted: 2, completed: 0, failed: 1, pending: 1 },
    });
    expect(byKey.rows.map((row) => [row.group, row.name, row.net])).toEqual([
      ['session', undefined, 9],
      ['key-a', 'production', 0],
    ]);
    expect(byDay.rows.map((row) => [row.group, row.debited, row.refunded])).toEqual([
      ['2026-11-24', 14, 0],
      ['2026-11-25', 0, 5],
    ]);
  });
});
