/**
 * Usage: credits debited and refunded per UTC day as a bar chart (plain SVG drawn here: the CSP loads
 * nothing from elsewhere), and tables by key and by model, for a range of days (the last 30 unless the
 * address names one: `#/usage?from=2026-10-01&to=2026-10-31`). Every table downloads as CSV, made in
 * the browser from the figures shown. Below them, the account-wide monthly spend limit, set or removed
 * (PUT /api/account/spend-limit), with what the account spent under it this month.
 */
import { accountLimitText, limitFromInput } from '../account-limit';
import {
  type AccountLimit,
  ApiError,
  getAccountLimit,
  getUsage,
  setAccountLimit,
  type Usage,
  type UsageGroupBy,
  type UsageRow,
} from '../api';
import { dataTable, field, h, replace, svg, type TableRow, uid } from '../dom';
import { credits } from '../format';
import {
  chartGeometry,
  csvFileName,
  dayLabel,
  FIGURE_COLUMNS,
  figures,
  keyLabel,
  SESSION_GROUP,
  usageCsv,
} from '../usage-report';
import type { PageContext } from './page';

/** The chart's height in pixels; its width is the page's, measured when it is drawn. */
const CHART_HEIGHT = 240;
/** Below this the bars of 30 days get too thin to point at: the chart scrolls sideways instead. */
const MIN_CHART_WIDTH = 320;

/** A day narrower than this (a long range) has no room for the white edge of its refund bar. */
const THIN_SLOT = 6;

/** `#/usage` with the days that are set. */
function usageHash(range: { from: string; to: string }): string {
  const search = new URLSearchParams();
  if (range.from) search.set('from', range.from);
  if (range.to) search.set('to', range.to);
  const text = search.toString();
  return `#/usage${text ? `?${text}` : ''}`;
}

/**
 * Offers `text` as a file download. The Blob starts with a byte order mark, without which Excel reads
 * UTF-8 (a key named "café") as another encoding.
 */
function downloadCsv(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob(['\uFEFF', text], { type: 'text/csv;charset=utf-8' }));
  const link = h('a', { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked a while later, not at once: the browser may still be reading it for the download.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A section's "Download CSV" button (the accessible name says which table). */
function csvButton(groupBy: UsageGroupBy, usage: Usage, what: string): HTMLButtonElement {
  return h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      'aria-label': `Download CSV of ${what}`,
      onclick: () => downloadCsv(csvFileName(groupBy, usage), usageCsv(groupBy, usage.rows)),
    },
    'Download CSV',
  );
}

/** "29 credits debited, 9 refunded, net 20; 8 tasks accepted: 5 completed, 2 failed, 1 pending". */
function totalsText(usage: Usage): string {
  const { debited, refunded, net, tasks } = usage.totals;
  return (
    `${credits(debited)} debited, ${refunded} refunded, net ${net}; ` +
    `${tasks.accepted} ${tasks.accepted === 1 ? 'task' : 'tasks'} accepted: ` +
    `${tasks.completed} completed, ${tasks.failed} failed, ${tasks.pending} pending`
  );
}

/** A day's tooltip and accessible text: "Nov 25: 29 credits debited, 9 refunded". */
function dayText(row: { group: string; debited: number; refunded: number }): string {
  return `${dayLabel(row.group)}: ${credits(row.debited)} debited, ${row.refunded} refunded`;
}

/**
 * The chart: an image to assistive technology, named by its `<title>` and summed up by its `<desc>`;
 * every figure is also in the table under it. Each day is a group carrying its figures, with a
 * tooltip, over a full-height target so that a day with small bars can still be pointed at.
 */
function chart(usage: Usage, width: number): SVGSVGElement {
  const geometry = chartGeometry(usage.rows, { width, height: CHART_HEIGHT });
  const { plot } = geometry;
  const titleId = uid('chart-title');
  const descId = uid('chart-desc');
  const busiest = usage.rows.reduce<UsageRow | undefined>(
    (best, row) => (row.debited > (best?.debited ?? 0) ? row : best),
    undefined,
  );
  return svg(
    'svg',
    {
      class: (geometry.bars[0]?.slot.width ?? 0) < THIN_SLOT ? 'chart thin' : 'chart',
      role: 'img',
      'aria-labelledby': titleId,
      'aria-describedby': descId,
      viewBox: `0 0 ${geometry.width} ${geometry.height}`,
      width: geometry.width,
      height: geometry.height,
    },
    svg('title', { id: titleId }, `Credits per day, ${dayLabel(usage.from)} to ${dayLabel(usage.to)} (UTC)`),
    svg(
      'desc',
      { id: descId },
      `Bars: credits debited each day; the narrower bars over them: credits refunded. ` +
        `In total ${credits(usage.totals.debited)} debited and ${usage.totals.refunded} refunded` +
        (busiest ? `; the most on ${dayText(busiest)}. ` : '. ') +
        'The table under the chart lists every day.',
    ),
    svg(
      'g',
      { class: 'grid' },
      ...geometry.yTicks.flatMap((tick) => [
        svg('line', { x1: plot.left, x2: plot.right, y1: tick.y, y2: tick.y }),
        svg('text', { x: plot.left - 6, y: tick.y, 'text-anchor': 'end', 'dominant-baseline': 'middle' }, tick.value),
      ]),
    ),
    svg(
      'g',
      { class: 'bars' },
      ...geometry.bars.map((bar) =>
        svg(
          'g',
          { class: 'day', 'data-day': bar.day, 'data-debited': bar.debited, 'data-refunded': bar.refunded },
          svg('title', {}, dayText({ group: bar.day, ...bar })),
          svg('rect', {
            class: 'hit',
            x: bar.slot.x,
            y: plot.top,
            width: bar.slot.width,
            height: plot.bottom - plot.top,
          }),
          bar.debitedBar.height > 0 && svg('rect', { class: 'debited', ...bar.debitedBar }),
          bar.refundedBar.height > 0 && svg('rect', { class: 'refunded', ...bar.refundedBar }),
        ),
      ),
    ),
    svg('line', { class: 'axis', x1: plot.left, x2: plot.right, y1: plot.bottom, y2: plot.bottom }),
    svg(
      'g',
      { class: 'x-labels' },
      ...geometry.xLabels.map((label) =>
        svg('text', { x: label.x, y: geometry.height - 6, 'text-anchor': label.anchor }, label.text),
      ),
    ),
  );
}

/** A table's rows: the group's cell(s), then the figures; `data-group` names the row. */
function tableRows(rows: readonly UsageRow[], groupCell: (row: UsageRow) => Node | string): TableRow[] {
  return rows.map((row) => ({
    attributes: { 'data-group': row.group },
    cells: [groupCell(row), ...figures(row)],
  }));
}

/** A key's cell: its name and id, "Dashboard (signed in)", or the id of a key that no longer exists. */
function keyCell(row: UsageRow): Node | string {
  if (row.group === SESSION_GROUP) return keyLabel(row);
  if (row.name === undefined) return h('span', {}, h('code', {}, row.group), ' (deleted key)');
  return h('span', {}, keyLabel(row), ' ', h('code', {}, row.group));
}

/** One grouping's section: heading, table (or why there is none) and its CSV button. */
function tableSection(
  title: string,
  groupBy: UsageGroupBy,
  usage: Usage,
  firstColumn: string,
  groupCell: (row: UsageRow) => Node | string,
): HTMLElement {
  const headingId = uid('usage');
  return h(
    'section',
    { class: 'usage-section', 'aria-labelledby': headingId, 'data-usage': groupBy },
    h(
      'div',
      { class: 'title-row' },
      h('h2', { id: headingId }, title),
      usage.rows.length > 0 && csvButton(groupBy, usage, `usage ${title.toLowerCase()}`),
    ),
    usage.rows.length === 0
      ? h('p', {}, 'No tasks in this range.')
      : h(
          'div',
          { class: 'table-wrap' },
          dataTable(`Usage ${title.toLowerCase()}`, [firstColumn, ...FIGURE_COLUMNS], tableRows(usage.rows, groupCell)),
        ),
  );
}

/**
 * The account-wide monthly spend limit: what it stands at, a field to set it and a button to remove it
 * (as the Credits page's low-balance alert). `load` reads the current limit into it.
 */
function accountLimitPanel(context: PageContext): { element: HTMLFormElement; load(): Promise<void> } {
  const titleId = uid('account-limit');
  const status = h('p', { 'data-testid': 'account-limit-status', role: 'status' }, 'Loading the limit…');
  const limitCredits = field(
    'Monthly limit (credits)',
    h('input', { name: 'accountLimitCredits', type: 'number', min: 0, step: 1, inputmode: 'numeric' }),
    'A submit that would pass it is refused (402) and nothing is debited; it counts spending from when the ' +
      'limit is set, and refunds give their credits back.',
  );
  const show = (limit: AccountLimit | null) => {
    limitCredits.control.value = limit === null ? '' : String(limit.credits);
    status.textContent = accountLimitText(limit);
  };
  const save = async (credits: number | null) => {
    limitCredits.setError(undefined);
    try {
      const stored = await setAccountLimit(credits);
      if (context.alive()) show(stored.spendLimit);
    } catch (error) {
      if (!context.alive()) return;
      const messages = error instanceof ApiError ? error.fieldErrors.spendLimit : undefined;
      limitCredits.setError(messages ? messages.join(' ') : (error as Error).message);
      limitCredits.control.focus();
    }
  };
  const element = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': titleId,
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        limitCredits.setError(undefined);
        const parsed = limitFromInput(limitCredits.control.value);
        if ('message' in parsed) {
          limitCredits.setError(parsed.message);
          limitCredits.control.focus();
          return;
        }
        void save(parsed.value);
      },
    },
    h('h2', { id: titleId }, 'Monthly spend limit for the whole account'),
    status,
    limitCredits.element,
    h('button', { type: 'submit' }, 'Save limit'),
    ' ',
    h('button', { type: 'button', class: 'secondary', onclick: () => void save(null) }, 'Remove limit'),
  );
  const load = async () => {
    try {
      const { spendLimit } = await getAccountLimit();
      if (context.alive()) show(spendLimit);
    } catch (error) {
      if (!context.alive() || (error instanceof ApiError && error.status === 401)) return;
      status.textContent = `Could not load the limit: ${(error as Error).message}`;
    }
  };
  return { element, load };
}

export async function renderUsage(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('Usage');
  const from = field('From', h('input', { type: 'date', name: 'from', value: context.params.get('from') ?? '' }));
  const to = field('To', h('input', { type: 'date', name: 'to', value: context.params.get('to') ?? '' }));
  const failure = h('p', { class: 'error', role: 'alert', hidden: true });
  const content = h('div', { class: 'usage' });
  let loads = 0;

  /** Reads the range's three groupings and shows them (a later load wins over an earlier one). */
  const load = async (): Promise<void> => {
    loads += 1;
    const mine = loads;
    const current = () => context.alive() && mine === loads;
    const asked = usageHash({ from: from.control.value, to: to.control.value });
    delete content.dataset.usageFor;
    from.setError(undefined);
    to.setError(undefined);
    failure.hidden = true;
    let days: Usage;
    let byKey: Usage;
    let byModel: Usage;
    try {
      // The days first: their answer fixes the range (the defaults are the service's "today"), which
      // the two others then ask for, so all three cover the same days even across midnight.
      days = await getUsage({
        from: from.control.value || undefined,
        to: to.control.value || undefined,
        groupBy: 'day',
      });
      const range = { from: days.from, to: days.to };
      [byKey, byModel] = await Promise.all([
        getUsage({ ...range, groupBy: 'key' }),
        getUsage({ ...range, groupBy: 'model' }),
      ]);
    } catch (error) {
      if (!current() || (error instanceof ApiError && error.status === 401)) return;
      if (error instanceof ApiError && error.status === 400) {
        from.setError(error.fieldErrors.from?.join(' '));
        to.setError(error.fieldErrors.to?.join(' '));
      }
      const fieldNamed = error instanceof ApiError && (error.fieldErrors.from || error.fieldErrors.to);
      if (!fieldNamed) {
        const formErrors = error instanceof ApiError ? error.formErrors : [];
        const reason = formErrors.length > 0 ? formErrors.join(' ') : (error as Error).message;
        failure.textContent = `Could not load the usage: ${reason}`;
        failure.hidden = false;
      }
      replace(content);
      content.dataset.usageFor = asked;
      return;
    }
    if (!current()) return;
    from.control.value = days.from;
    to.control.value = days.to;
    replace(content);
    // Drawn at the width it will have (measured once it is in the page), so its 12 px text stays 12 px.
    const chartWrap = h('div', { class: 'chart-wrap' });
    const daysHeading = uid('usage');
    content.append(
      h('p', { class: 'big usage-totals' }, totalsText(days)),
      h(
        'section',
        { class: 'usage-section', 'aria-labelledby': daysHeading, 'data-usage': 'day' },
        h(
          'div',
          { class: 'title-row' },
          h('h2', { id: daysHeading }, 'Credits per day'),
          csvButton('day', days, 'credits per day'),
        ),
        chartWrap,
        h(
          'ul',
          { class: 'legend' },
          h('li', {}, h('span', { class: 'swatch debited', 'aria-hidden': 'true' }), 'Debited'),
          h('li', {}, h('span', { class: 'swatch refunded', 'aria-hidden': 'true' }), 'Refunded'),
        ),
        h(
          'details',
          {},
          h('summary', {}, 'Credits per day as a table'),
          h(
            'div',
            { class: 'table-wrap' },
            dataTable(
              'Usage per day (UTC)',
              ['Day (UTC)', ...FIGURE_COLUMNS],
              tableRows(days.rows, (row) => row.group),
            ),
          ),
        ),
      ),
      tableSection('By key', 'key', byKey, 'Key', keyCell),
      tableSection('By model', 'model', byModel, 'Model', (row) => row.group),
    );
    chartWrap.append(chart(days, Math.max(MIN_CHART_WIDTH, Math.floor(chartWrap.clientWidth))));
    // Marks which range was asked for (the address's), so a reader (a person's assistive tool, a test)
    // can tell this answer from the one it replaces.
    content.dataset.usageFor = asked;
  };

  const form = h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Date range',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const next = usageHash({ from: from.control.value, to: to.control.value });
        // The same address fires no hashchange: read it again here (a "refresh").
        if (location.hash === next) void load();
        else location.hash = next;
      },
    },
    from.element,
    to.element,
    h('button', { type: 'submit' }, 'Show'),
  );
  const custom = context.params.has('from') || context.params.has('to');
  const limitPanel = accountLimitPanel(context);
  replace(
    main,
    h('h1', { tabindex: -1 }, 'Usage'),
    form,
    h(
      'p',
      { class: 'hint' },
      'Days are UTC days, both ends included, at most 366. Credits count on the day they moved (a refund on ' +
        'the day it was made); tasks on the day they were accepted, by their state now. ',
      custom && h('a', { href: '#/usage' }, 'Back to the last 30 days'),
    ),
    failure,
    content,
    limitPanel.element,
  );
  await Promise.all([load(), limitPanel.load()]);
}
