/**
 * What the Usage page computes from `GET /api/ai/usage`: the chart's geometry (in pixels of the SVG's
 * coordinate system), the labels of its rows and the CSV text of its tables. No DOM here, so unit
 * tests can check every figure and every quoted field.
 */
import type { UsageGroupBy, UsageRow } from './api';

export type { UsageGroupBy, UsageRow };

/** The `group` of the tasks submitted from the dashboard itself (signed in, no API key). */
export const SESSION_GROUP = 'session';

/** The y axis: `top` is the value at the top of the plot, `ticks` the values given a grid line. */
export interface Scale {
  top: number;
  step: number;
  ticks: number[];
}

/**
 * A y axis up to at least `max` in about four round steps (1, 2 or 5 times a power of ten). Credits
 * are whole numbers, so a step is never below 1; an empty range still gets an axis (0 to 1).
 */
export function niceScale(max: number): Scale {
  const rough = Math.max(max, 1) / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(1, ([1, 2, 5, 10].find((factor) => factor * magnitude >= rough) ?? 10) * magnitude);
  const top = Math.max(step, Math.ceil(max / step) * step);
  const ticks: number[] = [];
  for (let value = 0; value <= top; value += step) ticks.push(value);
  return { top, step, ticks };
}

/** One day of the chart: its slot, the debited bar and the narrower refunded bar drawn over it. */
export interface DayBar {
  day: string;
  debited: number;
  refunded: number;
  /** The day's whole column (the hover target that carries its tooltip). */
  slot: { x: number; width: number };
  debitedBar: Rect;
  refundedBar: Rect;
}

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface ChartGeometry {
  width: number;
  height: number;
  /** The plotting area: bars grow up from `bottom`, axis labels sit outside it. */
  plot: { left: number; top: number; right: number; bottom: number };
  scale: Scale;
  bars: DayBar[];
  /** Grid lines with their value, at `y`. */
  yTicks: { value: number; y: number }[];
  /**
   * Day labels under the bars, spaced so that they never overlap: centred on `x` under their day, or,
   * for one that would stick out of the chart (the last day of a long range), ending (starting) at `x`.
   */
  xLabels: { day: string; x: number; text: string; anchor: 'start' | 'middle' | 'end' }[];
}

/**
 * Pixel sizes of the chart's text (12 px, set in app.css): the margins the axis labels need, and how
 * wide a label may be (a generous average per character: it only decides where a label is anchored).
 */
const FONT = { digit: 7.5, char: 7.5, height: 12 } as const;
/** The least room one day label takes, so labels of a long range skip days instead of colliding. */
const MIN_LABEL_SPACING = 64;

/** Two decimals: enough for a pixel, short in the markup. */
const px = (value: number) => Math.round(value * 100) / 100;

/**
 * The chart of `rows` (one per day, oldest first, as `groupBy=day` answers) in a `width` x `height`
 * box. Each bar is as tall as its credits on one shared scale; a day that moved any credits gets at
 * least a pixel, so small days stay visible next to big ones. The last day always has its label
 * (usually today), and the others every few days back from it.
 */
export function chartGeometry(
  rows: readonly Pick<UsageRow, 'group' | 'debited' | 'refunded'>[],
  size: { width: number; height: number },
  formatDay: (day: string) => string = dayLabel,
): ChartGeometry {
  const scale = niceScale(Math.max(0, ...rows.map((row) => Math.max(row.debited, row.refunded))));
  const plot = {
    left: 12 + FONT.digit * String(scale.top).length,
    top: FONT.height,
    right: size.width - 8,
    bottom: size.height - FONT.height - 14,
  };
  const plotHeight = plot.bottom - plot.top;
  const slotWidth = (plot.right - plot.left) / Math.max(rows.length, 1);
  const barWidth = Math.max(1, slotWidth * 0.7);
  const heightOf = (value: number) => (value > 0 ? Math.max(1, (value / scale.top) * plotHeight) : 0);
  const bars = rows.map((row, index): DayBar => {
    const slotX = plot.left + index * slotWidth;
    const centre = slotX + slotWidth / 2;
    const debitedHeight = heightOf(row.debited);
    const refundedHeight = heightOf(row.refunded);
    const refundedWidth = Math.max(1, barWidth / 2);
    return {
      day: row.group,
      debited: row.debited,
      refunded: row.refunded,
      slot: { x: px(slotX), width: px(slotWidth) },
      debitedBar: {
        x: px(centre - barWidth / 2),
        y: px(plot.bottom - debitedHeight),
        width: px(barWidth),
        height: px(debitedHeight),
      },
      refundedBar: {
        x: px(centre - refundedWidth / 2),
        y: px(plot.bottom - refundedHeight),
        width: px(refundedWidth),
        height: px(refundedHeight),
      },
    };
  });
  const every = Math.max(1, Math.ceil(MIN_LABEL_SPACING / slotWidth));
  const xLabels = bars
    .filter((_bar, index) => (rows.length - 1 - index) % every === 0)
    .map((bar) => {
      const text = formatDay(bar.day);
      const centre = bar.slot.x + bar.slot.width / 2;
      const half = (text.length * FONT.char) / 2;
      if (centre + half > size.width) return { day: bar.day, x: px(plot.right), text, anchor: 'end' as const };
      if (centre - half < 0) return { day: bar.day, x: 0, text, anchor: 'start' as const };
      return { day: bar.day, x: px(centre), text, anchor: 'middle' as const };
    });
  const yTicks = scale.ticks.map((value) => ({ value, y: px(plot.bottom - (value / scale.top) * plotHeight) }));
  return { width: size.width, height: size.height, plot, scale, bars, yTicks, xLabels };
}

/** A UTC day (`2026-11-25`) as the reader's locale writes a short date ("Nov 25", "25 Nov"). */
export function dayLabel(day: string, locale?: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(date.getTime())) return day;
  return date.toLocaleDateString(locale, { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

/** The name a key row goes by: its name, "Dashboard (signed in)" for the session, else its id. */
export function keyLabel(row: Pick<UsageRow, 'group' | 'name'>): string {
  if (row.group === SESSION_GROUP) return 'Dashboard (signed in)';
  return row.name ?? row.group;
}

/** The figures every table has after its first column(s), in this order. */
export const FIGURE_COLUMNS = ['Debited', 'Refunded', 'Net', 'Accepted', 'Completed', 'Failed', 'Pending'] as const;

/** A row's figures in `FIGURE_COLUMNS` order. */
export function figures(row: UsageRow): number[] {
  return [
    row.debited,
    row.refunded,
    row.net,
    row.tasks.accepted,
    row.tasks.completed,
    row.tasks.failed,
    row.tasks.pending,
  ];
}

/** The columns naming a row's group in the CSV of each grouping (a key has its id and its name). */
const GROUP_COLUMNS: Record<UsageGroupBy, string[]> = {
  day: ['Day (UTC)'],
  key: ['Key ID', 'Key name'],
  model: ['Model'],
};

/** The group's cells: a key's name is left empty once the key no longer exists (its id says it all). */
function groupCells(groupBy: UsageGroupBy, row: UsageRow): string[] {
  if (groupBy !== 'key') return [row.group];
  return [row.group, row.group === SESSION_GROUP ? keyLabel(row) : (row.name ?? '')];
}

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled.
 * A text that a spreadsheet would run as a formula (a key name starting with `=`, `+`, `-`, `@`, a tab
 * or a carriage return) gets a leading `'`, so opening the export never evaluates anything; numbers
 * are written as they are (a negative net stays a number).
 */
export function csvField(value: string | number): string {
  if (typeof value === 'number') return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** CSV text: the header, then one line per row, each line ending in CRLF (RFC 4180). */
export function toCsv(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  return [header, ...rows].map((cells) => `${cells.map(csvField).join(',')}\r\n`).join('');
}

/** The CSV of one table of the page: the same rows and figures as shown, one header line. */
export function usageCsv(groupBy: UsageGroupBy, rows: readonly UsageRow[]): string {
  return toCsv(
    [...GROUP_COLUMNS[groupBy], ...FIGURE_COLUMNS],
    rows.map((row) => [...groupCells(groupBy, row), ...figures(row)]),
  );
}

/** `usage-by-key-2026-10-27-to-2026-11-25.csv`. */
export function csvFileName(groupBy: UsageGroupBy, range: { from: string; to: string }): string {
  return `usage-by-${groupBy}-${range.from}-to-${range.to}.csv`;
}
