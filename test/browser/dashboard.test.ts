/**
 * The dashboard in a real browser (Debian's Chromium driven by playwright-core) on the local stack:
 * sign in through the local OpenID provider, create a key and read it once, use it from a plain HTTP
 * client, follow tasks to their end in the list and on their page, run a video task from the form,
 * cancel a queued task from the list, rotate and revoke keys and see the API refuse them, read the
 * ledger's debit and refund, read the Usage page and download its CSVs, set and remove the low-balance alert and the account's monthly
 * spend limit, sign out and be refused. One browser page walks through the steps in order, as a person would; each test waits
 * for states (never for a fixed time) and writes a screenshot to test-results/dashboard/.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { tinyPng } from '../support/png';
import { loadBrowserContext } from './support/context';
import { withDispatcherHeld } from './support/dispatcher-hold';

const context = loadBrowserContext();
const base = context.baseUrl;
/** Playwright's wait for any one state (a task's end included): generous, for a loaded machine. */
const WAIT_MS = 120_000;
/** Jest's limit for a step: one wait spent whole, with room for the rest of the step. */
const STEP_TIMEOUT_MS = 2 * WAIT_MS;

let browser: Browser;
let session: BrowserContext;
let page: Page;
/** Console errors of the pages (a CSP violation is one), checked by the last test. */
const consoleErrors: string[] = [];

/** The key created in the key test, used from "outside" by the later tests. */
let apiKey = '';
let keyId = '';
/** A task submitted with that key. */
let keyTaskId = '';
/** The Usage step's key, still active after the first key's rotation and revocation. */
let usageKey = '';

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(context.screenshotDir, `${name}.png`), fullPage: true });
}

/** A plain HTTP call with an API key, as a program would make it. */
function withKey(key: string, path: string, init: { method?: string; json?: unknown } = {}): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      Authorization: `Bearer ${key}`,
      ...(init.json === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
}

/** The task id of the task page shown (`#/tasks/<id>`). */
async function taskIdOfPage(): Promise<string> {
  await page.waitForURL(/#\/tasks\/[^/?]+$/, { timeout: WAIT_MS });
  return decodeURIComponent(new URL(page.url()).hash.replace('#/tasks/', ''));
}

/**
 * Waits for the key list to show the row of `key` (the row whose shown prefix begins it) and returns
 * that row's key id. The list is read again after the key is shown, so its row comes later.
 */
async function keyRowIdOf(key: string): Promise<string> {
  const found = await page.waitForFunction((secret) => {
    for (const row of document.querySelectorAll<HTMLElement>('tr[data-key-id]')) {
      const prefix = row.querySelector('code')?.textContent?.replace('…', '') ?? '';
      if (prefix && secret.startsWith(prefix)) return row.dataset.keyId ?? '';
    }
    return '';
  }, key);
  return found.jsonValue();
}

/** The text of the error shown next to the control labelled `label`. */
async function fieldError(label: string): Promise<string> {
  const control = page.getByLabel(label, { exact: true });
  const describedBy = (await control.getAttribute('aria-describedby')) ?? '';
  const errorId = describedBy.split(' ').find((id) => id.endsWith('-error'));
  if (!errorId) throw new Error(`no error slot for ${label}`);
  const error = page.locator(`[id="${errorId}"]`);
  await error.waitFor({ state: 'visible' });
  return (await error.textContent()) ?? '';
}

/** Debited and refunded credits per UTC day, as the ledger has them (grants left out). */
function creditsPerDay(
  entries: readonly { kind: string; delta: number; at: string }[],
): Map<string, { debited: number; refunded: number }> {
  const days = new Map<string, { debited: number; refunded: number }>();
  for (const entry of entries) {
    if (entry.kind === 'grant') continue;
    const day = new Date(entry.at).toISOString().slice(0, 10);
    const figures = days.get(day) ?? { debited: 0, refunded: 0 };
    if (entry.kind === 'debit') figures.debited -= entry.delta;
    else figures.refunded += entry.delta;
    days.set(day, figures);
  }
  return days;
}

/** Clicks `button` and returns the file the page offers for download: its name and its text. */
async function downloaded(button: Locator): Promise<{ name: string; text: string }> {
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
  return { name: download.suggestedFilename(), text: await readFile(await download.path(), 'utf8') };
}

beforeAll(async () => {
  // Running as root (CI containers) needs --no-sandbox; the pages are our own.
  // Playwright's own launch limit is 30 s, which a loaded machine's Chromium start can pass.
  browser = await chromium.launch({ executablePath: context.chromium, args: ['--no-sandbox'], timeout: WAIT_MS });
  session = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await session.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page = await session.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('console', (message) => {
    // Only the dashboard's own pages (the identity provider's login page is not ours).
    if (!page.url().startsWith(`${base}/`)) return;
    if (message.type() === 'error') consoleErrors.push(`${message.text()} at ${message.location().url}`);
  });
  page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`));
}, STEP_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
});

test(
  'the page is served with a strict Content-Security-Policy and security headers',
  async () => {
    // Act
    const response = await page.goto(`${base}/`);

    // Assert
    const headers = response?.headers() ?? {};
    const csp = headers['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['referrer-policy']).toBe('no-referrer');
  },
  STEP_TIMEOUT_MS,
);

test(
  'signing in goes through the OpenID provider and lands on the dashboard with the balance in the header',
  async () => {
    // Prepare
    await page.goto(`${base}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await screenshot('sign-in');

    // Act
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('E-mail').fill(context.account.email);
    await page.getByLabel('Password').fill(context.account.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/**`);
    const balance = page.locator('#balance');
    await balance.waitFor();

    // Assert
    expect(await balance.textContent()).toBe(`Balance: ${context.account.credits} credits`);
    expect(await page.locator('.account .email').textContent()).toBe(context.account.email);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Tasks');
  },
  STEP_TIMEOUT_MS,
);

test(
  'a key request with a bad allowlist entry and a past expiry is explained next to each field',
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'Create a key' }).waitFor();

    // Act
    await page.getByLabel('Name', { exact: true }).fill('laptop');
    await page.getByLabel('Allowed addresses (optional)').fill('127.0.0.1\nnot-an-address');
    await page.getByLabel('Expires (optional)').fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Create key' }).click();
    const allowlistError = await fieldError('Allowed addresses (optional)');
    const expiryError = await fieldError('Expires (optional)');
    // The key list as loaded (the count below means something only once it is there).
    await page.getByText('No keys yet.').waitFor();
    await screenshot('keys-errors');

    // Assert
    expect(allowlistError).toContain('Line 2');
    expect(allowlistError).toContain('"not-an-address" is not an IPv4/IPv6 address or CIDR block');
    expect(expiryError).toMatch(/^Expiry 2020-01-01T.* is not in the future$/);
    expect(await page.getByLabel('Allowed addresses (optional)').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('tr[data-key-id]').count()).toBe(0);
  },
  STEP_TIMEOUT_MS,
);

test(
  'creating a key shows it once, with a warning and a working copy button; the list never shows it again',
  async () => {
    // Prepare
    const tomorrow = new Date(Date.now() + 86_400_000);
    const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    // The test's own requests come from this machine: the allowlist holds its addresses.
    await page.getByLabel('Allowed addresses (optional)').fill('127.0.0.1\n::1');
    await page.getByLabel('Expires (optional)').fill(local);

    // Act
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByLabel('API key', { exact: true });
    await shown.waitFor();
    apiKey = await shown.inputValue();
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    const clipboard = await page.evaluate(() => navigator.clipboard.readText());
    const warning = await page.locator('.issued .warning').textContent();
    keyId = await keyRowIdOf(apiKey);
    await screenshot('keys-new');
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.reload();
    // The list of the reloaded page (a new document: no row of the old one is left).
    await page.locator(`tr[data-key-id="${keyId}"]`).waitFor();
    const afterReload = await page.content();

    // Assert
    expect(apiKey).toMatch(/^gsk_live_[A-Za-z0-9_-]{43}$/);
    expect(clipboard).toBe(apiKey);
    expect(warning).toContain('will not be shown again');
    expect(keyId).not.toBe('');
    expect(await page.locator(`tr[data-key-id="${keyId}"]`).textContent()).toContain('127.0.0.1/32, ::1/128');
    expect(afterReload).not.toContain(apiKey);
  },
  STEP_TIMEOUT_MS,
);

test(
  'a task submitted with that key from a plain HTTP client appears in the list and completes with its image visible',
  async () => {
    // Prepare
    const submitted = await withKey(apiKey, '/api/ai/image/generate', {
      method: 'POST',
      json: { model: 'image-model-1', prompt: 'a lighthouse at dusk, from the browser test' },
    });
    expect(submitted.status).toBe(202);
    keyTaskId = ((await submitted.json()) as { taskId: string }).taskId;

    // Act
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    const thumbnail = page.locator(`tr[data-task-id="${keyTaskId}"][data-status="1"] img.thumb`);
    await thumbnail.waitFor({ state: 'visible', timeout: WAIT_MS });
    await page.waitForFunction(
      (id) => {
        const image = document.querySelector<HTMLImageElement>(`tr[data-task-id="${id}"] img.thumb`);
        return Boolean(image?.complete) && (image?.naturalWidth ?? 0) > 0;
      },
      keyTaskId,
      { timeout: WAIT_MS },
    );
    await screenshot('tasks');
    await page.locator(`tr[data-task-id="${keyTaskId}"] a`).first().click();
    const result = page.getByRole('img', { name: 'Result image 1 of 1' });
    await result.waitFor();
    await page.waitForFunction(() => {
      const image = document.querySelector<HTMLImageElement>('.results img');
      return Boolean(image?.complete) && (image?.naturalWidth ?? 0) > 0;
    });
    await screenshot('task-image');

    // Assert
    expect(await page.locator('.state').textContent()).toBe('Completed');
    expect(await page.locator('.prompt').textContent()).toBe('a lighthouse at dusk, from the browser test');
    expect(await page.locator('.details').textContent()).toContain('image-model-1');
    expect(await page.getByRole('link', { name: 'Download image 1' }).getAttribute('href')).toBe(
      await result.getAttribute('src'),
    );
  },
  STEP_TIMEOUT_MS,
);

test(
  'a task request the API refuses is explained next to the field it names, and nothing is debited',
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'New task' }).first().click();
    await page.getByLabel('Image', { exact: true }).check();
    await page.getByLabel('Model').selectOption('image-model-1');
    await page.getByLabel('Prompt').fill('');
    const before = await page.locator('#balance').textContent();

    // Act
    await page.getByRole('button', { name: 'Submit' }).click();
    const promptError = await fieldError('Prompt');
    await page.locator('summary', { hasText: 'Advanced' }).click();
    await page.getByLabel('Provider options (JSON object, optional)').fill('[1, 2');
    await page.getByLabel('Prompt').fill('a valid prompt');
    await page.getByRole('button', { name: 'Submit' }).click();
    const optionsError = await fieldError('Provider options (JSON object, optional)');
    await screenshot('new-task-errors');
    // Leave the form as the next step expects to find it (it stays on this page).
    await page.getByLabel('Provider options (JSON object, optional)').fill('');

    // Assert
    expect(promptError).toMatch(/^prompt: /);
    expect(optionsError).toContain('Enter a JSON object');
    expect(page.url()).toMatch(/#\/new$/);
    expect(await page.locator('#balance').textContent()).toBe(before);
  },
  STEP_TIMEOUT_MS,
);

test(
  'a video task from the form shows its price, is submitted with the session, and plays when complete',
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'New task' }).first().click();
    await page.getByLabel('Video', { exact: true }).check();
    await page.getByLabel('Model').selectOption('video-b-2-text-to-video');
    await page.getByLabel('Resolution').selectOption('480p');
    await page.getByLabel('Duration').selectOption('10');
    const priceAt10 = await page.locator('.price').textContent();
    await page.getByLabel('Duration').selectOption('5');
    await page.getByLabel('Prompt').fill('waves at night, from the form');
    const price = await page.locator('.price').textContent();
    await screenshot('new-task');

    // Act
    await page.getByRole('button', { name: 'Submit' }).click();
    const taskId = await taskIdOfPage();
    await page.locator('.state[data-status="1"]').waitFor({ timeout: WAIT_MS });
    const video = page.locator('.results video');
    await video.waitFor();
    await page.waitForFunction(() => {
      const element = document.querySelector<HTMLVideoElement>('.results video');
      return element !== null && element.readyState >= HTMLMediaElement.HAVE_METADATA;
    });
    const media = await video.evaluate((element: HTMLVideoElement) => ({
      error: element.error?.code ?? null,
      duration: element.duration,
      controls: element.controls,
    }));
    await screenshot('task-video');
    const stored = await withKey(apiKey, `/api/ai/tasks/${taskId}`);
    const expectedBalance = `Balance: ${context.account.credits - 3 - 10} credits`;
    await page.waitForFunction((text) => document.querySelector('#balance')?.textContent === text, expectedBalance);

    // Assert
    expect(priceAt10).toBe('Price: 20 credits');
    expect(price).toBe('Price: 10 credits');
    expect(media.error).toBeNull();
    expect(media.duration).toBeGreaterThan(0);
    expect(media.controls).toBe(true);
    expect(await page.getByRole('link', { name: 'Download video' }).isVisible()).toBe(true);
    expect(stored.status).toBe(200);
    expect(await stored.json()).toMatchObject({ type: 'video', status: 1, creditsUsed: 10 });
    expect(await page.locator('#balance').textContent()).toBe(expectedBalance);
  },
  STEP_TIMEOUT_MS,
);

test(
  'the ledger shows the debit of a task and, for a task the provider fails, the debit and its refund',
  async () => {
    // Prepare: a failing image task from the form (the mock provider's failure control).
    await page.getByRole('link', { name: 'New task' }).first().click();
    await page.getByLabel('Image', { exact: true }).check();
    await page.getByLabel('Model').selectOption('image-model-1');
    await page.getByLabel('Prompt').fill('this one fails');
    await page.locator('summary', { hasText: 'Advanced' }).click();
    await page
      .getByLabel('Provider options (JSON object, optional)')
      .fill('{"mockOutcome":"fail","mockFailMsg":"out of paint"}');
    await page.getByRole('button', { name: 'Submit' }).click();
    const failedId = await taskIdOfPage();
    await page.locator('.state[data-status="2"]').waitFor({ timeout: WAIT_MS });
    const errorText = await page.locator('.error-text').textContent();
    await screenshot('task-failed');

    // Act
    await page.getByRole('link', { name: 'Credits' }).click();
    const rowFor = (kind: string, taskId: string) =>
      page.locator(`tr[data-kind="${kind}"]`, { has: page.locator(`a[href="#/tasks/${taskId}"]`) });
    // The ledger row asserted last in time (the refund of the failed task), not any row.
    await rowFor('refund', failedId).waitFor();
    await screenshot('credits');

    // Assert
    expect(errorText).toBe(
      'PROVIDER_ERROR: The provider could not generate the result: out of paint (provider code MOCK_FAILURE)',
    );
    expect(await rowFor('debit', keyTaskId).locator('.amount').textContent()).toBe('-3');
    expect(await rowFor('debit', failedId).locator('.amount').textContent()).toBe('-3');
    expect(await rowFor('refund', failedId).locator('.amount').textContent()).toBe('+3');
    expect(await page.locator('tr[data-kind="grant"] .amount').textContent()).toBe(`+${context.account.credits}`);
    expect(await page.getByTestId('ledger-balance').textContent()).toBe(`${context.account.credits - 13} credits`);
    // The refund's link leads to the failed task: its page, then its state on that page.
    await rowFor('refund', failedId).getByRole('link').click();
    expect(await taskIdOfPage()).toBe(failedId);
    await page.locator('.state[data-status="2"]').waitFor();
    expect(await page.locator('.error-text').textContent()).toBe(errorText);
  },
  STEP_TIMEOUT_MS,
);

test(
  'the task list filters by status and by type',
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    const allRows = page.locator('[data-list-for="#/tasks"] tr[data-task-id]');
    await allRows.first().waitFor();
    const all = await allRows.count();

    // Act
    await page.getByLabel('Status').selectOption({ label: 'Failed' });
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/status=2/);
    // The rows of the list that answered this filter, not the unfiltered one still on screen.
    const failedRows = page.locator('[data-list-for="#/tasks?status=2"] tr[data-task-id]');
    await failedRows.first().waitFor();
    const failedStates = await failedRows.evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.status));
    await page.getByLabel('Status').selectOption({ label: 'Any' });
    await page.getByLabel('Type').selectOption({ label: 'Video' });
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/type=video/);
    const videoRows = page.locator('[data-list-for="#/tasks?type=video"] tr[data-task-id]');
    await videoRows.first().waitFor();
    const videoModels = await videoRows.locator('td[data-label="Model"]').allTextContents();

    // Assert
    expect(all).toBe(3);
    expect(failedStates).toEqual(['2']);
    expect(videoModels).toEqual(['video-b-2-text-to-video']);
  },
  STEP_TIMEOUT_MS,
);

test(
  'queued tasks say so with the tasks ahead of them; Cancel in the list and on the task page cancels and refunds each',
  async () => {
    await withDispatcherHeld(context, async () => {
      // Prepare: two tasks submitted with the key while no dispatcher may send
      const submit = async (prompt: string) => {
        const answer = await withKey(apiKey, '/api/ai/image/generate', {
          method: 'POST',
          json: { model: 'image-model-1', prompt },
        });
        return { status: answer.status, taskId: ((await answer.json()) as { taskId: string }).taskId };
      };
      const first = await submit('a task to cancel from the list');
      const second = await submit('a task to cancel from its page');
      const debited = (await (await withKey(apiKey, '/api/ai/credits')).json()) as { balance: number };
      await page.getByRole('link', { name: 'Tasks', exact: true }).click();
      await page.waitForFunction(
        ([a, b]) =>
          document.querySelector(`[data-list-for="#/tasks"] tr[data-task-id="${a}"] td.state`)?.textContent ===
            'Queued (0 ahead)' &&
          document.querySelector(`[data-list-for="#/tasks"] tr[data-task-id="${b}"] td.state`)?.textContent ===
            'Queued (1 ahead)',
        [first.taskId, second.taskId],
      );
      await screenshot('task-queued');
      const row = page.locator(`[data-list-for="#/tasks"] tr[data-task-id="${first.taskId}"]`);

      // Act: the first from the list, the second from its own page
      await row.getByRole('button', { name: /^Cancel the task of / }).click();
      await page.locator(`tr[data-task-id="${first.taskId}"][data-status="2"]`).waitFor();
      await screenshot('task-cancelled');
      const listNotice = await page.getByRole('status').filter({ hasText: 'was cancelled' }).count();
      const firstState = await row.locator('td.state').textContent();
      const firstCost = await row.locator('td[data-label="Cost"]').textContent();
      const firstButtons = await row.getByRole('button', { name: /^Cancel/ }).count();
      await page.goto(`${base}/#/tasks/${second.taskId}`);
      // The first left the queue: nothing is ahead of the second any more.
      await page.locator('.state[data-stage="queued"]', { hasText: 'Queued (0 ahead)' }).waitFor();
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      await page.locator('.state[data-status="2"]').waitFor();
      await page.getByText('The task was cancelled; its credits were refunded.').waitFor();
      await page.waitForFunction(
        (text) => document.querySelector('#balance')?.textContent === text,
        `Balance: ${context.account.credits - 13} credits`,
      );
      const secondError = await page.locator('.error-text').textContent();
      const stored = await Promise.all(
        [first.taskId, second.taskId].map(async (id) => (await withKey(apiKey, `/api/ai/tasks/${id}`)).json()),
      );
      const refunded = (await (await withKey(apiKey, '/api/ai/credits')).json()) as { balance: number };

      // Assert
      expect([first.status, second.status]).toEqual([202, 202]);
      expect(debited.balance).toBe(context.account.credits - 19);
      expect(firstState).toBe('Failed (CANCELLED)');
      expect(firstCost).toBe('3 credits (refunded)');
      expect(firstButtons).toBe(0);
      expect(listNotice).toBe(1);
      expect(secondError).toBe('CANCELLED: The task was cancelled before it started');
      expect(await page.getByRole('button', { name: 'Cancel', exact: true }).count()).toBe(0);
      for (const [index, id] of [first.taskId, second.taskId].entries()) {
        expect(stored[index]).toMatchObject({ taskId: id, status: 2, errorCode: 'CANCELLED', creditsRefunded: true });
      }
      expect(refunded.balance).toBe(context.account.credits - 13);
    });
  },
  STEP_TIMEOUT_MS,
);

test(
  "a key's spend limit set from the key list: the API refuses the submit past it (402), the list shows what it spent",
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'API keys' }).click();
    const row = page.locator(`tr[data-key-id="${keyId}"]`);
    await row.waitFor();

    // Act: a budget of one image (3 credits) a day, set in the Limit dialog.
    await row.getByRole('button', { name: /^Spend limit/ }).click();
    const limitDialog = page.getByRole('dialog');
    await limitDialog.getByLabel('Credits (empty: no limit)').fill('3');
    await limitDialog.getByLabel('Per').selectOption('day');
    await limitDialog.getByRole('button', { name: 'Save' }).click();
    await row.locator('.spend-limit', { hasText: '0 of 3 credits today (UTC)' }).waitFor();
    const submit = () =>
      withKey(apiKey, '/api/ai/image/generate', {
        method: 'POST',
        json: { model: 'image-model-1', prompt: 'a lighthouse within budget' },
      });
    const within = await submit();
    const past = await submit();
    await page.reload();
    await row.locator('.spend-limit', { hasText: '3 of 3 credits today (UTC)' }).waitFor();
    await screenshot('keys-spend-limit');

    // Assert
    expect(within.status).toBe(202);
    expect(past.status).toBe(402);
    expect(await past.json()).toMatchObject({ error: 'Spend limit reached', limit: 3, period: 'day', spent: 3 });
  },
  STEP_TIMEOUT_MS,
);

test(
  'the low-balance alert set and removed on the Credits page: the API stores what the form says',
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'Credits' }).click();
    const status = page.getByTestId('alert-status');
    await status.waitFor();
    const before = await status.textContent();
    const threshold = page.getByLabel('Alert below (credits)');
    const stored = () =>
      page.evaluate(async () => (await (await fetch('/api/account/alerts')).json()) as Record<string, unknown>);

    // Act
    await threshold.fill('5000');
    await page.getByRole('button', { name: 'Save alert' }).click();
    await page.getByText('Your webhook endpoint gets credits.low when the balance falls below 5000 credits.').waitFor();
    const set = await stored();
    await screenshot('credits-alert');
    await page.getByRole('button', { name: 'Remove alert' }).click();
    await status.filter({ hasText: 'No low-balance alert is set.' }).waitFor();
    const removed = await stored();

    // Assert
    expect(before).toBe('No low-balance alert is set.');
    expect(set).toEqual({ lowBalanceThreshold: 5000, lowBalanceSent: false });
    expect(removed).toEqual({ lowBalanceThreshold: null, lowBalanceSent: false });
    expect(await threshold.inputValue()).toBe('');
  },
  STEP_TIMEOUT_MS,
);

test(
  'rotating a key without grace and revoking its replacement: the API refuses each from then on',
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.locator(`tr[data-key-id="${keyId}"]`).waitFor();
    const beforeRotation = await withKey(apiKey, `/api/ai/tasks/${keyTaskId}`);

    // Act: rotate with no grace.
    await page
      .locator(`tr[data-key-id="${keyId}"]`)
      .getByRole('button', { name: /^Rotate/ })
      .click();
    const rotateDialog = page.getByRole('dialog');
    await rotateDialog.getByLabel('Old key keeps working for').selectOption('0');
    await screenshot('keys-rotate');
    await rotateDialog.getByRole('button', { name: 'Rotate' }).click();
    const shown = page.getByLabel('API key', { exact: true });
    await shown.waitFor();
    const replacement = await shown.inputValue();
    const oldAfterRotation = await withKey(apiKey, `/api/ai/tasks/${keyTaskId}`);
    const newAfterRotation = await withKey(replacement, `/api/ai/tasks/${keyTaskId}`);
    await page.getByRole('button', { name: 'I have saved it' }).click();

    // Act: revoke the replacement, confirming in the dialog. Its row comes with the list read after
    // the rotation, which may still be on its way.
    const replacementId = await keyRowIdOf(replacement);
    const row = page.locator(`tr[data-key-id="${replacementId}"]`);
    await row.getByRole('button', { name: /^Revoke/ }).click();
    const revokeDialog = page.getByRole('dialog');
    await revokeDialog.getByText('cannot be undone').waitFor();
    await revokeDialog.getByRole('button', { name: 'Revoke' }).click();
    await row.locator('.key-revoked').waitFor();
    const newAfterRevocation = await withKey(replacement, `/api/ai/tasks/${keyTaskId}`);
    await screenshot('keys');

    // Assert
    expect(replacementId).not.toBe(keyId);
    expect(replacementId).not.toBe('');
    expect(beforeRotation.status).toBe(200);
    expect(oldAfterRotation.status).toBe(401);
    expect(newAfterRotation.status).toBe(200);
    expect(newAfterRevocation.status).toBe(401);
    expect(await row.locator('.key-revoked').textContent()).toBe('revoked');
    expect(await page.locator(`tr[data-key-id="${keyId}"] .key-revoked`).textContent()).toContain('revoked');
  },
  STEP_TIMEOUT_MS,
);

test(
  'keyboard and small screens: the skip link comes first with a visible focus ring, every control has a label, and a phone-width page does not scroll sideways',
  async () => {
    // Prepare
    await page.goto(`${base}/#/new`);
    await page.reload();
    await page.getByRole('heading', { name: 'New task' }).waitFor();

    // Act
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const element = document.activeElement as HTMLElement;
      return { text: element.textContent, outline: getComputedStyle(element).outlineStyle };
    });
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLInputElement>('input, select, textarea')]
        .filter((control) => control.labels === null || control.labels.length === 0)
        .map((control) => control.name || control.id),
    );
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/#/tasks`);
    await page.locator('[data-list-for="#/tasks"] tr[data-task-id]').first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    await screenshot('tasks-phone');
    await page.setViewportSize({ width: 1280, height: 900 });

    // Assert
    expect(focused.text).toBe('Skip to content');
    expect(focused.outline).toBe('solid');
    expect(unlabelled).toEqual([]);
    expect(overflow).toBeLessThanOrEqual(0);
  },
  STEP_TIMEOUT_MS,
);

test(
  'reference image files: picked and dropped files are uploaded with previews; a mislabelled, an oversize and one too many each say why and are not submitted; the image-to-image task completes',
  async () => {
    // Prepare
    const png = tinyPng();
    // A PNG's first bytes, then enough to pass the stack's 1 MB upload limit (global-setup).
    const oversize = Buffer.concat([png.subarray(0, 16), Buffer.alloc(1536 * 1024)]);
    const uploadsAsked: string[] = [];
    const stored: string[] = [];
    const generates: string[] = [];
    page.on('request', (request) => {
      const path = new URL(request.url()).pathname;
      if (request.method() !== 'POST') return;
      if (path === '/api/ai/uploads') uploadsAsked.push(request.postData() ?? '');
      if (path.startsWith('/local-uploads/')) stored.push(path);
      if (path === '/api/ai/image/generate') generates.push(request.postData() ?? '');
    });
    await page.getByRole('link', { name: 'New task' }).first().click();
    await page.getByLabel('Image', { exact: true }).check();
    await page.getByLabel('Model').selectOption('image-model-1');
    await page.getByLabel('Input', { exact: true }).selectOption('image_to_image');
    await page.getByLabel('Prompt').fill('the same lighthouse, in watercolour, from my own file');
    // Three URLs leave image-model-1 (4 references) room for one file.
    await page
      .getByLabel('Reference image URLs')
      .fill('https://example.com/1.png\nhttps://example.com/2.png\nhttps://example.com/3.png');
    const before = await page.locator('#balance').textContent();
    const price = Number((await page.locator('.price').getAttribute('data-credits')) ?? 'NaN');
    const file = (name: string) => page.locator(`li.file[data-file-name="${name}"]`);

    // Act
    await page.getByLabel('Reference image files', { exact: true }).setInputFiles([
      { name: 'lighthouse.png', mimeType: 'image/png', buffer: png },
      { name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('these are notes, not a picture\n') },
      { name: 'huge.png', mimeType: 'image/png', buffer: oversize },
    ]);
    await file('lighthouse.png').and(page.locator('[data-state="ready"]')).waitFor();
    await file('notes.png').and(page.locator('[data-state="error"]')).waitFor();
    await file('huge.png').and(page.locator('[data-state="too-many"]')).waitFor();
    const tooMany = await file('huge.png').locator('.file-state').textContent();
    // Room for all: the oversize file now takes its place, and the service refuses its size.
    await page.getByLabel('Reference image URLs').fill('');
    await file('huge.png').and(page.locator('[data-state="error"]')).waitFor();
    // A file dropped on the drop zone.
    const dropped = await page.evaluateHandle(
      (bytes) => {
        const transfer = new DataTransfer();
        transfer.items.add(new File([new Uint8Array(bytes)], 'dropped.png', { type: 'image/png' }));
        return transfer;
      },
      [...png],
    );
    await page.dispatchEvent('[data-drop-zone]', 'drop', { dataTransfer: dropped });
    await file('dropped.png').and(page.locator('[data-state="ready"]')).waitFor();
    await page.waitForFunction(() =>
      [...document.querySelectorAll<HTMLImageElement>('li.file img')].every(
        (image) => image.complete && (image.naturalWidth > 0 || !/lighthouse|dropped/.test(image.alt)),
      ),
    );
    await screenshot('new-task-files');
    await page.getByRole('button', { name: 'Submit' }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'Not submitted' });
    await refused.waitFor();
    const refusedText = await refused.textContent();
    const balanceAfterRefusal = await page.locator('#balance').textContent();
    const generatesAfterRefusal = generates.length;
    await page.getByRole('button', { name: 'Remove notes.png' }).click();
    await page.getByRole('button', { name: 'Remove huge.png' }).click();
    await page.getByRole('button', { name: 'Submit' }).click();
    const taskId = await taskIdOfPage();
    await page.locator('.state[data-status="1"]').waitFor({ timeout: WAIT_MS });
    await page.waitForFunction(() => {
      const image = document.querySelector<HTMLImageElement>('.results img');
      return Boolean(image?.complete) && (image?.naturalWidth ?? 0) > 0;
    });
    await screenshot('task-from-files');
    const task = await page.evaluate(
      async (id) => (await fetch(`/api/ai/tasks/${encodeURIComponent(id)}`)).json(),
      taskId,
    );
    const expectedBalance = `Balance: ${Number(/(\d+)/.exec(before ?? '')?.[1]) - price} credits`;
    await page.waitForFunction((text) => document.querySelector('#balance')?.textContent === text, expectedBalance);

    // Assert
    expect(await file('notes.png').count()).toBe(0);
    expect(tooMany).toBe('Too many: image-model-1 takes up to 4 reference images (3 given as URLs).');
    expect(refusedText).toContain(
      'notes.png: Wrong type: the file is labelled PNG but its bytes are not a PNG, JPEG or WebP image.',
    );
    expect(refusedText).toMatch(/huge\.png: Too large \(1\.5 MB\): Must be at most 1048576 bytes/);
    expect(balanceAfterRefusal).toBe(before);
    expect(generatesAfterRefusal).toBe(0);
    // Asked for the two pictures and the oversize file (refused at once); the mislabelled one never left.
    expect(uploadsAsked.map((body) => JSON.parse(body))).toEqual([
      { contentType: 'image/png', size: png.length },
      { contentType: 'image/png', size: oversize.length },
      { contentType: 'image/png', size: png.length },
    ]);
    expect(stored).toHaveLength(2);
    expect(generates).toHaveLength(1);
    const sent = JSON.parse(generates[0] ?? '{}') as { inputImageUrls?: string[] };
    expect(sent.inputImageUrls).toEqual([expect.stringMatching(/^upload:\/\//), expect.stringMatching(/^upload:\/\//)]);
    expect(task).toMatchObject({ status: 1, type: 'image' });
    expect(JSON.stringify(task)).not.toContain('X-Amz-Signature');
  },
  STEP_TIMEOUT_MS,
);

test(
  'the Usage page charts the credits of each day as the ledger has them, totals them by key and by model, and downloads each table as CSV',
  async () => {
    // Prepare: a key of its own, named so that its CSV field needs quoting, and two tasks with it on a
    // model no other step uses: one completes, the provider fails the other (its credits come back).
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'Create a key' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('usage, "report"');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByLabel('API key', { exact: true });
    await shown.waitFor();
    usageKey = await shown.inputValue();
    await page.getByRole('button', { name: 'I have saved it' }).click();
    const usageKeyId = await keyRowIdOf(usageKey);
    const submit = async (prompt: string, providerInput?: Record<string, string>) => {
      const answer = await withKey(usageKey, '/api/ai/image/generate', {
        method: 'POST',
        json: { model: 'image-model-2', prompt, ...(providerInput ? { providerInput } : {}) },
      });
      expect(answer.status).toBe(202);
      return (await answer.json()) as { taskId: string; creditsUsed: number };
    };
    const completed = await submit('a usage chart, drawn');
    const failed = await submit('a usage chart, never drawn', { mockOutcome: 'fail', mockFailMsg: 'out of ink' });
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.locator(`[data-list-for="#/tasks"] tr[data-task-id="${completed.taskId}"][data-status="1"]`).waitFor();
    await page.locator(`[data-list-for="#/tasks"] tr[data-task-id="${failed.taskId}"][data-status="2"]`).waitFor();
    // The ledger, whole: what the chart must show for each day.
    const ledger = (await (await withKey(usageKey, '/api/ai/credits?limit=100')).json()) as {
      entries: { kind: string; delta: number; at: string; taskId?: string }[];
      next: string | null;
    };
    const expectedDays = creditsPerDay(ledger.entries);
    const refundEntry = ledger.entries.find((entry) => entry.kind === 'refund' && entry.taskId === failed.taskId);
    const refundDay = new Date(refundEntry?.at ?? Number.NaN).toISOString().slice(0, 10);

    // Act
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    const keyRow = page.locator(`[data-usage-for="#/usage"] [data-usage="key"] tr[data-group="${usageKeyId}"]`);
    const modelRow = page.locator('[data-usage="model"] tr[data-group="image-model-2"]');
    await keyRow.waitFor();
    await page.getByRole('img', { name: /^Credits per day, / }).waitFor();
    const bars = await page.locator('svg.chart g.day').evaluateAll((groups) =>
      groups.map((group) => ({
        day: group.getAttribute('data-day') ?? '',
        debited: Number(group.getAttribute('data-debited')),
        refunded: Number(group.getAttribute('data-refunded')),
        debitedHeight: Number(group.querySelector('rect.debited')?.getAttribute('height') ?? 0),
        refundedHeight: Number(group.querySelector('rect.refunded')?.getAttribute('height') ?? 0),
        tooltip: group.querySelector('title')?.textContent ?? '',
      })),
    );
    const from = await page.getByLabel('From', { exact: true }).inputValue();
    const to = await page.getByLabel('To', { exact: true }).inputValue();
    const totals = await page.locator('.usage-totals').textContent();
    const keyCells = await keyRow.locator('td').allTextContents();
    const modelCells = await modelRow.locator('td').allTextContents();
    const keyGroups = await page
      .locator('[data-usage="key"] tr[data-group]')
      .evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.group));
    const keyCsv = await downloaded(page.getByRole('button', { name: 'Download CSV of usage by key' }));
    const modelCsv = await downloaded(page.getByRole('button', { name: 'Download CSV of usage by model' }));
    await screenshot('usage');

    // Assert: the chart, day by day, is the ledger.
    expect(ledger.next).toBeNull();
    expect(bars).toHaveLength(30);
    expect([bars[0]?.day, bars.at(-1)?.day]).toEqual([from, to]);
    expect([...expectedDays.keys()].every((day) => day >= from && day <= to)).toBe(true);
    expect(bars.map(({ day, debited, refunded }) => ({ day, debited, refunded }))).toEqual(
      bars.map(({ day }) => ({ day, ...(expectedDays.get(day) ?? { debited: 0, refunded: 0 }) })),
    );
    // The day of the refund (today, unless the run crossed midnight UTC) has both bars, in proportion.
    const active = bars.find((bar) => bar.day === refundDay);
    expect(active?.refundedHeight).toBeGreaterThan(0);
    expect(active?.debitedHeight).toBeCloseTo(
      ((active?.refundedHeight ?? 0) * (active?.debited ?? 0)) / (active?.refunded ?? 1),
      0,
    );
    expect(active?.tooltip).toMatch(new RegExp(`: ${active?.debited} credits? debited, ${active?.refunded} refunded$`));
    const sum = (field: 'debited' | 'refunded') =>
      [...expectedDays.values()].reduce((total, figures) => total + figures[field], 0);
    expect(totals).toContain(
      `${sum('debited')} credits debited, ${sum('refunded')} refunded, net ${sum('debited') - sum('refunded')};`,
    );
    // Assert: the key's and the model's rows are the two tasks.
    const debited = completed.creditsUsed + failed.creditsUsed;
    const figures = [debited, failed.creditsUsed, completed.creditsUsed, 2, 1, 1, 0].map(String);
    expect(keyCells).toEqual([`usage, "report" ${usageKeyId}`, ...figures]);
    expect(modelCells).toEqual(['image-model-2', ...figures]);
    // Assert: the CSVs hold the rows shown, in order, with the key name quoted.
    const keyLines = keyCsv.text.split('\r\n');
    expect(keyCsv.name).toBe(`usage-by-key-${from}-to-${to}.csv`);
    expect(keyLines[0]).toBe('\uFEFFKey ID,Key name,Debited,Refunded,Net,Accepted,Completed,Failed,Pending');
    expect(keyLines).toContain(`${usageKeyId},"usage, ""report""",${figures.join(',')}`);
    expect(keyLines.at(-1)).toBe('');
    expect(keyLines.slice(1, -1).map((line) => line.split(',')[0])).toEqual(keyGroups);
    expect(modelCsv.name).toBe(`usage-by-model-${from}-to-${to}.csv`);
    expect(modelCsv.text).toMatch(/^\uFEFFModel,Debited,Refunded,Net,Accepted,Completed,Failed,Pending\r\n/);
    expect(modelCsv.text).toContain(`\r\nimage-model-2,${figures.join(',')}\r\n`);
  },
  STEP_TIMEOUT_MS,
);

test(
  'the Usage page shows the range chosen: a single day is one bar, and a range that ends before it starts is explained next to the field',
  async () => {
    // Prepare: the page of the last 30 days (the step before leaves it on screen).
    await page.locator('[data-usage-for="#/usage"] svg.chart').waitFor();
    const today = await page.getByLabel('To', { exact: true }).inputValue();
    const tomorrow = new Date(Date.parse(`${today}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    const answered = (from: string, to: string) => page.locator(`[data-usage-for="#/usage?from=${from}&to=${to}"]`);

    // Act: one day.
    await page.getByLabel('From', { exact: true }).fill(today);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    const oneDay = answered(today, today).locator('svg.chart g.day');
    await oneDay.first().waitFor();
    const days = await oneDay.evaluateAll((groups) => groups.map((group) => group.getAttribute('data-day')));

    // Act: from after to.
    await page.getByLabel('From', { exact: true }).fill(tomorrow);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await answered(tomorrow, today).waitFor({ state: 'attached' });
    const fromError = await fieldError('From');
    const fromInvalid = await page.getByLabel('From', { exact: true }).getAttribute('aria-invalid');
    const chartsAfterRefusal = await page.locator('svg.chart').count();
    await screenshot('usage-range-refused');
    await page.getByRole('link', { name: 'Back to the last 30 days' }).click();
    const backTo30 = page.locator('[data-usage-for="#/usage"] svg.chart g.day');
    await backTo30.first().waitFor();

    // Assert
    expect(days).toEqual([today]);
    expect(fromError).toBe('Must not be after to');
    expect(fromInvalid).toBe('true');
    expect(chartsAfterRefusal).toBe(0);
    expect(await backTo30.count()).toBe(30);
    expect(await page.getByLabel('From', { exact: true }).getAttribute('aria-invalid')).toBeNull();
  },
  STEP_TIMEOUT_MS,
);

test(
  "the account's monthly spend limit set on the Usage page: a submit past it is refused (402, scope account), a value the API refuses is explained next to the field, and once removed a submit is accepted again",
  async () => {
    // Prepare: the Usage page the step before leaves on screen, with no limit set.
    const status = page.getByTestId('account-limit-status');
    await status.filter({ hasText: /^No limit$/ }).waitFor();
    const limitField = page.getByLabel('Monthly limit (credits)');
    const save = page.getByRole('button', { name: 'Save limit' });
    const stored = () =>
      page.evaluate(async () => (await (await fetch('/api/account/spend-limit')).json()) as Record<string, unknown>);
    const submit = (prompt: string) =>
      withKey(usageKey, '/api/ai/image/generate', { method: 'POST', json: { model: 'image-model-1', prompt } });

    // Act: a generous limit first, to read what the account has spent this month under a limit.
    await limitField.fill('1000');
    await save.click();
    const generous = status.filter({ hasText: /^\d+ of 1000 credits spent this month; / });
    await generous.waitFor();
    const spent = Number(/^(\d+) of/.exec((await generous.textContent()) ?? '')?.[1]);
    // Then just above it: one image (3 credits) would pass it.
    const limit = spent + 1;
    await limitField.fill(String(limit));
    await save.click();
    const shown = status.filter({
      hasText: new RegExp(`^${spent} of ${limit} credits? spent this month; resets 1 [A-Z][a-z]{2} \\d{4} \\(UTC\\)$`),
    });
    await shown.waitFor();
    const shownText = await shown.textContent();
    const set = await stored();
    await screenshot('usage-account-limit');
    const past = await submit('a lighthouse past the monthly limit');
    const pastBody = await past.json();

    // Act: a value the API refuses (above its largest limit), then one the page refuses itself.
    await limitField.fill('1000000001');
    await save.click();
    const tooLarge = await fieldError('Monthly limit (credits)');
    const invalid = await limitField.getAttribute('aria-invalid');
    await limitField.fill('');
    await save.click();
    await page.getByText('Enter a whole number of credits (0 or more)').waitFor();
    const statusAfterRefusals = await status.textContent();

    // Act: removed, and the submit accepted again.
    await page.getByRole('button', { name: 'Remove limit' }).click();
    await status.filter({ hasText: /^No limit$/ }).waitFor();
    const removed = await stored();
    const again = await submit('a lighthouse with no monthly limit');

    // Assert
    expect(set).toEqual({
      spendLimit: { credits: limit, period: 'month', spent, resetsAt: expect.stringMatching(/-01T00:00:00(\.000)?Z$/) },
    });
    expect(past.status).toBe(402);
    expect(pastBody).toMatchObject({ error: 'Spend limit reached', scope: 'account', limit, period: 'month', spent });
    expect(tooLarge).toBe('Spend limit credits must be a whole number from 0 to 1000000000');
    expect(invalid).toBe('true');
    expect(statusAfterRefusals).toBe(shownText);
    expect(removed).toEqual({ spendLimit: null });
    expect(await limitField.inputValue()).toBe('');
    expect(await limitField.getAttribute('aria-invalid')).toBeNull();
    expect(again.status).toBe(202);
  },
  STEP_TIMEOUT_MS,
);

test(
  'signing out returns to the sign-in page, and the old session cookie is refused by the API',
  async () => {
    // Prepare: a fresh page (the address is the one shown already, so going there would load nothing),
    // whose balance comes from a session read now.
    await page.reload();
    await page.locator('#balance').waitFor();
    const cookie = (await session.cookies(base)).find((one) => one.name === '__Host-session');
    expect(cookie).toBeDefined();
    // The keys page's listing, asked for before the sign-out and held at the browser until it has
    // happened: its 401 then must not replace what the page says (a loaded machine did exactly that).
    await page.goto(`${base}/#/credits`);
    let release = (): void => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = (): void => {};
    const holding = new Promise<void>((resolve) => {
      held = resolve;
    });
    await page.route(`${base}/api/keys`, async (route) => {
      held();
      await released;
      await route.continue();
    });
    const heldListing = page.waitForEvent('requestfinished', (request) => request.url() === `${base}/api/keys`);
    await page.goto(`${base}/#/keys`);
    await holding;

    // Act
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    release();
    const listingAnswer = await (await heldListing).response();
    await page.unroute(`${base}/api/keys`);
    const withOldCookie = await fetch(`${base}/api/ai/tasks`, {
      headers: { Cookie: `__Host-session=${cookie?.value}` },
    });
    const sessionAfter = await page.evaluate(async () => (await fetch('/api/session')).status);
    const signedOutShown = await page.getByText('You are signed out.').isVisible();
    await page.goto(`${base}/#/keys`);
    // The sign-in page that answered #/keys, not the signed-out one still on screen (which says so).
    await page.getByText('You are signed out.').waitFor({ state: 'detached' });
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    // Assert
    expect(listingAnswer?.status()).toBe(401);
    expect(signedOutShown).toBe(true);
    expect(withOldCookie.status).toBe(401);
    expect(sessionAfter).toBe(401);
    expect(await page.locator('#balance').count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Sign in' }).isVisible()).toBe(true);
  },
  STEP_TIMEOUT_MS,
);

test('no page broke the Content-Security-Policy or threw an error', () => {
  // Assert (the console of every step above; the browser logs the 400 of the refused key request and
  // the 401s of the signed-out pages as failed resources, which they are meant to be)
  const unexpected = consoleErrors.filter((text) => !/^Failed to load resource: .*status of (400|401)/.test(text));
  expect(unexpected).toEqual([]);
});
