/**
 * Credits: the balance and the ledger newest first (grants, debits, refunds), each debit and refund
 * linked to its task, one page at a time (the cursor rides in the address).
 */
import { getCredits } from '../api';
import { dataTable, h, replace, type TableRow } from '../dom';
import { credits, dateTime, signed } from '../format';
import type { PageContext } from './page';

const KIND_NAMES = { grant: 'Grant', debit: 'Debit', refund: 'Refund' } as const;

export async function renderCredits(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('Credits');
  const cursor = context.params.get('cursor') ?? undefined;
  const page = await getCredits(cursor);
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
  );
}
