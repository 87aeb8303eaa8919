/**
 * The dashboard's Webhooks pages in a real browser (Debian's Chromium driven by playwright-core) on the
 * browser project's local stack, with its own account and a real HTTP receiver in this file that checks
 * every delivery's Standard Webhooks signature with the `standardwebhooks` library (plain http to it is
 * allowed by the stack's WEBHOOK_INSECURE_ORIGINS, its port held by the global setup until now).
 * One browser page walks through, in order: an endpoint created from the form with its signing secret
 * shown once (and never again after a reload), a test event verified with that secret and seen in the
 * delivery log, a redelivery with the same webhook-id as a second attempt, a rotation whose deliveries
 * verify with the old and the new secret both, the log's filters, a change, another account's session
 * seeing none of it (404), and deleting after a confirmation. Each step waits for states, never for a time.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { csrfTokenFor } from '../../functions/core/session';
import { createDocumentClient } from '../../functions/store/client';
import { createSession } from '../../functions/store/sessions';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { loadBrowserContext } from './support/context';
import { takeHeldPort } from './support/held-port';

const context = loadBrowserContext();
const base = context.baseUrl;
const { account, receiverOrigin } = context.webhooks;
/** Playwright's wait for any one state (a delivery's end included): generous, for a loaded machine. */
const WAIT_MS = 120_000;
/** Jest's limit for a step: one wait spent whole, with room for the rest of the step. */
const STEP_TIMEOUT_MS = 2 * WAIT_MS;
const HOOK_URL = `${receiverOrigin}/hooks/browser`;

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

let browser: Browser;
let session: BrowserContext;
let page: Page;
const consoleErrors: string[] = [];

let receiver: Server;
const received: Received[] = [];
/** What the receiver answers: 200, or 503 once a step wants deliveries to wait for a retry. */
let receiverStatus = 200;

/** Learned along the way. */
let endpointId = '';
let firstSecret = '';
let secondSecret = '';
let firstEventId = '';
let rotatedEventId = '';

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(context.screenshotDir, `${name}.png`), fullPage: true });
}

/** The requests of one event (its `webhook-id`) the receiver got. */
function deliveriesOf(eventId: string): Received[] {
  return received.filter((request) => request.headers['webhook-id'] === eventId);
}

/** Polls `read` until `check` holds (the webhook worker runs on its own), at most WAIT_MS. */
async function until<T>(read: () => T, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((next) => setTimeout(next, 100));
  }
}

/** The event of `request` when it verifies with `secret` (Standard Webhooks), else undefined. */
function verified(request: Received, secret: string): { type: string; data: Record<string, unknown> } | undefined {
  try {
    return new Webhook(secret).verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    }) as { type: string; data: Record<string, unknown> };
  } catch {
    return undefined;
  }
}

/** A same-origin request from the signed-in page (the session cookie, as the dashboard sends it). */
async function fromPage(path: string): Promise<{ status: number; text: string }> {
  return page.evaluate(async (url) => {
    const answer = await fetch(url, { credentials: 'same-origin' });
    return { status: answer.status, text: await answer.text() };
  }, path);
}

/** Waits until the log shows exactly these deliveries (event ids, newest first), then returns their states. */
async function logShows(eventIds: string[]): Promise<string[]> {
  const handle = await page.waitForFunction((expected) => {
    const rows = [...document.querySelectorAll<HTMLElement>('tr[data-delivery-id]')];
    const shown = rows.map((row) => row.dataset.eventId ?? '');
    return shown.join(' ') === expected.join(' ') ? rows.map((row) => row.dataset.state ?? '') : undefined;
  }, eventIds);
  return (await handle.jsonValue()) as string[];
}

/** The log row of an event. */
function logRow(eventId: string) {
  return page.locator(`tr[data-event-id="${eventId}"]`);
}

/** The names of the page's form controls that have no label. */
function unlabelledControls(): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLInputElement>('input, select, textarea')]
      .filter((control) => control.labels === null || control.labels.length === 0)
      .map((control) => control.name || control.id),
  );
}

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() });
      response.writeHead(receiverStatus).end();
    });
  });
  await takeHeldPort(receiver, receiverOrigin);
  // Running as root (CI containers) needs --no-sandbox; the pages are our own.
  browser = await chromium.launch({ executablePath: context.chromium, args: ['--no-sandbox'], timeout: WAIT_MS });
  session = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await session.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page = await session.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('console', (message) => {
    if (!page.url().startsWith(`${base}/`)) return;
    if (message.type() === 'error') consoleErrors.push(`${message.text()} at ${message.location().url}`);
  });
  page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`));
}, STEP_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((closed) => {
    if (!receiver?.listening) closed();
    else receiver.close(() => closed());
  });
});

test(
  'the Webhooks page, after signing in, has no endpoints yet and refuses a plain-http URL next to its field',
  async () => {
    // Prepare
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('E-mail').fill(account.email);
    await page.getByLabel('Password').fill(account.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#balance').waitFor();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByText('No endpoints yet.').waitFor();

    // Act
    await page.getByLabel('Endpoint URL').fill('http://hooks.example.com/generation');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const urlControl = page.getByLabel('Endpoint URL');
    await page.locator('input[name="url"][aria-invalid="true"]').waitFor();
    const errorId = ((await urlControl.getAttribute('aria-describedby')) ?? '')
      .split(' ')
      .find((id) => id.endsWith('-error'));
    const urlError = await page.locator(`[id="${errorId}"]`).textContent();
    const unlabelled = await unlabelledControls();

    // Assert
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Webhooks');
    expect(urlError).toMatch(/https/i);
    expect(unlabelled).toEqual([]);
    expect(await page.locator('tr[data-endpoint-id]').count()).toBe(0);
  },
  STEP_TIMEOUT_MS,
);

test(
  "creating an endpoint shows its signing secret once, with a copy button and a won't-see-it-again warning; a reload never shows it",
  async () => {
    // Prepare
    await page.getByLabel('Endpoint URL').fill(HOOK_URL);
    await page.getByLabel('Description (optional)').fill('the browser test receiver');
    await page.getByRole('radio', { name: 'Only these:' }).check();
    await page.getByRole('checkbox', { name: /^task\.completed / }).check();
    await page.getByRole('checkbox', { name: /^task\.failed / }).check();

    // Act
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const shown = page.getByLabel('Signing secret', { exact: true });
    await shown.waitFor();
    firstSecret = await shown.inputValue();
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    const clipboard = await page.evaluate(() => navigator.clipboard.readText());
    const warning = await page.locator('.issued .warning').textContent();
    const row = page.locator('tr[data-endpoint-id]');
    await row.waitFor();
    endpointId = (await row.getAttribute('data-endpoint-id')) ?? '';
    await screenshot('webhooks-new');
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.locator('.issued').waitFor({ state: 'detached' });
    const afterSaved = await page.content();
    await page.reload();
    await row.waitFor();
    const afterReload = await page.content();
    const listed = await fromPage('/api/webhooks');

    // Assert
    expect(firstSecret).toMatch(/^whsec_/);
    expect(clipboard).toBe(firstSecret);
    expect(warning).toContain("You won't see it again");
    expect(await row.locator('.url').textContent()).toBe(HOOK_URL);
    expect(await row.locator('td.events').textContent()).toBe('task.completed, task.failed');
    expect(await row.locator('td[data-label="State"]').textContent()).toBe('Enabled');
    expect(await row.textContent()).toContain('the browser test receiver');
    expect(afterSaved).not.toContain(firstSecret);
    expect(afterReload).not.toContain(firstSecret);
    expect(await page.getByLabel('Signing secret', { exact: true }).count()).toBe(0);
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(firstSecret);
    expect(listed.text).not.toContain('whsec_');
  },
  STEP_TIMEOUT_MS,
);

test(
  'a test event reaches the receiver signed with that secret and shows in the log as delivered, with its attempt',
  async () => {
    // Prepare
    await page.getByRole('link', { name: `Open ${HOOK_URL}` }).click();
    await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
    await page.getByText('No deliveries yet.').waitFor();

    // Act
    await page.getByRole('button', { name: 'Send test event' }).click();
    const [request] = await until(
      () => received,
      (all) => all.length >= 1,
    );
    firstEventId = String(request?.headers['webhook-id'] ?? '');
    const states = await logShows([firstEventId]);
    await logRow(firstEventId).locator('td.delivery-delivered').waitFor();
    const attempts = await logRow(firstEventId).locator('ol.attempts li').allTextContents();
    const notice = await page.locator('p.notice[role="status"]').first().textContent();
    await screenshot('webhook-log');

    // Assert
    expect(request).toBeDefined();
    const event = request ? verified(request, firstSecret) : undefined;
    expect(event).toMatchObject({ type: 'webhook.test', data: { endpointId } });
    expect(firstEventId).toMatch(/^msg_/);
    expect(notice).toContain(firstEventId);
    expect(states).toHaveLength(1);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatch(/^#1 · .+ · HTTP 200 · \d+ ms$/);
    expect(await logRow(firstEventId).locator('td.event').textContent()).toContain('webhook.test');
  },
  STEP_TIMEOUT_MS,
);

test(
  'Redeliver sends the event again with the same webhook-id, a second attempt in the log',
  async () => {
    // Act
    await page.getByRole('button', { name: `Redeliver webhook.test ${firstEventId}` }).click();
    const both = await until(
      () => deliveriesOf(firstEventId),
      (list) => list.length >= 2,
    );
    await page.locator(`tr[data-event-id="${firstEventId}"][data-attempts="2"][data-state="delivered"]`).waitFor();
    const attempts = await logRow(firstEventId).locator('ol.attempts li').allTextContents();

    // Assert
    expect(both).toHaveLength(2);
    for (const request of both) expect(verified(request, firstSecret)?.type).toBe('webhook.test');
    expect(both[1]?.body).toBe(both[0]?.body);
    expect(attempts.map((text) => text.split(' · ')[0])).toEqual(['#1', '#2']);
    expect(attempts[1]).toContain('HTTP 200');
    expect(await page.locator('tr[data-delivery-id]').count()).toBe(1);
  },
  STEP_TIMEOUT_MS,
);

test(
  'rotating shows the new secret once and that the old one stays valid for the grace; deliveries then verify with both',
  async () => {
    // Prepare
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByLabel('Old secret keeps signing for').selectOption('86400');

    // Act
    await page.getByRole('button', { name: 'Rotate', exact: true }).click();
    const shown = page.getByLabel('Signing secret', { exact: true });
    await shown.waitFor();
    secondSecret = await shown.inputValue();
    const grace = await page.locator('.issued .grace').textContent();
    const warning = await page.locator('.issued .warning').textContent();
    const previousUntil = await page.locator('dd[data-term="Previous secret signs until"]').textContent();
    await screenshot('webhook-rotated');
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.locator('.issued').waitFor({ state: 'detached' });
    // This one waits for a retry: the log then has a delivery in another state to filter on.
    receiverStatus = 503;
    const before = new Set(received.map((request) => String(request.headers['webhook-id'])));
    await page.getByRole('button', { name: 'Send test event' }).click();
    const fresh = await until(
      () => received.filter((request) => !before.has(String(request.headers['webhook-id']))),
      (list) => list.length >= 1,
    );
    rotatedEventId = String(fresh[0]?.headers['webhook-id'] ?? '');
    await page.locator(`tr[data-event-id="${rotatedEventId}"][data-state="waiting"]`).waitFor();
    const attempt = await logRow(rotatedEventId).locator('ol.attempts li').first().textContent();
    const afterSaved = await page.content();

    // Assert
    expect(secondSecret).toMatch(/^whsec_/);
    expect(secondSecret).not.toBe(firstSecret);
    expect(warning).toContain("You won't see it again");
    expect(grace).toContain('The previous secret stays valid until');
    expect(grace).toContain('both signatures');
    expect(previousUntil).not.toBe('—');
    const request = fresh[0];
    expect(request).toBeDefined();
    if (!request) return;
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(request, firstSecret)?.type).toBe('webhook.test');
    expect(verified(request, secondSecret)?.type).toBe('webhook.test');
    expect(attempt).toContain('HTTP 503');
    expect(afterSaved).not.toContain(secondSecret);
  },
  STEP_TIMEOUT_MS,
);

test(
  'the log filters by state and by event type',
  async () => {
    // Act
    await page.getByLabel('State', { exact: true }).selectOption('waiting');
    await page.getByRole('button', { name: 'Apply' }).click();
    const waiting = await logShows([rotatedEventId]);
    await page.getByLabel('State', { exact: true }).selectOption('delivered');
    await page.getByRole('button', { name: 'Apply' }).click();
    const delivered = await logShows([firstEventId]);
    await page.getByLabel('State', { exact: true }).selectOption('');
    await page.getByLabel('Event type', { exact: true }).selectOption('task.completed');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No deliveries match these filters.').waitFor();
    const noneUrl = page.url();
    await page.getByLabel('Event type', { exact: true }).selectOption('webhook.test');
    await page.getByRole('button', { name: 'Apply' }).click();
    const tests = await logShows([rotatedEventId, firstEventId]);
    const unlabelled = await unlabelledControls();
    const announced = await page.locator('main [role="status"][aria-live="polite"]').count();

    // Assert
    expect(waiting).toEqual(['waiting']);
    expect(delivered).toEqual(['delivered']);
    expect(noneUrl).toContain('eventType=task.completed');
    expect(noneUrl).not.toContain('state=');
    expect(tests).toEqual(['waiting', 'delivered']);
    expect(unlabelled).toEqual([]);
    // The action results and the log's count are announced.
    expect(announced).toBeGreaterThanOrEqual(2);
    expect(page.url()).toContain('eventType=webhook.test');
  },
  STEP_TIMEOUT_MS,
);

test(
  'changing the endpoint: all event types, disabled, a new description, shown on its page and in the list',
  async () => {
    // Prepare
    await page.getByRole('radio', { name: 'All event types, including those added later' }).check();
    await page.getByRole('checkbox', { name: /^Enabled/ }).uncheck();
    await page.getByLabel('Description (optional)').fill('paused for the night');

    // Act
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Changes saved.').waitFor();
    const state = await page.locator('dd[data-term="State"]').textContent();
    const events = await page.locator('dd[data-term="Events"]').textContent();
    const stored = await fromPage(`/api/webhooks/${endpointId}`);
    await page.getByRole('link', { name: 'All endpoints' }).click();
    const row = page.locator(`tr[data-endpoint-id="${endpointId}"]`);
    await row.waitFor();

    // Assert
    expect(state).toBe('Disabled: receives no new events');
    expect(events).toBe('All event types');
    expect(stored.status).toBe(200);
    expect(JSON.parse(stored.text)).toMatchObject({
      enabled: false,
      events: null,
      description: 'paused for the night',
      url: HOOK_URL,
    });
    expect(await row.locator('td[data-label="State"]').textContent()).toBe('Disabled');
    expect(await row.locator('td.events').textContent()).toBe('All event types');
  },
  STEP_TIMEOUT_MS,
);

test(
  "another account's session sees none of it: an empty list and 404 for the endpoint, its log, and every action on them",
  async () => {
    // Prepare: a session of another account, with its cookie and CSRF token as the dashboard sends them.
    const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: context.dynamodbEndpoint });
    let sessionId: string;
    try {
      ({ sessionId } = await createSession(
        { doc, tableName: context.tableName },
        { userId: 'browser-webhooks-other', email: 'other@browser.test', idleSeconds: 3600, absoluteSeconds: 7200 },
      ));
    } finally {
      doc.destroy();
    }
    const headers = {
      Cookie: `__Host-session=${sessionId}`,
      Origin: base,
      'X-CSRF-Token': csrfTokenFor(sessionId),
      'Content-Type': 'application/json',
    };
    const call = async (method: string, path: string, body?: unknown) => {
      const answer = await fetch(`${base}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: answer.status, text: await answer.text() };
    };
    const deliveries = JSON.parse((await fromPage(`/api/webhooks/${endpointId}/deliveries`)).text) as {
      deliveries: { id: string }[];
    };
    const deliveryId = deliveries.deliveries[0]?.id ?? '';
    const sentBefore = received.length;

    // Act
    const list = await call('GET', '/api/webhooks');
    const answers = [
      await call('GET', `/api/webhooks/${endpointId}`),
      await call('GET', `/api/webhooks/${endpointId}/deliveries`),
      await call('POST', `/api/webhooks/${endpointId}/test`),
      await call('POST', `/api/webhooks/${endpointId}/deliveries/${deliveryId}/redeliver`),
      await call('PATCH', `/api/webhooks/${endpointId}`, { url: 'https://attacker.example.com/hook' }),
      await call('POST', `/api/webhooks/${endpointId}/rotate-secret`, {}),
      await call('DELETE', `/api/webhooks/${endpointId}`),
    ];
    const mine = await fromPage(`/api/webhooks/${endpointId}`);

    // Assert
    expect(deliveryId).toMatch(/^dlv_/);
    expect(list.status).toBe(200);
    expect(JSON.parse(list.text)).toEqual({ endpoints: [] });
    expect(answers.map((answer) => answer.status)).toEqual([404, 404, 404, 404, 404, 404, 404]);
    for (const answer of answers) expect(answer.text).not.toContain(HOOK_URL);
    expect(mine.status).toBe(200);
    expect(JSON.parse(mine.text)).toMatchObject({ url: HOOK_URL, description: 'paused for the night' });
    // Its test event and redelivery would have reached the receiver as events of ids not seen before.
    const sentSince = received.slice(sentBefore).map((request) => String(request.headers['webhook-id']));
    expect(sentSince.filter((id) => id !== firstEventId && id !== rotatedEventId)).toEqual([]);
  },
  STEP_TIMEOUT_MS,
);

test(
  'deleting asks for a confirmation (Cancel keeps the endpoint), then it is gone from the list and the API',
  async () => {
    // Prepare
    await page.getByRole('link', { name: `Open ${HOOK_URL}` }).click();
    await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    const afterCancel = await fromPage(`/api/webhooks/${endpointId}`);

    // Act
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    const question = await page.getByRole('dialog').getByRole('heading').textContent();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText('No endpoints yet.').waitFor();
    const notice = await page.locator('p.notice[role="status"]').first().textContent();
    const gone = await fromPage(`/api/webhooks/${endpointId}`);

    // Assert
    expect(afterCancel.status).toBe(200);
    expect(question).toBe(`Delete the endpoint ${HOOK_URL}?`);
    expect(notice).toBe(`Endpoint ${HOOK_URL} deleted.`);
    expect(page.url()).toBe(`${base}/#/webhooks`);
    expect(gone.status).toBe(404);
  },
  STEP_TIMEOUT_MS,
);

test('no page broke the Content-Security-Policy or threw an error', () => {
  // Assert (the browser logs the 401 of the signed-out start, the 400 of the refused URL and the 404 of
  // the deleted endpoint read back as failed resources, which they are meant to be)
  const unexpected = consoleErrors.filter((text) => !/^Failed to load resource: .*status of (400|401|404)/.test(text));
  expect(unexpected).toEqual([]);
});
