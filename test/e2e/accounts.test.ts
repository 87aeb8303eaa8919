/**
 * Accounts over real HTTP, as a browser uses them: sign-in through the local OpenID provider (redirects
 * followed, cookies kept in a jar), the session cookie, CSRF, key management with the session, a key it
 * created used by an API client, the audit log, and every refusal: not invited, cross-site, no CSRF
 * token, expired, signed out, another user's key, and a key where only a session will do.
 */
import { createApi, IMAGE_PATH, taskPath } from './support/api';
import { Browser, type BrowserResponse, signIn } from './support/browser';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);
// Sign-ins, key steps and (in one test) a task followed to its end on the poll budget.
const TEST_TIMEOUT_MS = target.pollTimeoutMs + 60_000;

if (target.runs('accounts')) {
  const accounts = (() => {
    if (!target.accounts) throw new Error('accounts context missing');
    return target.accounts;
  })();
  const base = target.baseUrl;
  const session = `${base}/api/session`;

  /** A browser signed in as the invited account, with its CSRF token. */
  async function signedIn(): Promise<{ browser: Browser; csrf: string }> {
    const browser = new Browser();
    const page = await signIn(browser, base, accounts.invited);
    expect(page.status).toBe(200);
    const me = await browser.request(session);
    expect(me.status).toBe(200);
    return { browser, csrf: (me.body as { csrfToken: string }).csrfToken };
  }

  /** A same-origin state-changing call, as the dashboard makes it. */
  function post(browser: Browser, path: string, csrf: string, json?: unknown): Promise<BrowserResponse> {
    return browser.request(`${base}${path}`, {
      method: 'POST',
      ...(json === undefined ? {} : { json }),
      headers: { Origin: base, 'X-CSRF-Token': csrf },
    });
  }

  describe('sign-in', () => {
    test(
      'an invited account signs in through the OpenID provider and lands on the dashboard with a __Host- session cookie',
      async () => {
        const browser = new Browser();

        const page = await signIn(browser, base, accounts.invited);
        const me = await browser.request(session);

        expect(page.status).toBe(200);
        expect(page.url).toBe(`${base}/`);
        const cookie = (await browser.jar.getCookies(`${base}/`)).find((c) => c.key === '__Host-session');
        expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: 'lax', path: '/', hostOnly: true });
        expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
        expect(await browser.cookie(`${base}/`, '__Host-sign-in')).toBeUndefined();
        expect(me.status).toBe(200);
        expect(me.body).toMatchObject({
          userId: accounts.invited.userId,
          email: accounts.invited.email,
          csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        });
        expect(typeof (me.body as { balance: unknown }).balance).toBe('number');
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'an account the provider knows but nobody invited ends on the "not invited" page, with no session',
      async () => {
        const browser = new Browser();

        const page = await signIn(browser, base, accounts.stranger);
        const me = await browser.request(session);

        expect(page.status).toBe(403);
        expect(page.headers.get('content-type')).toMatch(/^text\/html/);
        expect(page.text).toContain('Not invited');
        expect(await browser.cookie(`${base}/`, '__Host-session')).toBeUndefined();
        expect(me.status).toBe(401);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'a callback without the sign-in cookie (forged or from another browser) is refused',
      async () => {
        const browser = new Browser();

        const page = await browser.request(`${base}/api/auth/callback?code=forged&state=forged`);

        expect(page.status).toBe(400);
        expect(page.text).toContain('Sign-in failed');
        expect(await browser.cookie(`${base}/`, '__Host-session')).toBeUndefined();
      },
      TEST_TIMEOUT_MS,
    );
  });

  describe('keys managed with the session', () => {
    test(
      'create (key shown once), list, use it to submit a task, rotate, revoke; each audited with the address',
      async () => {
        const { browser, csrf } = await signedIn();

        const created = await post(browser, '/api/keys', csrf, {
          name: 'e2e laptop',
          allowedCidrs: ['127.0.0.1', '::1', '::ffff:127.0.0.1'],
          expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
        });
        const issued = created.body as { keyId: string; apiKey: string; prefix: string };
        const listed = await browser.request(`${base}/api/keys`);
        const submitted = await api.submit(
          IMAGE_PATH,
          { model: 'image-model-1', prompt: 'with my own key' },
          issued.apiKey,
        );
        const done = await api.pollUntilDone(submitted.taskId, { apiKey: issued.apiKey });
        const rotated = await post(browser, `/api/keys/${issued.keyId}/rotate`, csrf, { graceSeconds: 0 });
        const replacement = rotated.body as { keyId: string; apiKey: string };
        const oldKeyAfterRotation = await api.request(taskPath(submitted.taskId), { apiKey: issued.apiKey });
        const newKeyAfterRotation = await api.request(taskPath(submitted.taskId), { apiKey: replacement.apiKey });
        const revoked = await post(browser, `/api/keys/${replacement.keyId}/revoke`, csrf);
        const newKeyAfterRevocation = await api.request(taskPath(submitted.taskId), { apiKey: replacement.apiKey });
        const audit = await browser.request(`${base}/api/audit`);

        expect(created.status).toBe(201);
        expect(issued.apiKey).toMatch(/^gsk_live_[A-Za-z0-9_-]{43}$/);
        expect(issued.apiKey.startsWith(issued.prefix)).toBe(true);
        expect(listed.status).toBe(200);
        const row = (listed.body as { keys: Record<string, unknown>[] }).keys.find((k) => k.keyId === issued.keyId);
        expect(row).toMatchObject({ name: 'e2e laptop', prefix: issued.prefix, status: 'active' });
        // The IPv4-mapped address is the same rule as 127.0.0.1: stored once, canonical.
        expect(row?.allowedCidrs).toEqual(['127.0.0.1/32', '::1/128']);
        expect(listed.text).not.toContain(issued.apiKey);
        expect(done.status).toBe(1);
        expect(rotated.status).toBe(201);
        expect(oldKeyAfterRotation.status).toBe(401);
        expect(newKeyAfterRotation.status).toBe(200);
        expect(revoked.status).toBe(200);
        expect(newKeyAfterRevocation.status).toBe(401);
        expect(audit.status).toBe(200);
        const entries = (audit.body as { entries: { action: string; keyId?: string; sourceIp?: string }[] }).entries;
        expect(entries).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ action: 'key.create', keyId: issued.keyId, sourceIp: expect.any(String) }),
            expect.objectContaining({ action: 'key.rotate', keyId: issued.keyId }),
            expect.objectContaining({ action: 'key.revoke', keyId: replacement.keyId }),
            expect.objectContaining({ action: 'session.sign-in' }),
          ]),
        );
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'the list shows when a key was last used',
      async () => {
        const { browser, csrf } = await signedIn();
        const created = await post(browser, '/api/keys', csrf, { name: 'e2e used' });
        const issued = created.body as { keyId: string; apiKey: string };

        await api.request(taskPath('00000000-0000-4000-8000-000000000000'), { apiKey: issued.apiKey });
        const listed = await browser.request(`${base}/api/keys`);

        const row = (listed.body as { keys: { keyId: string; lastUsedAt: string | null }[] }).keys.find(
          (k) => k.keyId === issued.keyId,
        );
        expect(row?.lastUsedAt).toEqual(expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/));
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'invalid allowlist entries and a past expiry are 400 with a message per field, and create nothing',
      async () => {
        const { browser, csrf } = await signedIn();
        const before = await browser.request(`${base}/api/keys`);

        const badIp = await post(browser, '/api/keys', csrf, { name: 'bad', allowedCidrs: ['10.0.0.1/8'] });
        const past = await post(browser, '/api/keys', csrf, { name: 'bad', expiresAt: '2020-01-01T00:00:00Z' });
        const after = await browser.request(`${base}/api/keys`);

        expect(badIp.status).toBe(400);
        expect(badIp.body).toMatchObject({
          error: 'Invalid request',
          details: { fieldErrors: { 'allowedCidrs.0': [expect.stringContaining('host bits must be zero')] } },
        });
        expect(past.status).toBe(400);
        expect(past.body).toMatchObject({
          details: { fieldErrors: { expiresAt: [expect.stringContaining('not in the future')] } },
        });
        expect((after.body as { keys: unknown[] }).keys).toHaveLength((before.body as { keys: unknown[] }).keys.length);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "another user's key id is 404 Key not found for rotate and revoke, and that key keeps working",
      async () => {
        const { browser, csrf } = await signedIn();

        const rotate = await post(browser, `/api/keys/${accounts.otherUsersKeyId}/rotate`, csrf, {});
        const revoke = await post(browser, `/api/keys/${accounts.otherUsersKeyId}/revoke`, csrf);
        const stillWorks = await api.request(taskPath('00000000-0000-4000-8000-000000000000'), {
          apiKey: target.key('other').apiKey,
        });

        expect(rotate.status).toBe(404);
        expect(rotate.body).toEqual({ error: 'Key not found' });
        expect(revoke.status).toBe(404);
        expect(revoke.body).toEqual({ error: 'Key not found' });
        expect(stillWorks.status).toBe(404);
        expect(stillWorks.body).toEqual({ error: 'Task not found' });
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'an API key cannot manage keys or read the session (403), even a valid one',
      async () => {
        const apiKey = target.key('main').apiKey;

        const list = await api.request('/api/keys', { apiKey });
        const create = await api.request('/api/keys', { apiKey, json: { name: 'minted by a key' } });
        const me = await api.request('/api/session', { apiKey });

        for (const response of [list, create, me]) {
          expect(response.status).toBe(403);
          expect(response.body).toEqual({ error: 'This endpoint needs a signed-in session; API keys cannot use it' });
        }
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'the task endpoints take the session too: submit with the cookie and CSRF token, then read the task',
      async () => {
        const { browser, csrf } = await signedIn();

        const submitted = await post(browser, IMAGE_PATH, csrf, {
          model: 'image-model-1',
          prompt: 'from the dashboard',
        });
        const taskId = (submitted.body as { taskId: string }).taskId;
        const read = await browser.request(`${base}${taskPath(taskId)}`);

        expect(submitted.status).toBe(202);
        expect(read.status).toBe(200);
        expect(read.body).toMatchObject({ taskId, prompt: 'from the dashboard' });
      },
      TEST_TIMEOUT_MS,
    );
  });

  describe('cross-site request forgery', () => {
    test(
      'a forged cross-site form post with the cookie is refused and changes nothing',
      async () => {
        const { browser } = await signedIn();
        const before = await browser.request(`${base}/api/keys`);

        // What a form on another site makes the browser send: the (SameSite=Lax) cookie is attached to
        // a top-level POST only in some browsers, so the check must not depend on it being absent.
        const forged = await browser.request(`${base}/api/keys`, {
          form: { name: 'forged' },
          headers: { Origin: 'https://attacker.example' },
        });
        const forgedRevoke = await browser.request(`${base}/api/auth/sign-out`, {
          method: 'POST',
          headers: { Origin: 'https://attacker.example' },
        });
        const after = await browser.request(`${base}/api/keys`);
        const me = await browser.request(session);

        expect(forged.status).toBe(403);
        expect(forged.body).toEqual({ error: 'Cross-site request refused', reason: 'cross-origin' });
        expect(forgedRevoke.status).toBe(403);
        expect((after.body as { keys: unknown[] }).keys).toHaveLength((before.body as { keys: unknown[] }).keys.length);
        expect(me.status).toBe(200);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'same origin but no CSRF token, a wrong token, or no Origin at all: 403 each',
      async () => {
        const { browser, csrf } = await signedIn();

        const missing = await browser.request(`${base}/api/keys`, { json: { name: 'x' }, headers: { Origin: base } });
        const wrong = await browser.request(`${base}/api/keys`, {
          json: { name: 'x' },
          headers: { Origin: base, 'X-CSRF-Token': `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}` },
        });
        const noOrigin = await browser.request(`${base}/api/keys`, {
          json: { name: 'x' },
          headers: { 'X-CSRF-Token': csrf },
        });

        expect(missing.status).toBe(403);
        expect(missing.body).toEqual({ error: 'Cross-site request refused', reason: 'missing-token' });
        expect(wrong.body).toEqual({ error: 'Cross-site request refused', reason: 'bad-token' });
        expect(noOrigin.body).toEqual({ error: 'Cross-site request refused', reason: 'missing-origin' });
      },
      TEST_TIMEOUT_MS,
    );
  });

  describe('session end', () => {
    test(
      'an expired session is refused (401) for reading and for managing keys',
      async () => {
        const browser = new Browser();
        await browser.jar.setCookie(
          `__Host-session=${accounts.expiredSessionId}; Secure; HttpOnly; Path=/`,
          `${base}/`,
        );

        const me = await browser.request(session);
        const list = await browser.request(`${base}/api/keys`);

        expect(me.status).toBe(401);
        expect(list.status).toBe(401);
        expect(me.body).toEqual({ error: 'Unauthorized' });
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'sign-out ends the session at once: the cookie is cleared and the old value no longer works',
      async () => {
        const { browser, csrf } = await signedIn();
        const sessionId = await browser.cookie(`${base}/`, '__Host-session');

        const out = await post(browser, '/api/auth/sign-out', csrf);
        const replay = new Browser();
        await replay.jar.setCookie(`__Host-session=${sessionId}; Secure; HttpOnly; Path=/`, `${base}/`);
        const me = await replay.request(session);

        expect(out.status).toBe(200);
        expect(out.body).toEqual({ signedOut: true });
        expect(await browser.cookie(`${base}/`, '__Host-session')).toBeUndefined();
        expect(me.status).toBe(401);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      "sign-out everywhere ends the other browsers' sessions too",
      async () => {
        const first = await signedIn();
        const second = await signedIn();

        const out = await post(first.browser, '/api/auth/sign-out-everywhere', first.csrf);
        const secondMe = await second.browser.request(session);

        expect(out.status).toBe(200);
        expect((out.body as { sessions: number }).sessions).toBeGreaterThanOrEqual(2);
        expect(secondMe.status).toBe(401);
      },
      TEST_TIMEOUT_MS,
    );
  });

  describe('one origin', () => {
    test(
      'the gateway serves the dashboard page on the API origin',
      async () => {
        const page = await fetch(`${base}/`);

        expect(page.status).toBe(200);
        expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      },
      TEST_TIMEOUT_MS,
    );
  });
}
