import type { UsageRow } from '../../dashboard/src/api';
import {
  chartGeometry,
  csvField,
  csvFileName,
  dayLabel,
  keyLabel,
  niceScale,
  usageCsv,
} from '../../dashboard/src/usage-report';

/** A usage row with its task counts; `net` follows from the credits. */
function row(group: string, debited: number, refunded: number, extra: Partial<UsageRow> = {}): UsageRow {
  return {
    group,
    debited,
    refunded,
    net: debited - refunded,
    tasks: { accepted: 0, completed: 0, failed: 0, pending: 0 },
    ...extra,
  };
}

describe('the y axis of the usage chart', () => {
  test.each([
    [0, 1, [0, 1]],
    [3, 3, [0, 1, 2, 3]],
    [8, 8, [0, 2, 4, 6, 8]],
    [29, 30, [0, 10, 20, 30]],
    [120, 150, [0, 50, 100, 150]],
  ])('a largest value of %d gets an axis up to %d with round ticks', (max, top, ticks) => {
    // Act
    const scale = niceScale(max);

    // Assert
    expect(scale.top).toBe(top);
    expect(scale.ticks).toEqual(ticks);
  });
});

describe('the geometry of the usage chart', () => {
  const size = { width: 400, height: 240 };
  const label = (day: string) => day.slice(5);

  test('bars share one scale: the tallest reaches the top of the plot, and refunds are narrower bars over them', () => {
    // Prepare
    const rows = [row('2026-11-23', 0, 0), row('2026-11-24', 30, 0), row('2026-11-25', 15, 6)];

    // Act
    const chart = chartGeometry(rows, size, label);

    // Assert
    const [empty, full, half] = [chart.bars[0]!, chart.bars[1]!, chart.bars[2]!];
    expect(chart.scale.top).toBe(30);
    expect(empty.debitedBar.height).toBe(0);
    expect(full.debitedBar.y).toBe(chart.plot.top);
    expect(full.debitedBar.y + full.debitedBar.height).toBe(chart.plot.bottom);
    expect(half.debitedBar.height).toBeCloseTo(full.debitedBar.height / 2, 1);
    expect(half.refundedBar.height).toBeCloseTo((full.debitedBar.height * 6) / 30, 1);
    expect(half.refundedBar.width).toBeCloseTo(half.debitedBar.width / 2, 1);
    // Both bars of a day are centred in its slot, and the slots tile the plot.
    const centre = half.slot.x + half.slot.width / 2;
    expect(half.debitedBar.x + half.debitedBar.width / 2).toBeCloseTo(centre, 1);
    expect(half.refundedBar.x + half.refundedBar.width / 2).toBeCloseTo(centre, 1);
    expect(half.slot.x + half.slot.width).toBeCloseTo(chart.plot.right, 1);
    expect(chart.bars.map((bar) => [bar.day, bar.debited, bar.refunded])).toEqual([
      ['2026-11-23', 0, 0],
      ['2026-11-24', 30, 0],
      ['2026-11-25', 15, 6],
    ]);
  });

  test('a day with one credit beside a day with thousands still shows a bar', () => {
    // Act
    const chart = chartGeometry([row('2026-11-24', 5000, 0), row('2026-11-25', 1, 1)], size, label);

    // Assert
    expect(chart.bars[1]?.debitedBar.height).toBeGreaterThanOrEqual(1);
    expect(chart.bars[1]?.refundedBar.height).toBeGreaterThanOrEqual(1);
  });

  test('the y axis has a grid line per tick, from the bottom of the plot to its top', () => {
    // Act
    const chart = chartGeometry([row('2026-11-25', 29, 0)], size, label);

    // Assert
    expect(chart.yTicks.map((tick) => tick.value)).toEqual([0, 10, 20, 30]);
    expect(chart.yTicks[0]?.y).toBe(chart.plot.bottom);
    expect(chart.yTicks[3]?.y).toBe(chart.plot.top);
    // Room on the left for the widest tick label.
    expect(chart.plot.left).toBeGreaterThanOrEqual(2 * 7.5);
  });

  test('day labels of a long range skip days so they never overlap, and the last day always has one', () => {
    // Prepare: 30 days in 400 px leave about 12 px a day.
    const rows = Array.from({ length: 30 }, (_, index) => row(`2026-11-${String(index + 1).padStart(2, '0')}`, 1, 0));

    // Act
    const chart = chartGeometry(rows, size, label);

    // Assert
    const xs = chart.xLabels.map((one) => one.x);
    const gaps = xs.slice(1).map((x, index) => x - (xs[index] ?? 0));
    expect(chart.xLabels.at(-1)).toMatchObject({ day: '2026-11-30', text: '11-30' });
    expect(chart.xLabels.length).toBeGreaterThan(2);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(64);
  });

  test('a label that would stick out of the chart ends at its right edge; the others are centred under their day', () => {
    // Prepare: 12 px a day leave the last label (centred) 6 px from the edge, less than half its width.
    const rows = Array.from({ length: 30 }, (_, index) => row(`2026-11-${String(index + 1).padStart(2, '0')}`, 1, 0));

    // Act
    const chart = chartGeometry(rows, size, (day) => `Nov ${Number(day.slice(8))}`);

    // Assert
    const last = chart.xLabels.at(-1)!;
    const lastBar = chart.bars.at(-1)!;
    expect(last).toMatchObject({ text: 'Nov 30', anchor: 'end', x: chart.plot.right });
    expect(chart.xLabels.slice(0, -1).every((label) => label.anchor === 'middle')).toBe(true);
    for (const label of chart.xLabels.slice(0, -1)) {
      const bar = chart.bars.find((one) => one.day === label.day)!;
      expect(label.x).toBeCloseTo(bar.slot.x + bar.slot.width / 2, 1);
    }
    expect(lastBar.slot.x + lastBar.slot.width).toBeCloseTo(chart.plot.right, 1);
  });

  test('every day of a short range has its label', () => {
    // Act
    const chart = chartGeometry([row('2026-11-24', 1, 0), row('2026-11-25', 2, 0)], size, label);

    // Assert
    expect(chart.xLabels.map((one) => one.text)).toEqual(['11-24', '11-25']);
  });
});

describe('the labels of the usage page', () => {
  test('a UTC day is written the way the reader’s locale writes a short date', () => {
    // Act
    const us = dayLabel('2026-11-25', 'en-US');
    const gb = dayLabel('2026-11-25', 'en-GB');

    // Assert
    expect(us).toBe('Nov 25');
    expect(gb).toBe('25 Nov');
  });

  test('a key row goes by its name, the session by what it is, a deleted key by its id', () => {
    // Act
    const named = keyLabel({ group: 'key_abc', name: 'laptop' });
    const session = keyLabel({ group: 'session' });
    const deleted = keyLabel({ group: 'key_gone' });

    // Assert
    expect([named, session, deleted]).toEqual(['laptop', 'Dashboard (signed in)', 'key_gone']);
  });
});

describe('the CSV of the usage tables', () => {
  test('a field is quoted only when it must be, with its quotes doubled', () => {
    // Act
    const fields = ['plain', 'a, b', 'say "hi"', 'two\nlines', 'café', 12, -3].map(csvField);

    // Assert
    expect(fields).toEqual(['plain', '"a, b"', '"say ""hi"""', '"two\nlines"', 'café', '12', '-3']);
  });

  test('a text a spreadsheet would run as a formula is kept as text', () => {
    // Act
    const fields = ['=1+1', '+SUM(A1)', '-2', '@cmd', '=HYPERLINK("x","y")'].map(csvField);

    // Assert
    expect(fields).toEqual(["'=1+1", "'+SUM(A1)", "'-2", "'@cmd", `"'=HYPERLINK(""x"",""y"")"`]);
  });

  test('the key table has a header, the key id and name (none for a deleted key), then the figures, each line ending in CRLF', () => {
    // Prepare
    const rows = [
      row('key_abc', 8, 4, { name: 'usage, "report"', tasks: { accepted: 2, completed: 1, failed: 1, pending: 0 } }),
      row('session', 13, 3, { tasks: { accepted: 3, completed: 2, failed: 1, pending: 0 } }),
      row('key_gone', 3, 0, { tasks: { accepted: 1, completed: 0, failed: 0, pending: 1 } }),
    ];

    // Act
    const csv = usageCsv('key', rows);

    // Assert
    expect(csv).toBe(
      'Key ID,Key name,Debited,Refunded,Net,Accepted,Completed,Failed,Pending\r\n' +
        'key_abc,"usage, ""report""",8,4,4,2,1,1,0\r\n' +
        'session,Dashboard (signed in),13,3,10,3,2,1,0\r\n' +
        'key_gone,,3,0,3,1,0,0,1\r\n',
    );
  });

  test('the day and model tables have one column for their group', () => {
    // Act
    const days = usageCsv('day', [row('2026-11-25', 3, 3)]);
    const models = usageCsv('model', [row('video-a/v2-1-pro', 50, 0)]);

    // Assert
    expect(days).toBe(
      'Day (UTC),Debited,Refunded,Net,Accepted,Completed,Failed,Pending\r\n2026-11-25,3,3,0,0,0,0,0\r\n',
    );
    expect(models).toBe(
      'Model,Debited,Refunded,Net,Accepted,Completed,Failed,Pending\r\nvideo-a/v2-1-pro,50,0,50,0,0,0,0\r\n',
    );
  });

  test('an empty table is its header alone', () => {
    // Act
    const csv = usageCsv('model', []);

    // Assert
    expect(csv).toBe('Model,Debited,Refunded,Net,Accepted,Completed,Failed,Pending\r\n');
  });

  test('the file is named after its grouping and range', () => {
    // Act
    const name = csvFileName('key', { from: '2026-10-27', to: '2026-11-25' });

    // Assert
    expect(name).toBe('usage-by-key-2026-10-27-to-2026-11-25.csv');
  });
});
