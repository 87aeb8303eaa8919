import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { authorizeKey } from '../../functions/auth/authorize-key';
import { usageKeyName } from '../../functions/core/rate-plan';
import { hashSessionId } from '../../functions/core/session';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { getAccountAlerts, setLowBalanceThreshold } from '../../functions/store/account-events';
import { getBalance } from '../../functions/store/accounts';
import { listApiKeys } from '../../functions/store/api-keys';
import { webhookKeys } from '../../functions/store/keys';
import { createSession, getSessionByHash } from '../../functions/store/sessions';
import * as keys from '../../functions/store/task-keys';
import { writeStackState } from '../../local/stack-state';
import { type AdminRun, adminInProcess, adminSubprocess } from '../support/admin-cli';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newTask } from '../support/store-fixtures';

// Most commands run through the CLI's `main` in this process (test/support/admin-cli.ts); the tests
// marked "as the bin" run `node bin/run-admin.cjs`, what `npm run admin` runs, as a process of its own:
// its exit codes, stdout and stderr, and settings read from its environment.
jest.setTimeout(120_000);

describe('operator CLI (bin/admin.ts) on DynamoDB Local', () => {
  let store: TestStore;
  let env: NodeJS.ProcessEnv;

  /** One command through the CLI's `main`, on the test's table unless `extraEnv` says otherwise. */
  function admin(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<AdminRun> {
    return adminInProcess(args, { ...env, ...extraEnv });
  }

  /** One command as `npm run admin` runs it: a Node process of its own. */
  function adminBin(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<AdminRun> {
    return adminSubprocess(args, { ...env, ...extraEnv });
  }

  beforeAll(async () => {
    store = await createTestStore();
    const { TABLE_NAME: _t, DYNAMODB_PORT: _p, DYNAMODB_ENDPOINT: _e, DATA_DIR: _d, ...rest } = process.env;
    env = { ...rest, TABLE_NAME: store.tableName, DYNAMODB_PORT: new URL(store.endpoint).port };
  });

  afterAll(async () => {
    await store.dispose();
  });

  it('as the bin: --help lists every command in plain text, <command> --help explains one, --version prints the version', async () => {
    // Act: three processes at once (they read nothing of one another)
    const [all, one, version] = await Promise.all([
      adminBin(['--help']),
      adminBin(['keys', 'rotate', '--help']),
      adminBin(['--version']),
    ]);

    // Assert
    expect([all.code, one.code, version.code]).toEqual([0, 0, 0]);
    expect(all.stderr).toBe('');
    expect(all.stdout).toContain('Usage: npm run --silent admin -- <command> [options] [--aws]');
    for (const command of ['credits grant', 'keys rotate --key-id K', 'limits set', 'accounts invite']) {
      expect(all.stdout).toContain(`  ${command}`);
    }
    expect(one.stdout).toMatch(
      /^Usage: npm run --silent admin -- keys rotate --key-id K \[--grace-seconds N\] \[--aws\]\n/,
    );
    expect(one.stdout).toContain('0 revokes it at once');
    expect(one.stdout).not.toContain('credits grant');
    expect(version.stdout.trim()).toBe((require('../../package.json') as { version: string }).version);
  });

  it('as the bin: credits grant adds to the balance and credits show reads it; both print { userId, balance }', async () => {
    // Act
    const first = await adminBin(['credits', 'grant', '--user', 'cli-user-1', '--amount', '50']);
    const second = await adminBin(['credits', 'grant', '--user=cli-user-1', '--amount=30']);
    const [shown, nobody] = await Promise.all([
      adminBin(['credits', 'show', '--user', 'cli-user-1']),
      adminBin(['credits', 'show', '--user', 'cli-nobody']),
    ]);

    // Assert
    expect([first.code, second.code, shown.code, nobody.code]).toEqual([0, 0, 0, 1]);
    expect(first.json).toEqual({ userId: 'cli-user-1', balance: 50 });
    expect(second.json).toEqual({ userId: 'cli-user-1', balance: 80 });
    expect(shown.json).toEqual({ userId: 'cli-user-1', balance: 80 });
    expect(nobody.stdout).toBe('');
    expect(nobody.error).toEqual({ error: expect.stringContaining('no account "cli-nobody"') });
    expect(await getBalance(store, 'cli-user-1')).toBe(80);
  });

  it.each([
    [
      'a negative amount',
      ['credits', 'grant', '--user', 'cli-user-2', '--amount=-5'],
      '--amount must be a whole number',
    ],
    [
      'a negative amount as a separate argument',
      ['credits', 'grant', '--user', 'cli-user-2', '--amount', '-5'],
      '--amount needs a value, and "-5" is not one (it must be positive)',
    ],
    ['a zero amount', ['credits', 'grant', '--user', 'cli-user-2', '--amount', '0'], '--amount must be a whole number'],
    ['a fractional amount', ['credits', 'grant', '--user', 'cli-user-2', '--amount', '1.5'], '--amount must be'],
    [
      'a missing value',
      ['credits', 'grant', '--user', 'cli-user-2', '--amount'],
      '--amount needs a value; run with --help',
    ],
    [
      'an unknown flag',
      ['credits', 'grant', '--user', 'cli-user-2', '--amount', '5', '--force'],
      'unknown option --force; run with --help',
    ],
    [
      'a flag of another command',
      ['credits', 'grant', '--user', 'cli-user-2', '--amount', '5', '--name', 'x'],
      '--name is not an option',
    ],
    [
      'a repeated flag',
      ['credits', 'grant', '--user', 'cli-user-2', '--amount', '5', '--amount', '6'],
      'more than once',
    ],
    ['no user', ['credits', 'grant', '--amount', '5'], 'requires --user'],
    ['an unknown command', ['credits', 'steal', '--user', 'cli-user-2'], 'unknown command'],
  ])('credits grant with %s exits 2 with a JSON error and changes nothing', async (_label, args, message) => {
    // Act
    const run = await admin(args);

    // Assert
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.error).toEqual({ error: expect.stringContaining(message) });
    expect(await getBalance(store, 'cli-user-2')).toBe(0);
  });

  it('as the bin: keys create beyond MAX_ACTIVE_KEYS is refused naming the limit, as the API refuses it; keys revoke frees a place and deletes the API Gateway key in the local stand-in', async () => {
    // Prepare: the cap is read from the process's environment, so these run as processes of their own
    const cap = { MAX_ACTIVE_KEYS: '1' };
    const first = await adminBin(['keys', 'create', '--user', 'cli-user-cap', '--name', 'first'], cap);

    // Act
    const refused = await adminBin(['keys', 'create', '--user', 'cli-user-cap', '--name', 'second'], cap);
    const revoked = await adminBin(['keys', 'revoke', '--key-id', String(first.json.keyId)], cap);
    const afterRevoke = await adminBin(['keys', 'create', '--user', 'cli-user-cap', '--name', 'third'], cap);
    const standIn = await store.doc.send(
      new GetCommand({
        TableName: store.tableName,
        Key: {
          PK: `LOCALAPIKEY#${usageKeyName(store.tableName, { credential: 'key', keyId: String(first.json.keyId) })}`,
          SK: 'LOCALAPIKEY',
        },
      }),
    );

    // Assert
    expect(first.code).toBe(0);
    expect(refused.code).toBe(1);
    expect(refused.error).toEqual({
      error: 'This account already has 1 active API key, the most it may hold; revoke one first',
      limit: 1,
    });
    expect(revoked.code).toBe(0);
    expect(afterRevoke.code).toBe(0);
    expect(standIn.Item?.deleted).toBe(true);
  });

  it('keys create prints the key once; keys list shows it without the key; the key authorizes', async () => {
    // Act
    const created = await admin([
      'keys',
      'create',
      '--user',
      'cli-user-3',
      '--name',
      'CI pipeline',
      '--allow-ip',
      '198.51.100.0/24',
      '--allow-ip',
      '2001:DB8::1',
      '--expires-at',
      '2099-01-31T12:00:00+01:00',
    ]);
    const listed = await admin(['keys', 'list', '--user', 'cli-user-3']);

    // Assert
    expect(created.code).toBe(0);
    const apiKey = String(created.json.apiKey);
    expect(created.json).toEqual({
      keyId: expect.stringMatching(/^key_[a-z0-9]{12}$/),
      apiKey: expect.stringMatching(/^gsk_live_[A-Za-z0-9_-]{43}$/),
      userId: 'cli-user-3',
      name: 'CI pipeline',
      prefix: apiKey.slice(0, 15),
      allowedCidrs: ['198.51.100.0/24', '2001:db8::1/128'],
      expiresAt: '2099-01-31T11:00:00.000Z',
      spendLimit: null,
    });
    expect(listed.code).toBe(0);
    expect(listed.json).toEqual({
      userId: 'cli-user-3',
      keys: [
        {
          keyId: created.json.keyId,
          name: 'CI pipeline',
          prefix: apiKey.slice(0, 15),
          status: 'active',
          allowedCidrs: ['198.51.100.0/24', '2001:db8::1/128'],
          createdAt: expect.any(String),
          expiresAt: '2099-01-31T11:00:00.000Z',
          revokedAt: null,
          lastUsedAt: null,
          replacedBy: null,
          rotatedFrom: null,
          spendLimit: null,
        },
      ],
    });
    expect(listed.stdout).not.toContain(apiKey);
    const principal = await authorizeKey(store, {
      authorization: `Bearer ${apiKey}`,
      sourceIp: '198.51.100.20',
      now: new Date(),
    });
    expect(principal).toEqual({ userId: 'cli-user-3', keyId: created.json.keyId, expiresAt: 4073540400 });
  });

  it('keys create --spend-limit gives the key a budget; keys limit changes and removes it; keys list shows it', async () => {
    // Act
    const created = await admin([
      'keys',
      'create',
      '--user',
      'cli-user-limit',
      '--name',
      'budgeted',
      '--spend-limit',
      '50',
      '--per',
      'day',
    ]);
    const keyId = String(created.json.keyId);
    const changed = await admin(['keys', 'limit', '--key-id', keyId, '--spend-limit', '500', '--per', 'month']);
    const listed = await admin(['keys', 'list', '--user', 'cli-user-limit']);
    const removed = await admin(['keys', 'limit', '--key-id', keyId, '--none']);
    const both = await admin(['keys', 'limit', '--key-id', keyId, '--none', '--per', 'day']);
    const badPeriod = await admin(['keys', 'limit', '--key-id', keyId, '--spend-limit', '5', '--per', 'week']);
    const alone = await admin(['keys', 'limit', '--key-id', keyId, '--spend-limit', '5']);

    // Assert
    expect(created.code).toBe(0);
    expect(created.json.spendLimit).toEqual({ credits: 50, period: 'day' });
    expect(changed.code).toBe(0);
    expect(changed.json).toMatchObject({
      userId: 'cli-user-limit',
      keyId,
      spendLimit: { credits: 500, period: 'month', spent: 0, resetsAt: expect.stringMatching(/-01T00:00:00.000Z$/) },
    });
    expect((listed.json.keys as Array<Record<string, unknown>>)[0]?.spendLimit).toMatchObject({
      credits: 500,
      period: 'month',
      spent: 0,
    });
    expect(removed.code).toBe(0);
    expect(removed.json.spendLimit).toBeNull();
    expect([both.code, badPeriod.code, alone.code]).toEqual([2, 2, 2]);
    expect(badPeriod.error).toEqual({ error: '--per must be day, month or total' });
    expect(alone.error).toEqual({ error: '--spend-limit and --per go together' });
  });

  it('credits limit sets, shows and removes the account-wide monthly limit, and the accept obeys it', async () => {
    // Prepare
    const userId = 'cli-account-limit';
    await grantCredits(store, { userId, amount: 50 });

    // Act
    const none = await admin(['credits', 'limit', '--user', userId]);
    const set = await admin(['credits', 'limit', '--user', userId, '--spend-limit', '5', '--per', 'month']);
    const refused = acceptTask(store, { task: newTask(userId, 6, { now: new Date() }) });
    await expect(refused).rejects.toMatchObject({ scope: 'account', limit: 5 });
    const daily = await admin(['credits', 'limit', '--user', userId, '--spend-limit', '5', '--per', 'day']);
    const both = await admin(['credits', 'limit', '--user', userId, '--none', '--spend-limit', '5']);
    const removed = await admin(['credits', 'limit', '--user', userId, '--none']);
    const accepted = await acceptTask(store, { task: newTask(userId, 6, { now: new Date() }) });

    // Assert
    expect(none.json).toEqual({ userId, spendLimit: null });
    expect(set.code).toBe(0);
    expect(set.json).toMatchObject({ userId, spendLimit: { credits: 5, period: 'month', spent: 0 } });
    expect([daily.code, both.code]).toEqual([2, 2]);
    expect(daily.error).toEqual({ error: '--per must be month: the account-wide limit is monthly' });
    expect(removed.json).toEqual({ userId, spendLimit: null });
    expect(accepted.task.creditsUsed).toBe(6);
  });

  it('credits usage prints the usage report the API gives, and refuses a bad range with the option named', async () => {
    // Prepare: one accepted task of 3 credits with a key, one of 2 from the dashboard, today.
    const userId = 'cli-usage';
    await grantCredits(store, { userId, amount: 20 });
    const now = new Date();
    await acceptTask(store, { task: newTask(userId, 3, { keyId: 'key-cli', now }) });
    await acceptTask(store, { task: newTask(userId, 2, { keyId: undefined, model: 'image-model-2', now }) });

    // Act
    const byKey = await admin(['credits', 'usage', '--user', userId, '--group-by', 'key']);
    const byDay = await admin(['credits', 'usage', '--user', userId]);
    const reversed = await admin(['credits', 'usage', '--user', userId, '--from', '2026-11-02', '--to', '2026-11-01']);
    const badGroup = await admin(['credits', 'usage', '--user', userId, '--group-by', 'week']);

    // Assert
    expect(byKey.code).toBe(0);
    expect(byKey.json).toMatchObject({
      userId,
      groupBy: 'key',
      totals: { debited: 5, refunded: 0, net: 5, tasks: { accepted: 2, pending: 2 } },
    });
    expect((byKey.json.rows as Array<Record<string, unknown>>).map((row) => [row.group, row.debited])).toEqual([
      ['key-cli', 3],
      ['session', 2],
    ]);
    expect(byDay.json.rows).toHaveLength(30);
    expect([reversed.code, badGroup.code]).toEqual([2, 2]);
    expect(reversed.error).toEqual({ error: '--from: Must not be after to' });
    expect(badGroup.error).toEqual({ error: '--group-by: Must be one of day, key, model' });
  });

  it('alerts set, show and clear the low-balance threshold; credits grant re-arms a credits.low that was sent', async () => {
    // Prepare: an account whose credits.low was sent (its marker is set, as the dispatcher sets it).
    const userId = 'cli-user-alerts';
    await grantCredits(store, { userId, amount: 5 });
    await setLowBalanceThreshold(store, { userId, threshold: 10, now: new Date() });
    await store.doc.send(
      new PutCommand({
        TableName: store.tableName,
        Item: {
          ...webhookKeys.lowBalanceMarker(userId),
          userId,
          markerId: 'evt_0123456789abcdef0123456789abcdef',
          sentAt: new Date().toISOString(),
        },
      }),
    );

    // Act
    const sent = await admin(['alerts', 'show', '--user', userId]);
    const granted = await admin(['credits', 'grant', '--user', userId, '--amount', '20']);
    const rearmed = await admin(['alerts', 'show', '--user', userId]);
    const set = await admin(['alerts', 'set', '--user', userId, '--low-balance', '50']);
    const bad = await admin(['alerts', 'set', '--user', userId, '--low-balance', '-3']);
    const fraction = await admin(['alerts', 'set', '--user', userId, '--low-balance', '2.5']);
    const cleared = await admin(['alerts', 'clear', '--user', userId]);
    const events = await admin(['webhooks', 'events', '--user', userId]);

    // Assert
    expect(sent.json).toEqual({ userId, lowBalanceThreshold: 10, lowBalanceSent: true });
    expect(granted.json).toEqual({ userId, balance: 25 });
    expect(rearmed.json).toEqual({ userId, lowBalanceThreshold: 10, lowBalanceSent: false });
    expect(set.json).toEqual({ userId, lowBalanceThreshold: 50, lowBalanceSent: false });
    expect([bad.code, fraction.code]).toEqual([2, 2]);
    expect(fraction.error).toEqual({ error: '--low-balance must be a whole number of credits from 0 to 1000000000' });
    expect(cleared.json).toEqual({ userId, lowBalanceThreshold: null, lowBalanceSent: false });
    expect(events.json).toEqual({ userId, events: [] });
    expect(await getAccountAlerts(store, userId)).toEqual({
      lowBalanceSent: false,
      lowBalanceMarkerId: expect.stringMatching(/^rearm_/),
    });
  });

  it.each([
    ['a malformed CIDR', ['--allow-ip', '10.0.0.300/8'], 'is not an IPv4/IPv6 address or CIDR block'],
    ['host bits below the prefix', ['--allow-ip', '10.0.0.1/8'], 'host bits must be zero'],
    ['an expiry in the past', ['--expires-at', '2020-01-01T00:00:00Z'], 'is not in the future'],
    ['an expiry that is not ISO', ['--expires-at', 'tomorrow'], 'must be an ISO 8601 date-time'],
    ['an expiry without a zone', ['--expires-at', '2099-01-01T00:00:00'], 'must be an ISO 8601 date-time'],
    ['an impossible date', ['--expires-at', '2099-02-30T00:00:00Z'], 'must be an ISO 8601 date-time'],
    ['an unknown flag', ['--scope', 'all'], 'unknown option --scope; run with --help'],
  ])('keys create with %s exits 2 and creates nothing', async (_label, extra, message) => {
    // Act
    const run = await admin(['keys', 'create', '--user', 'cli-user-4', '--name', 'x', ...extra]);

    // Assert
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.error).toEqual({ error: expect.stringContaining(message) });
    expect(await listApiKeys(store, 'cli-user-4')).toEqual([]);
  });

  it('keys rotate issues a new key, ends the old one, and keys revoke refuses the new one at once', async () => {
    // Prepare
    const created = await admin(['keys', 'create', '--user', 'cli-user-5', '--name', 'deploy']);
    const oldKeyId = String(created.json.keyId);

    // Act
    const rotated = await admin(['keys', 'rotate', '--key-id', oldKeyId, '--grace-seconds', '0']);
    const newKeyId = String(rotated.json.keyId);
    const revoked = await admin(['keys', 'revoke', '--key-id', newKeyId]);
    const listed = await admin(['keys', 'list', '--user', 'cli-user-5']);

    // Assert
    expect(rotated.code).toBe(0);
    expect(rotated.json).toEqual({
      keyId: expect.stringMatching(/^key_/),
      apiKey: expect.stringMatching(/^gsk_live_/),
      userId: 'cli-user-5',
      name: 'deploy',
      prefix: expect.stringMatching(/^gsk_live_/),
      allowedCidrs: [],
      expiresAt: null,
      spendLimit: null,
      previous: { keyId: oldKeyId, expiresAt: null, revokedAt: expect.any(String) },
      note: expect.stringContaining('not a second longer'),
    });
    expect(newKeyId).not.toBe(oldKeyId);
    expect(revoked.code).toBe(0);
    expect(revoked.json).toEqual({
      keyId: newKeyId,
      userId: 'cli-user-5',
      revokedAt: expect.any(String),
      alreadyRevoked: false,
      note: expect.stringContaining('Submits with this key are refused from now on'),
    });
    const statuses = (listed.json.keys as { keyId: string; status: string; replacedBy: string | null }[]).map((key) => [
      key.keyId,
      key.status,
      key.replacedBy,
    ]);
    expect(statuses).toEqual(
      expect.arrayContaining([
        [oldKeyId, 'revoked', newKeyId],
        [newKeyId, 'revoked', null],
      ]),
    );
    const auth = await authorizeKey(store, {
      authorization: `Bearer ${String(rotated.json.apiKey)}`,
      sourceIp: '192.0.2.1',
      now: new Date(),
    }).catch((error: unknown) => error);
    expect(auth).toMatchObject({ name: 'UnauthorizedError' });
  });

  it('keys rotate keeps the old key for the default grace and refuses to rotate it twice', async () => {
    // Prepare
    const created = await admin(['keys', 'create', '--user', 'cli-user-6', '--name', 'grace']);
    const before = Date.now();

    // Act
    const rotated = await admin(['keys', 'rotate', '--key-id', String(created.json.keyId)]);
    const again = await admin(['keys', 'rotate', '--key-id', String(created.json.keyId)]);

    // Assert
    expect(rotated.code).toBe(0);
    const previous = rotated.json.previous as { expiresAt: string; revokedAt: null };
    const graceEnd = Date.parse(previous.expiresAt);
    expect(graceEnd).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3600_000);
    expect(graceEnd).toBeLessThanOrEqual(Date.now() + 3600_000);
    expect(previous.revokedAt).toBeNull();
    expect(again.code).toBe(1);
    expect(again.error).toEqual({ error: expect.stringContaining('was already rotated') });
    expect(await listApiKeys(store, 'cli-user-6')).toHaveLength(2);
  });

  it.each([
    ['an unknown key id', ['keys', 'revoke', '--key-id', 'key_000000000000'], 1, 'API key not found'],
    ['a malformed key id', ['keys', 'revoke', '--key-id', 'gsk_live_oops'], 2, '--key-id must look like'],
    [
      'a negative grace',
      ['keys', 'rotate', '--key-id', 'key_000000000000', '--grace-seconds=-1'],
      2,
      '--grace-seconds',
    ],
    ['a list without user', ['keys', 'list'], 2, 'requires --user'],
  ])('keys with %s fails with a JSON error', async (_label, args, code, message) => {
    // Act
    const run = await admin(args);

    // Assert
    expect(run.code).toBe(code);
    expect(run.stdout).toBe('');
    expect(run.error).toEqual({ error: expect.stringContaining(message) });
  });

  it('accounts invite creates the account once, refuses another user for the same address; revoke-sessions signs out', async () => {
    // Prepare
    const session = await createSession(store, {
      userId: 'cli-invited',
      email: 'ada@example.test',
      idleSeconds: 3600,
      absoluteSeconds: 7200,
    });

    // Act
    const first = await admin(['accounts', 'invite', '--email', 'Ada@Example.test', '--user', 'cli-invited']);
    const again = await admin(['accounts', 'invite', '--email', 'ada@example.test', '--user', 'cli-invited']);
    const clash = await admin(['accounts', 'invite', '--email', 'ada@example.test', '--user', 'someone-else']);
    const bad = await admin(['accounts', 'invite', '--email', 'not-an-address']);
    const generated = await admin(['accounts', 'invite', '--email', 'bob@example.test']);
    const revoked = await admin(['accounts', 'revoke-sessions', '--user', 'cli-invited']);
    const balance = await admin(['credits', 'show', '--user', 'cli-invited']);
    const after = await getSessionByHash(store, hashSessionId(session.sessionId));

    // Assert
    expect(first).toMatchObject({ code: 0, json: { email: 'ada@example.test', userId: 'cli-invited', created: true } });
    expect(again).toMatchObject({ code: 0, json: { created: false } });
    expect(clash.code).toBe(2);
    expect(clash.error).toEqual({ error: 'ada@example.test is already invited as user cli-invited' });
    expect(bad.code).toBe(2);
    expect(generated.json).toMatchObject({ userId: expect.stringMatching(/^usr_[0-9a-f]{16}$/), created: true });
    expect(revoked).toMatchObject({ code: 0, json: { userId: 'cli-invited', sessionsRevoked: 1 } });
    expect(after?.revokedAt).toEqual(expect.any(Number));
    expect(balance.json).toEqual({ userId: 'cli-invited', balance: 0 });
  });

  it('audit reports every user and exits 1 once a balance differs from its ledger', async () => {
    // Prepare
    await admin(['credits', 'grant', '--user', 'cli-user-7', '--amount', '10']);

    // Act
    const healthy = await admin(['audit', '--user', 'cli-user-7']);
    const all = await admin(['audit']);
    await store.doc.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: keys.account('cli-user-7'),
        UpdateExpression: 'ADD #balance :one',
        ExpressionAttributeNames: { '#balance': 'balance' },
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
    const broken = await admin(['audit']);

    // Assert
    expect(healthy.code).toBe(0);
    expect(healthy.json).toEqual({
      ok: true,
      users: [expect.objectContaining({ userId: 'cli-user-7', balance: 10, ledgerSum: 10, ok: true })],
    });
    expect(all.code).toBe(0);
    expect(all.json.ok).toBe(true);
    expect(broken.code).toBe(1);
    expect(broken.json.ok).toBe(false);
    expect(broken.json.users).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ userId: 'cli-user-7', balance: 11, ledgerSum: 10, ok: false }),
      ]),
    );
    expect(broken.error).toEqual({ error: expect.stringContaining('audit failed') });
  });

  // As the bin: a connection refused reaches `main` as the SDK's wrapper of an Error of another realm
  // under jest, not as the ECONNREFUSED the bin explains, so the unreachable cases run as processes.
  it('as the bin: follows the running npm start (its recorded DynamoDB Local and table) unless told otherwise', async () => {
    // Prepare
    const dataDir = await mkdtemp(join(tmpdir(), 'cli-state-'));
    await grantCredits(store, { userId: 'cli-follow', amount: 7 });
    const remove = writeStackState(dataDir, 0, {
      pid: process.pid,
      dynamodbEndpoint: store.endpoint,
      tableName: store.tableName,
      apiUrl: 'http://127.0.0.1:1',
    });
    const unset = { TABLE_NAME: '', DYNAMODB_PORT: '', DATA_DIR: dataDir };

    // Act
    const [followed, overridden] = await Promise.all([
      adminBin(['credits', 'show', '--user', 'cli-follow'], unset),
      adminBin(['credits', 'show', '--user', 'cli-follow'], { ...unset, DYNAMODB_PORT: '1' }),
    ]);
    remove();
    const stopped = await adminBin(['credits', 'show', '--user', 'cli-follow'], {
      ...unset,
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:1',
    });

    // Assert
    expect(followed.code).toBe(0);
    expect(followed.json).toEqual({ userId: 'cli-follow', balance: 7 });
    expect(overridden.code).toBe(1);
    expect(overridden.error).toEqual({
      error: expect.stringContaining('cannot reach table generation-service on DynamoDB Local at http://127.0.0.1:1'),
    });
    expect(stopped.code).toBe(1);
    expect(stopped.error).toEqual({ error: expect.stringContaining('http://127.0.0.1:1') });
    await rm(dataDir, { recursive: true, force: true });
  });

  it('finds an in-memory start by its API port, and a new start clears records of starts that were killed', async () => {
    // Prepare: a private run directory, a record of a start whose process is gone, one of a live start
    const runDir = await mkdtemp(join(tmpdir(), 'cli-run-'));
    const runEnv = { XDG_RUNTIME_DIR: runDir };
    await grantCredits(store, { userId: 'cli-in-memory', amount: 4 });
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid;
    const stack = { dynamodbEndpoint: store.endpoint, tableName: store.tableName, apiUrl: 'http://127.0.0.1:1' };
    writeStackState(':memory:', 4101, { ...stack, pid: deadPid }, runEnv);
    const stale = join(runDir, 'generation-service', 'in-memory-4101.json');
    const staleBefore = existsSync(stale);

    // Act
    const remove = writeStackState(':memory:', 4102, { ...stack, pid: process.pid }, runEnv);
    const unset = { TABLE_NAME: '', DYNAMODB_PORT: '', ...runEnv };
    const byPort = await admin(['credits', 'show', '--user', 'cli-in-memory'], { ...unset, PORT: '4102' });
    const byBase = await admin(['credits', 'show', '--user', 'cli-in-memory'], {
      ...unset,
      DATA_DIR: ':memory:',
      PORT_BASE: '4102',
    });
    const deadOne = await admin(['credits', 'show', '--user', 'cli-in-memory'], {
      ...unset,
      DATA_DIR: ':memory:',
      PORT: '4101',
    });
    remove();

    // Assert
    expect(staleBefore).toBe(true);
    expect(existsSync(stale)).toBe(false);
    expect(byPort).toMatchObject({ code: 0, json: { userId: 'cli-in-memory', balance: 4 } });
    expect(byBase).toMatchObject({ code: 0, json: { userId: 'cli-in-memory', balance: 4 } });
    expect(deadOne.code).toBe(2);
    expect(deadOne.error).toEqual({
      error: expect.stringContaining('no in-memory local stack (DATA_DIR=:memory:) is running on port 4101'),
    });
    expect(statSync(join(runDir, 'generation-service')).mode & 0o777).toBe(0o700);
    await rm(runDir, { recursive: true, force: true });
  });

  it('as the bin: explains a stopped local stack and a missing table, and requires TABLE_NAME with --aws', async () => {
    // Act: three processes at once (each on settings of its own)
    const [unreachable, missingTable, awsWithoutTable] = await Promise.all([
      adminBin(['credits', 'show', '--user', 'u'], { DYNAMODB_PORT: '1' }),
      adminBin(['credits', 'show', '--user', 'u'], { TABLE_NAME: `${store.tableName}-none` }),
      adminBin(['credits', 'show', '--user', 'u', '--aws'], { TABLE_NAME: '' }),
    ]);

    // Assert
    expect(unreachable.code).toBe(1);
    expect(unreachable.error).toEqual({ error: expect.stringContaining('cannot reach table') });
    expect(missingTable.code).toBe(1);
    expect(missingTable.error).toEqual({ error: expect.stringContaining('does not exist') });
    expect(awsWithoutTable.code).toBe(2);
    expect(awsWithoutTable.error).toEqual({ error: expect.stringContaining('--aws needs TABLE_NAME') });
  });
  it('limits set gives an account its own per-key plan, limits show reads it, limits reset goes back to the default', async () => {
    // Act
    const before = await admin(['limits', 'show', '--user', 'cli-limits']);
    const set = await admin([
      'limits',
      'set',
      '--user',
      'cli-limits',
      '--rate',
      '5',
      '--burst',
      '10',
      '--quota',
      '1000',
    ]);
    const shown = await admin(['limits', 'show', '--user', 'cli-limits']);
    const reset = await admin(['limits', 'reset', '--user', 'cli-limits']);
    const after = await admin(['limits', 'show', '--user', 'cli-limits'], {
      KEY_RATE_LIMIT: '7',
      KEY_BURST_LIMIT: '9',
    });

    // Assert
    expect([before.code, set.code, shown.code, reset.code, after.code]).toEqual([0, 0, 0, 0, 0]);
    expect(before.json).toEqual({ userId: 'cli-limits', own: false, ratePerSecond: 100, burst: 200, dailyQuota: null });
    expect(set.json).toMatchObject({ userId: 'cli-limits', own: true, ratePerSecond: 5, burst: 10, dailyQuota: 1000 });
    expect(set.json.note).toEqual(expect.stringContaining('bucket of its own'));
    expect(shown.json).toEqual({ userId: 'cli-limits', own: true, ratePerSecond: 5, burst: 10, dailyQuota: 1000 });
    expect(reset.json).toMatchObject({ own: false, hadOwnPlan: true });
    expect(after.json).toEqual({ userId: 'cli-limits', own: false, ratePerSecond: 7, burst: 9, dailyQuota: null });
  });

  it('limits set explains bad numbers and needs the usage plan with --aws; nothing is written', async () => {
    // Act
    const fraction = await admin(['limits', 'set', '--user', 'cli-limits-bad', '--rate', '0.5', '--burst', '10']);
    const tooBig = await admin(['limits', 'set', '--user', 'cli-limits-bad', '--rate', '20000', '--burst', '10']);
    const noBurst = await admin(['limits', 'set', '--user', 'cli-limits-bad', '--rate', '5']);
    const awsWithoutPlan = await admin(['limits', 'set', '--user', 'u', '--rate', '5', '--burst', '5', '--aws']);
    const shown = await admin(['limits', 'show', '--user', 'cli-limits-bad']);

    // Assert
    expect(fraction.code).toBe(2);
    expect(fraction.error).toEqual({ error: '--rate must be a whole number of at least 1, got "0.5"' });
    expect(tooBig.code).toBe(2);
    expect(tooBig.error).toEqual({ error: '--rate must be a whole number from 1 to 10000' });
    expect(noBurst.code).toBe(2);
    expect(noBurst.error).toEqual({ error: 'limits set requires --burst' });
    expect(awsWithoutPlan.code).toBe(2);
    expect(awsWithoutPlan.error).toEqual({ error: expect.stringContaining('needs USAGE_PLAN_ID') });
    expect(shown.json).toMatchObject({ own: false });
  });
});
