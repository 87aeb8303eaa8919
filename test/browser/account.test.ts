/**
 * The Account page and a task's Delete button in Chromium on the browser project's local stack, with
 * an account of their own (the run's main account stays open for test/browser/dashboard.test.ts): a
 * task submitted with a key is deleted from its page after a confirmation (it is 404 afterwards); a
 * queued one's page says to cancel it first and offers no Delete (the API answers 409);
 * Export downloads the account's JSON (no key in it);
 * Close account is enabled only by the typed confirmation, ends the key and the session, and a new
 * sign-in is refused. Each step waits for the state it asserts, never for a fixed time.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient } from '../../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { loadBrowserContext } from './support/context';
import { withDispatcherHeld } from './support/dispatcher-hold';

const context = loadBrowserContext();
const base = context.baseUrl;
const account = context.closingAccount;
/** Playwright's wait for any one state (a task's end included): generous, for a loaded machine. */
const WAIT_MS = 120_000;
const STEP_TIMEOUT_MS = 3 * WAIT_MS;

let browser: Browser;
let page: Page;
let apiKey = '';
const consoleErrors: string[] = [];

function withKey(path: string, init: { method?: string; json?: unknown } = {}): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      Authorization: `Bearer ${apiKey}`,
      ...(init.json === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
}

async function signIn(): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.getByLabel('E-mail').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/**`);
}

beforeAll(async () => {
  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: context.dynamodbEndpoint });
  try {
    apiKey = (await putApiKey({ doc, tableName: context.tableName }, { userId: account.userId, name: 'closing' }))
      .apiKey;
  } finally {
    doc.destroy();
  }
  browser = await chromium.launch({ executablePath: context.chromium, args: ['--no-sandbox'], timeout: WAIT_MS });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`));
  await signIn();
  await page.locator('#balance').waitFor();
}, STEP_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
});

test(
  "an ended task's Delete button deletes it after a confirmation",
  async () => {
    // Prepare: a task submitted with the key, shown on its page until it has ended
    const submitted = await withKey('/api/ai/image/generate', {
      method: 'POST',
      json: { model: 'image-model-1', prompt: 'a task to delete' },
    });
    const { taskId } = (await submitted.json()) as { taskId: string };
    await page.goto(`${base}/#/tasks/${encodeURIComponent(taskId)}`);
    const deleteButton = page.getByRole('button', { name: 'Delete task' });
    await deleteButton.waitFor();
    page.once('dialog', (dialog) => void dialog.accept());

    // Act
    await deleteButton.click();
    await page.getByText('The task and its results were deleted.').waitFor();

    // Assert
    expect(submitted.status).toBe(202);
    expect((await withKey(`/api/ai/tasks/${taskId}`)).status).toBe(404);
    await page.screenshot({ path: join(context.screenshotDir, 'task-deleted.png'), fullPage: true });
  },
  STEP_TIMEOUT_MS,
);

test(
  "a queued task's page says to cancel it before deleting, and offers no Delete",
  async () => {
    await withDispatcherHeld(context, async () => {
      // Prepare: a task submitted while no dispatcher may send, so it stays queued
      const submitted = await withKey('/api/ai/image/generate', {
        method: 'POST',
        json: { model: 'image-model-1', prompt: 'a queued task' },
      });
      const { taskId } = (await submitted.json()) as { taskId: string };

      // Act
      await page.goto(`${base}/#/tasks/${encodeURIComponent(taskId)}`);
      await page.locator('.state[data-stage="queued"]').waitFor();
      const hint = page.getByText('To delete this task, cancel it first.');
      await hint.waitFor();
      // Read now: the cancel below ends the task, and the page then shows it ended, without the hint.
      const hintShown = await hint.isVisible();
      const deleteButtons = await page.getByRole('button', { name: 'Delete task' }).count();
      const deleted = await withKey(`/api/ai/tasks/${taskId}`, { method: 'DELETE' });
      const deleteAnswer = (await deleted.json()) as { error?: string };
      await page.screenshot({ path: join(context.screenshotDir, 'task-queued-delete-hint.png'), fullPage: true });
      // Not left to run: the close below would only cancel it.
      const cancelled = await withKey(`/api/ai/tasks/${taskId}/cancel`, { method: 'POST' });

      // Assert
      expect(submitted.status).toBe(202);
      expect(hintShown).toBe(true);
      expect(deleteButtons).toBe(0);
      expect(deleted.status).toBe(409);
      expect(deleteAnswer.error).toContain('cancel it first');
      expect(cancelled.status).toBe(200);
    });
  },
  STEP_TIMEOUT_MS,
);

test(
  'Export downloads the account as JSON without the key',
  async () => {
    // Prepare
    await page.getByRole('link', { name: 'Account' }).click();
    const button = page.getByRole('button', { name: 'Export my data' });

    // Act
    const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
    const text = await readFile(await download.path(), 'utf8');

    // Assert
    const data = JSON.parse(text) as { userId: string; keys: { name: string }[]; ledger: { kind: string }[] };
    expect(download.suggestedFilename()).toMatch(/^account-export-\d{4}-\d{2}-\d{2}\.json$/);
    expect(data.userId).toBe(account.userId);
    expect(data.keys.map((key) => key.name)).toEqual(['closing']);
    expect(data.ledger.map((entry) => entry.kind)).toContain('grant');
    expect(text).not.toContain(apiKey);
  },
  STEP_TIMEOUT_MS,
);

test(
  'Close account needs the typed confirmation, ends the key and the session, and sign-in is refused',
  async () => {
    // Prepare
    await page.goto(`${base}/#/account`);
    const close = page.getByRole('button', { name: 'Close account' });
    await close.waitFor();
    const disabledBefore = await close.isDisabled();
    await page.getByLabel('Type "close my account" to confirm').fill('close my account');

    // Act
    await close.click();
    await page.getByRole('heading', { name: 'Account closed' }).waitFor();
    const keyAfter = await withKey('/api/ai/credits');
    const sessionAfter = await page.evaluate(async () => (await fetch('/api/session')).status);
    await page.screenshot({ path: join(context.screenshotDir, 'account-closed.png'), fullPage: true });
    // The identity provider remembers this browser's sign-in: the callback is answered at once.
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Account closed' }).waitFor();

    // Assert
    expect(disabledBefore).toBe(true);
    expect(keyAfter.status).toBe(401);
    expect(sessionAfter).toBe(401);
    expect(await page.content()).toContain('can no longer sign in');
    expect(consoleErrors).toEqual([]);
  },
  STEP_TIMEOUT_MS,
);
