/**
 * The account page (`#/account`): Export (every page of `GET /api/account/export`, saved as one JSON
 * file) and Close account, which asks the owner to type the confirmation the API requires.
 */
import { type AccountExportPage, ApiError, closeAccount, exportAccountPage } from '../api';
import { h, replace, statusLine } from '../dom';
import type { PageContext } from './page';

/** What the owner types; the API refuses anything else (functions/core/account-closure.ts). */
const CLOSE_CONFIRMATION = 'close my account';

/** Every page of the export, its sections concatenated (the API's pages stay under 4 MiB each). */
async function wholeExport(): Promise<AccountExportPage> {
  const first = await exportAccountPage();
  const whole = { ...first };
  for (let next = first.next; next; ) {
    const page = await exportAccountPage(next);
    for (const section of ['tasks', 'ledger', 'keys', 'webhooks', 'uploads', 'webhookEndpoints'] as const) {
      whole[section] = [...whole[section], ...page[section]];
    }
    next = page.next;
  }
  return { ...whole, next: null };
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const link = h('a', { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked a while later, not at once: the browser may still be reading it for the download.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export async function renderAccount(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('Account');
  const exportStatus = statusLine();
  const exportButton = h('button', { type: 'button' }, 'Export my data');
  exportButton.addEventListener('click', async () => {
    exportButton.disabled = true;
    exportStatus.textContent = 'Exporting…';
    try {
      const data = await wholeExport();
      download(`account-export-${data.exportedAt.slice(0, 10)}.json`, `${JSON.stringify(data, null, 2)}\n`);
      exportStatus.textContent = `Exported ${data.tasks.length} tasks and ${data.ledger.length} ledger entries.`;
    } catch (error) {
      exportStatus.textContent = `Not exported: ${error instanceof ApiError ? error.message : 'no answer'}`;
    } finally {
      exportButton.disabled = false;
    }
  });

  const closeStatus = statusLine();
  const confirmInput = h('input', { id: 'close-confirm', type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const closeButton = h('button', { type: 'button', class: 'danger', disabled: true }, 'Close account');
  confirmInput.addEventListener('input', () => {
    closeButton.disabled = confirmInput.value.trim() !== CLOSE_CONFIRMATION;
  });
  closeButton.addEventListener('click', async () => {
    closeButton.disabled = true;
    try {
      const closed = await closeAccount(confirmInput.value.trim());
      replace(
        main,
        h('h1', { tabindex: -1 }, 'Account closed'),
        h(
          'p',
          { class: 'notice', role: 'status' },
          `Your account is closed: ${closed.keysRevoked} keys revoked, ${closed.tasksCancelled} queued tasks cancelled and refunded, ${closed.tasksDeleted} tasks and ${closed.uploadsDeleted} uploads deleted.`,
        ),
        h('p', {}, 'Your ledger is kept for accounting. You can no longer sign in.'),
      );
      await context.refreshBalance();
    } catch (error) {
      closeButton.disabled = false;
      closeStatus.textContent = `Not closed: ${error instanceof ApiError ? error.message : 'no answer'}`;
    }
  });

  replace(
    main,
    h('h1', { tabindex: -1 }, 'Account'),
    h('h2', {}, 'Export'),
    h('p', {}, 'Download your tasks, ledger, keys (never the keys themselves), webhook settings and uploads as JSON.'),
    h('p', {}, exportButton),
    exportStatus,
    h('h2', {}, 'Close account'),
    h(
      'p',
      {},
      'Closing revokes every key and signs you out everywhere, cancels and refunds your queued tasks, and deletes your tasks, results and uploads. Your ledger is kept for accounting. You cannot sign in again.',
    ),
    h('p', {}, h('label', { for: 'close-confirm' }, `Type "${CLOSE_CONFIRMATION}" to confirm`), ' ', confirmInput),
    h('p', {}, closeButton),
    closeStatus,
  );
}
