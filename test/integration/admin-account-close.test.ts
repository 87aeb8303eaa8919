/**
 * `npm run admin -- accounts close --user U --confirm` (issue 40): the operator's front door onto the
 * closing rule of POST /api/account/close (functions/lifecycle/close-account.ts), on DynamoDB Local
 * and a data directory laid out as `npm start` lays it out. One run is the bundled CLI as a subprocess
 * (exactly what `npm run admin` runs: one JSON object on stdout, exit 0); the others call the CLI's
 * `main` in this process, which parses, resolves the target and prints as the subprocess does, without
 * a Node start and a bundle each.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { main } from '../../bin/admin';
import { issueKey } from '../../functions/auth/key-issuing';
import { usageKeyName } from '../../functions/core/rate-plan';
import { hashSessionId } from '../../functions/core/session';
import { checkedUploadKey, uploadKey } from '../../functions/core/uploads';
import { mediaKey } from '../../functions/media/port';
import { acceptTask } from '../../functions/money/accept';
import { grantCredits } from '../../functions/money/grant';
import { getClosedAt } from '../../functions/store/account-closure';
import { getBalance } from '../../functions/store/accounts';
import { auditUser } from '../../functions/store/ledger';
import { createSession, getSessionByHash } from '../../functions/store/sessions';
import { completeTask, getTask } from '../../functions/store/tasks';
import { getUpload, putUpload } from '../../functions/store/uploads';
import { localUsageEnrollment } from '../../local/usage-plans';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newTask, newUserId } from '../support/store-fixtures';

// The subprocess builds the CLI's bundle first when a source is newer.
jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '../..');
const CLI = resolve(ROOT, 'bin/run-admin.cjs');

interface Run {
  code: number;
  stdout: string;
  json: Record<string, unknown>;
  error?: Record<string, unknown>;
}

/** Output that is not one JSON object is kept as it is, so an assertion on it shows what came instead. */
function jsonOf(text: string): Record<string, unknown> {
  try {
    return text.trim() ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    return { notOneJsonObject: text };
  }
}

function parsed(stdout: string, stderr: string, code: number): Run {
  return { code, stdout, json: jsonOf(stdout), ...(stderr.trim() ? { error: jsonOf(stderr) } : {}) };
}

let store: TestStore;
let dataDir: string;
let env: NodeJS.ProcessEnv;

/** The CLI in this process: its output captured, nothing printed. */
async function admin(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const out = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await main(args, { ...env, ...extraEnv });
    return parsed(stdout, stderr, code);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** The bundled CLI as `npm run admin` runs it. */
function adminProcess(args: string[]): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env }, (error, stdout, stderr) => {
      done(parsed(stdout, stderr, error ? (typeof error.code === 'number' ? error.code : -1) : 0));
    });
  });
}

async function writeObject(dir: string, key: string): Promise<string> {
  const file = join(dir, ...key.split('/'));
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, 'bytes');
  return file;
}

beforeAll(async () => {
  store = await createTestStore();
  dataDir = await mkdtemp(join(tmpdir(), 'admin-close-'));
  const { TABLE_NAME: _t, DYNAMODB_PORT: _p, DYNAMODB_ENDPOINT: _e, PORT: _a, PORT_BASE: _b, ...rest } = process.env;
  // DATA_DIR names where this "stack" keeps its files; no start runs there, so the CLI uses the table given.
  env = { ...rest, TABLE_NAME: store.tableName, DYNAMODB_PORT: new URL(store.endpoint).port, DATA_DIR: dataDir };
});

afterAll(async () => {
  await store.dispose();
  await rm(dataDir, { recursive: true, force: true });
});

/** An account with credits, a key enrolled in the gateway stand-in, a session, a queued and an ended task, an upload. */
async function populated() {
  const userId = newUserId();
  const usage = localUsageEnrollment(() => store);
  await grantCredits(store, { userId, amount: 50 });
  const key = await issueKey(store, usage, { userId, name: 'closing', allowedCidrs: [] });
  const session = await createSession(store, {
    userId,
    email: `${userId}@example.test`,
    idleSeconds: 3600,
    absoluteSeconds: 7200,
  });
  const queued = (await acceptTask(store, { task: newTask(userId, 4, { keyId: key.keyId, now: new Date() }) })).task;
  const ended = (await acceptTask(store, { task: newTask(userId, 3, { keyId: key.keyId, now: new Date() }) })).task;
  const resultKey = `${mediaKey(userId, ended.taskId, 0)}.png`;
  await completeTask(store, { userId, taskId: ended.taskId, resultKeys: [resultKey], now: new Date() });
  const resultFile = await writeObject(join(dataDir, 'media'), resultKey);
  const uploadId = randomUUID();
  const now = new Date();
  await putUpload(store, {
    userId,
    uploadId,
    key: uploadKey(userId, uploadId),
    contentType: 'image/png',
    declaredBytes: 5,
    maxBytes: 5,
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + 3_600_000).toISOString(),
  });
  const uploadFile = await writeObject(join(dataDir, 'uploads'), uploadKey(userId, uploadId));
  // The checked copy a submit made of this version: named by the stand-in's ETag (its sidecar).
  const etag = '"5d41402abc4b2a76b9719d911017c592"';
  await writeFile(join(dirname(uploadFile), `.${uploadId}.etag`), etag);
  const checkedFile = await writeObject(join(dataDir, 'uploads'), checkedUploadKey(userId, uploadId, etag));
  return { userId, key, session, queued, ended, uploadId, files: [resultFile, uploadFile, checkedFile] };
}

describe('admin accounts close', () => {
  it('refuses without --confirm and changes nothing; closes with it, as the API does, once', async () => {
    // Prepare
    const account = await populated();
    const { userId } = account;
    const gatewayKey = {
      PK: `LOCALAPIKEY#${usageKeyName(store.tableName, { credential: 'key', keyId: account.key.keyId })}`,
      SK: 'LOCALAPIKEY',
    };

    // Act
    const unconfirmed = await admin(['accounts', 'close', '--user', userId]);
    const closedAtBefore = await getClosedAt(store, userId);
    const closed = await adminProcess(['account', 'close', '--user', userId, '--confirm']);
    const again = await admin(['accounts', 'close', '--user', userId, '--confirm']);
    const unknown = await admin(['accounts', 'close', '--user', newUserId(), '--confirm']);

    // Assert: refused, nothing written.
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.error?.error).toContain('add --confirm');
    expect(unconfirmed.json).toEqual({});
    expect(closedAtBefore).toBeUndefined();
    // Closed: the report of the one rule, exit 0, one JSON object on stdout and nothing on stderr.
    expect(closed.error).toBeUndefined();
    expect(closed).toMatchObject({
      code: 0,
      json: {
        userId,
        firstClosure: true,
        keysRevoked: 1,
        sessionsEnded: 1,
        tasksCancelled: 1,
        creditsRefunded: 4,
        tasksDeleted: 2,
        tasksStillRunning: 0,
        uploadsDeleted: 1,
        balance: 50 - 3,
        complete: true,
      },
    });
    expect(await getClosedAt(store, userId)).toEqual(closed.json.closedAt);
    expect((await getSessionByHash(store, hashSessionId(account.session.sessionId)))?.revokedAt).toEqual(
      expect.any(Number),
    );
    expect((await store.doc.send(new GetCommand({ TableName: store.tableName, Key: gatewayKey }))).Item).toMatchObject({
      deleted: true,
    });
    expect(await getTask(store, userId, account.queued.taskId)).toBeUndefined();
    expect(await getTask(store, userId, account.ended.taskId)).toBeUndefined();
    expect(await getUpload(store, userId, account.uploadId, new Date())).toBeUndefined();
    expect(account.files.filter((file) => existsSync(file))).toEqual([]);
    expect(await auditUser(store, userId)).toMatchObject({ ok: true, balance: 47 });
    // Again: nothing left to do, said so, still exit 0.
    expect(again).toMatchObject({
      code: 0,
      json: { firstClosure: false, keysRevoked: 0, tasksCancelled: 0, tasksDeleted: 0, uploadsDeleted: 0, balance: 47 },
    });
    expect(await getBalance(store, userId)).toBe(47);
    // An account the table does not know: exit 1, and no closure recorded for it.
    expect(unknown.code).toBe(1);
    expect(unknown.error?.error).toMatch(/^no account /);
  });

  it('--help explains it; --aws without the media bucket is a usage error before any store call', async () => {
    // Prepare
    const userId = newUserId();
    await grantCredits(store, { userId, amount: 1 });

    // Act
    const help = await admin(['account', 'close', '--help']);
    const noPlan = await admin(['accounts', 'close', '--user', userId, '--confirm', '--aws']);
    // With a plan id but no bucket: refused before the table (a real AWS one here) is read.
    const noBucket = await admin(['accounts', 'close', '--user', userId, '--confirm', '--aws'], {
      USAGE_PLAN_ID: 'plan-1',
    });

    // Assert
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('accounts close --user U --confirm');
    expect(noPlan).toMatchObject({ code: 2, error: { error: expect.stringContaining('USAGE_PLAN_ID') } });
    expect(noBucket).toMatchObject({
      code: 2,
      error: { error: expect.stringContaining('MEDIA_BUCKET and UPLOADS_BUCKET') },
    });
    expect(await getClosedAt(store, userId)).toBeUndefined();
  });
});
