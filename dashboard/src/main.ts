/**
 * The dashboard: a hash router (`#/tasks`, `#/tasks/<id>`, `#/new`, `#/credits`, `#/usage`, `#/keys`, `#/account`), so
 * every page is `index.html` and no server needs rewrite rules, and the header with the balance, which
 * every page refreshes after anything that can change it.
 */
import { ApiError, type Session, session, signOut, whenSignedOut } from './api';
import { h, replace } from './dom';
import { credits } from './format';
import { renderAccount as renderAccountPage } from './pages/account';
import { renderCredits } from './pages/credits';
import { renderKeys } from './pages/keys';
import { renderNewTask } from './pages/new-task';
import type { PageContext } from './pages/page';
import { renderTask } from './pages/task';
import { renderTasks } from './pages/tasks';
import { renderUsage } from './pages/usage';
import { renderWebhook } from './pages/webhook';
import { renderWebhooks } from './pages/webhooks';

const main = document.getElementById('main') as HTMLElement;
const account = document.getElementById('account') as HTMLElement;
const nav = document.getElementById('nav') as HTMLElement;

let current: Session | undefined;
let renderCount = 0;

/** The header's balance and sign-out, or the sign-in link. */
function renderAccount(): void {
  if (!current) {
    nav.hidden = true;
    replace(account);
    return;
  }
  nav.hidden = false;
  replace(
    account,
    h('span', { class: 'email' }, current.email),
    h(
      'span',
      { id: 'balance', class: 'balance', role: 'status', 'aria-live': 'polite' },
      `Balance: ${credits(current.balance)}`,
    ),
    h('button', { type: 'button', class: 'secondary', onclick: () => void doSignOut() }, 'Sign out'),
  );
}

async function refreshBalance(): Promise<void> {
  try {
    current = await session();
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) throw error;
    current = undefined;
  }
  renderAccount();
}

async function doSignOut(): Promise<void> {
  try {
    await signOut();
  } finally {
    current = undefined;
    renderAccount();
    // Without a hashchange event, which would render the sign-in page again without the message.
    history.replaceState(null, '', '#/');
    renderSignedOut('You are signed out.');
  }
}

function renderSignedOut(message?: string): void {
  renderCount += 1;
  document.title = 'Sign in · Generation service';
  replace(
    main,
    h('h1', { tabindex: -1 }, 'Sign in'),
    message ? h('p', { class: 'notice', role: 'status' }, message) : null,
    h('p', {}, 'Manage your API keys, see your credits and run image and video tasks.'),
    h('p', {}, h('a', { class: 'button', href: '/api/auth/sign-in' }, 'Sign in')),
  );
}

/** Marks the nav link of the page shown as the current one. */
function markNav(section: string): void {
  for (const link of nav.querySelectorAll('a')) {
    if (link.dataset.section === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

/**
 * Renders the page of the address. `moveFocus` (navigation inside the dashboard) puts the focus on the
 * new page's heading, so keyboard and screen-reader users start there; a fresh load leaves it at the
 * top of the document, where the skip link is.
 */
async function route(moveFocus: boolean): Promise<void> {
  if (!current) await refreshBalance();
  if (!current) {
    renderSignedOut();
    return;
  }
  renderCount += 1;
  const mine = renderCount;
  const hash = location.hash.replace(/^#/, '') || '/tasks';
  const [path = '/tasks', search = ''] = hash.split('?');
  const params = new URLSearchParams(search);
  const context: PageContext = {
    alive: () => mine === renderCount,
    refreshBalance,
    params,
    setTitle(title) {
      document.title = `${title} · Generation service`;
    },
  };
  replace(main);
  const taskMatch = /^\/tasks\/([^/]+)$/.exec(path);
  const webhookMatch = /^\/webhooks\/([^/]+)$/.exec(path);
  let page: Promise<void>;
  if (taskMatch?.[1]) {
    markNav('tasks');
    page = renderTask(main, decodeURIComponent(taskMatch[1]), context);
  } else if (path === '/new') {
    markNav('new');
    page = renderNewTask(main, context);
  } else if (path === '/credits') {
    markNav('credits');
    page = renderCredits(main, context);
  } else if (path === '/usage') {
    markNav('usage');
    page = renderUsage(main, context);
  } else if (path === '/account') {
    markNav('account');
    page = renderAccountPage(main, context);
  } else if (path === '/keys') {
    markNav('keys');
    page = renderKeys(main, context);
  } else if (path === '/webhooks') {
    markNav('webhooks');
    page = renderWebhooks(main, context);
  } else if (webhookMatch?.[1]) {
    markNav('webhooks');
    page = renderWebhook(main, decodeURIComponent(webhookMatch[1]), context);
  } else {
    markNav('tasks');
    page = renderTasks(main, context);
  }
  try {
    await page;
  } catch (error) {
    if (!context.alive()) return;
    if (error instanceof ApiError && error.status === 401) return;
    main.append(h('p', { class: 'error', role: 'alert' }, `Could not load this page: ${(error as Error).message}`));
  }
  if (moveFocus && context.alive()) main.querySelector<HTMLElement>('h1')?.focus();
}

whenSignedOut(() => {
  // Already signed out (the user did, or an earlier 401 said so): a request the page started before
  // that and answered 401 after it must not replace what the page says ("You are signed out.").
  if (current === undefined) return;
  current = undefined;
  renderAccount();
  renderSignedOut('Your session has ended. Sign in again.');
});
window.addEventListener('hashchange', () => void route(true));
void route(false);
