/**
 * API keys: the list; create with a name, an allowlist and an expiry; the new key shown once with a
 * copy button; rotate with a grace period; revoke after a confirmation; a spend limit per key (what it
 * spent this period shown in the list). The API's 400 answers are shown next to the field they name.
 */
import {
  ApiError,
  createKey,
  type IssuedKey,
  type KeyListing,
  listKeys,
  revokeKey,
  rotateKey,
  type SpendLimit,
  type SpendPeriod,
  setKeyLimit,
} from '../api';
import { confirmDialog, secretPanel } from '../dialogs';
import { dataTable, field, h, replace, statusLine } from '../dom';
import { dateTime } from '../format';
import { keyFailureText } from '../key-messages';
import type { PageContext } from './page';

/** Grace periods offered on rotation (seconds; 0 ends the old key at once, right for a leaked key). */
const GRACE_CHOICES: [number, string][] = [
  [0, 'None: the old key stops now (for a leaked key)'],
  [3600, '1 hour'],
  [86_400, '1 day'],
  [7 * 86_400, '7 days'],
];

const PERIOD_WORDS: Record<SpendPeriod, string> = { day: 'today (UTC)', month: 'this month (UTC)', total: 'in total' };

/** A key's budget in the list: "12 of 100 credits today (UTC)", or "None". */
export function spendLimitText(limit: SpendLimit | null): string {
  if (!limit) return 'None';
  return `${limit.spent} of ${limit.credits} credits ${PERIOD_WORDS[limit.period]}`;
}

/** The panel that shows a new key once. */
function issuedPanel(issued: IssuedKey, onDone: () => void): HTMLElement {
  return secretPanel(
    issued.apiKey,
    {
      title: `New key “${issued.name}”`,
      label: 'API key',
      warning: 'Copy this key now. It will not be shown again: only its fingerprint is stored.',
      notes: issued.previous
        ? [
            h(
              'p',
              {},
              issued.previous.revokedAt
                ? 'The old key has stopped working.'
                : `The old key keeps working until ${dateTime(issued.previous.expiresAt)}.`,
            ),
          ]
        : [],
    },
    onDone,
  );
}

/** A confirmation dialog whose failures read as the key page words them. */
function dialog(title: string, body: Node[], confirmLabel: string, onConfirm: () => Promise<void>): HTMLDialogElement {
  return confirmDialog(title, body, confirmLabel, onConfirm, keyFailureText);
}

export async function renderKeys(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('API keys');
  const issuedSlot = h('div', {});
  const listSlot = h('div', { class: 'table-wrap' });
  const notice = statusLine();

  const showIssued = (issued: IssuedKey) => {
    const panel = issuedPanel(issued, () => {
      replace(issuedSlot);
      main.querySelector<HTMLElement>('h1')?.focus();
    });
    replace(issuedSlot, panel);
    panel.focus();
  };

  const refresh = async () => {
    const { keys } = await listKeys();
    if (!context.alive()) return;
    replace(listSlot, keys.length === 0 ? h('p', {}, 'No keys yet.') : keyTable(keys));
  };

  const keyTable = (keys: KeyListing[]) =>
    dataTable(
      'Your API keys',
      ['Name', 'Key', 'Status', 'Allowed addresses', 'Spend limit', 'Created', 'Expires', 'Last used', 'Actions'],
      keys.map((key) => ({
        attributes: { 'data-key-id': key.keyId },
        cells: [
          key.name,
          h('code', {}, `${key.prefix}…`),
          h('td', { class: `key-${key.status}` }, key.status, key.replacedBy ? ' (replaced)' : ''),
          key.allowedCidrs.length === 0 ? 'Any' : key.allowedCidrs.join(', '),
          h('td', { class: 'spend-limit' }, spendLimitText(key.spendLimit)),
          dateTime(key.createdAt),
          key.expiresAt ? dateTime(key.expiresAt) : 'Never',
          dateTime(key.lastUsedAt),
          h(
            'td',
            { class: 'actions' },
            key.status === 'active' &&
              !key.replacedBy &&
              h(
                'button',
                { type: 'button', class: 'secondary', onclick: () => rotate(key), 'aria-label': `Rotate ${key.name}` },
                'Rotate',
              ),
            key.status === 'active' &&
              !key.replacedBy &&
              h(
                'button',
                {
                  type: 'button',
                  class: 'secondary',
                  onclick: () => limit(key),
                  'aria-label': `Spend limit of ${key.name}`,
                },
                'Limit',
              ),
            key.status === 'active' &&
              h(
                'button',
                { type: 'button', class: 'danger', onclick: () => revoke(key), 'aria-label': `Revoke ${key.name}` },
                'Revoke',
              ),
          ),
        ],
      })),
    );

  const rotate = (key: KeyListing) => {
    const grace = field(
      'Old key keeps working for',
      h(
        'select',
        {},
        ...GRACE_CHOICES.map(([seconds, label]) => h('option', { value: seconds, selected: seconds === 3600 }, label)),
      ),
    );
    dialog(
      `Rotate “${key.name}”?`,
      [
        h('p', {}, 'A new key replaces this one. Programs using the old key must switch before it stops.'),
        grace.element,
      ],
      'Rotate',
      async () => {
        const issued = await rotateKey(key.keyId, Number(grace.control.value));
        notice.textContent = `Key “${key.name}” rotated.`;
        showIssued(issued);
        await refresh();
      },
    );
  };

  const limit = (key: KeyListing) => {
    const credits = field(
      'Credits (empty: no limit)',
      h('input', { type: 'number', min: 0, step: 1, inputmode: 'numeric', value: key.spendLimit?.credits ?? '' }),
    );
    const period = field(
      'Per',
      h(
        'select',
        {},
        ...(['day', 'month', 'total'] as const).map((value) =>
          h('option', { value, selected: value === (key.spendLimit?.period ?? 'day') }, PERIOD_WORDS[value]),
        ),
      ),
    );
    dialog(
      `Spend limit of “${key.name}”`,
      [
        h('p', {}, 'A submit that would take this key past its budget is refused (402); nothing is debited.'),
        credits.element,
        period.element,
      ],
      'Save',
      async () => {
        const text = credits.control.value.trim();
        const spendLimit = text === '' ? null : { credits: Number(text), period: period.control.value as SpendPeriod };
        await setKeyLimit(key.keyId, spendLimit);
        notice.textContent = spendLimit
          ? `Spend limit of “${key.name}” saved.`
          : `Spend limit of “${key.name}” removed.`;
        await refresh();
      },
    );
  };

  const revoke = (key: KeyListing) => {
    dialog(
      `Revoke “${key.name}”?`,
      [h('p', {}, 'Programs using this key are refused from the next request. This cannot be undone.')],
      'Revoke',
      async () => {
        await revokeKey(key.keyId);
        notice.textContent = `Key “${key.name}” revoked.`;
        await refresh();
      },
    );
  };

  const name = field('Name', h('input', { name: 'name', required: true, maxlength: 100, autocomplete: 'off' }));
  const allowlist = field(
    'Allowed addresses (optional)',
    h('textarea', { name: 'allowedCidrs', rows: 3, spellcheck: 'false' }),
    'One IPv4/IPv6 address or CIDR block per line, e.g. 203.0.113.0/24. Empty: any address.',
  );
  const expiry = field(
    'Expires (optional)',
    h('input', { name: 'expiresAt', type: 'datetime-local' }),
    'Your local time. Empty: the key does not expire.',
  );
  const budget = field(
    'Spend limit in credits (optional)',
    h('input', { name: 'spendLimitCredits', type: 'number', min: 0, step: 1, inputmode: 'numeric' }),
    'Empty: no limit. A submit past it is refused (402); change it later with Limit.',
  );
  const budgetPeriod = field(
    'Spend limit per',
    h(
      'select',
      { name: 'spendLimitPeriod' },
      ...(['day', 'month', 'total'] as const).map((value) => h('option', { value }, PERIOD_WORDS[value])),
    ),
  );
  const formError = h('p', { class: 'field-error', role: 'alert', hidden: true });
  const form = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'create-key-title',
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        void create();
      },
    },
    h('h2', { id: 'create-key-title' }, 'Create a key'),
    name.element,
    allowlist.element,
    expiry.element,
    budget.element,
    budgetPeriod.element,
    formError,
    h('button', { type: 'submit' }, 'Create key'),
  );

  const formErrorAppend = (text: string) => {
    formError.textContent = `${formError.textContent ?? ''} ${text}`.trim();
    formError.hidden = false;
  };

  const create = async () => {
    for (const one of [name, allowlist, expiry, budget]) one.setError(undefined);
    formError.textContent = '';
    formError.hidden = true;
    const lines = allowlist.control.value
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');
    const body: Parameters<typeof createKey>[0] = { name: name.control.value.trim() };
    const credits = budget.control.value.trim();
    if (credits !== '') {
      body.spendLimit = { credits: Number(credits), period: budgetPeriod.control.value as SpendPeriod };
    }
    if (lines.length > 0) body.allowedCidrs = lines;
    if (expiry.control.value) {
      const when = new Date(expiry.control.value);
      if (Number.isNaN(when.getTime())) {
        expiry.setError('Enter a date and time.');
        return;
      }
      body.expiresAt = when.toISOString();
    }
    try {
      const issued = await createKey(body);
      form.reset();
      notice.textContent = `Key “${issued.name}” created.`;
      showIssued(issued);
      await refresh();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 400) {
        formError.textContent = keyFailureText(error);
        formError.hidden = false;
        return;
      }
      const allowlistMessages: string[] = [];
      for (const [path, messages] of Object.entries(error.fieldErrors)) {
        const text = messages.join(' ');
        const cidr = /^allowedCidrs\.(\d+)$/.exec(path);
        // The API's messages name the field and the value ("Expiry ... is not in the future").
        if (path === 'name') name.setError(text);
        else if (path === 'expiresAt') expiry.setError(text);
        else if (path === 'spendLimit') budget.setError(text);
        else if (cidr) allowlistMessages.push(`Line ${Number(cidr[1]) + 1}: ${text}`);
        else if (path === 'allowedCidrs') allowlistMessages.push(text);
        else formErrorAppend(`${path}: ${text}`);
      }
      if (allowlistMessages.length > 0) allowlist.setError(allowlistMessages.join(' '));
      if (error.formErrors.length > 0) formErrorAppend(error.formErrors.join(' '));
      form.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
    }
  };

  replace(main, h('h1', { tabindex: -1 }, 'API keys'), notice, issuedSlot, listSlot, form);
  await refresh();
}
