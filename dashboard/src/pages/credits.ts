/**
 * Credits: the balance and the ledger newest first (grants, debits, refunds), each debit and refund
 * linked to its task, one page at a time (the cursor rides in the address); and the low-balance alert
 * (`credits.low` to the account's webhook endpoint below a threshold, PUT /api/account/alerts).
 */
import { alertStatusText, thresholdFromInput } from '../alert-settings';
import { type AccountAlerts, ApiError, getAccountAlerts, getCredits, setAccountAlerts } from '../api';
import { dataTable, field, h, replace, type TableRow } from '../dom';
import { credits, dateTime, signed } from '../format';
import type { PageContext } from './page';

const KIND_NAMES = { grant: 'Grant', debit: 'Debit', refund: 'Refund' } as const;

export async function renderCredits(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('Credits');
  const cursor = context.params.get('cursor') ?? undefined;
  const [page, alerts] = await Promise.all([getCredits(cursor), getAccountAlerts()]);
  if (!context.alive()) return;
  const rows: TableRow[] = page.entries.map((entry) => ({
    attributes: { 'data-kind': entry.kind },
    cells: [
      dateTime(entry.at),
      KIND_NAMES[entry.kind],
      h('td', { class: `amount ${entry.delta < 0 ? 'negative' : 'positive'}` }, signed(entry.delta)),
      entry.taskId
        ? h('a', { href: `#/tasks/${encodeURIComponent(entry.taskId)}` }, `Task ${entry.taskId}`)
        : `Grant ${entry.grantId ?? ''}`,
    ],
  }));
  replace(
    main,
    h('h1', { tabindex: -1 }, 'Credits'),
    h('p', { class: 'big' }, 'Balance: ', h('strong', { 'data-testid': 'ledger-balance' }, credits(page.balance))),
    h('p', { class: 'hint' }, 'Credits are taken when a task is accepted and given back if it fails.'),
    page.entries.length === 0
      ? h('p', {}, 'No entries.')
      : h('div', { class: 'table-wrap' }, dataTable('Ledger, newest first', ['When', 'Kind', 'Credits', 'For'], rows)),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      cursor && h('a', { href: '#/credits' }, 'Newest'),
      page.next && h('a', { href: `#/credits?cursor=${encodeURIComponent(page.next)}`, rel: 'next' }, 'Older'),
    ),
    alertForm(alerts),
  );
}

/** The low-balance alert: set a threshold, or remove it (an empty field). */
function alertForm(initial: AccountAlerts): HTMLFormElement {
  const status = h('p', { 'data-testid': 'alert-status', role: 'status' }, alertStatusText(initial));
  const threshold = field(
    'Alert below (credits)',
    h('input', {
      name: 'lowBalanceThreshold',
      type: 'number',
      min: 0,
      step: 1,
      inputmode: 'numeric',
      value: initial.lowBalanceThreshold ?? '',
    }),
    "Sent once each time the balance falls below it, as a signed webhook (credits.low) to your account's webhook endpoint. Empty: no alert.",
  );
  const save = async (text: string) => {
    threshold.setError(undefined);
    const parsed = thresholdFromInput(text);
    if ('message' in parsed) {
      threshold.setError(parsed.message);
      threshold.control.focus();
      return;
    }
    try {
      const stored = await setAccountAlerts(parsed.value);
      threshold.control.value = stored.lowBalanceThreshold === null ? '' : String(stored.lowBalanceThreshold);
      status.textContent = alertStatusText(stored);
    } catch (error) {
      const messages = error instanceof ApiError ? error.fieldErrors.lowBalanceThreshold : undefined;
      threshold.setError(messages ? messages.join(' ') : (error as Error).message);
      threshold.control.focus();
    }
  };
  return h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'alert-title',
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        void save(threshold.control.value);
      },
    },
    h('h2', { id: 'alert-title' }, 'Low-balance alert'),
    status,
    threshold.element,
    h('button', { type: 'submit' }, 'Save alert'),
    ' ',
    h('button', { type: 'button', class: 'secondary', onclick: () => void save('') }, 'Remove alert'),
  );
}
