/**
 * Storage faults: the local stack (a child process, `local/start.ts`) on a DynamoDB Local this file runs
 * itself, with its data on disk. Under a load of submits and polls, DynamoDB Local is stopped and later
 * started again on the same port and data directory. While it is down every request fails cleanly (a
 * 5xx with the documented body, and no request runs into the client's timeout); afterwards every
 * accepted task exists and ends, and every balance equals the sum of its ledger and the initial credits
 * minus what the kept (not refunded) tasks cost.
 *
 * A submit answered with a 5xx may or may not have created its task (the transaction can commit while
 * the answer is lost), so the credit check runs over every task in the table, not only the 202s.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { auditAll } from '../../functions/store/ledger';
import * as keys from '../../functions/store/task-keys';
import {
  DYNAMODB_LOCAL_CLIENT_CONFIG,
  type DynamoDbLocalHandle,
  findFreePort,
  startDynamoDbLocal,
} from '../../local/dynamodb-local';
import { type SpawnedLocalStack, spawnLocalStack } from '../../local/spawn-local-stack';

// Two JVM starts, a child stack and a bounded recovery on a 2-core machine: generous, never timed.
jest.setTimeout(300_000);

const TABLE_NAME = 'storage-faults';
/** Inside API Gateway's 29 s: a request still unanswered then counts as hung. */
const REQUEST_TIMEOUT_MS = 25_000;
/** The child stack's start: generous, for a loaded machine. */
const READY_TIMEOUT_MS = 180_000;
const RECOVERY_TIMEOUT_MS = 150_000;
/** A wait for the load to reach a state (tasks accepted, requests answered during the outage). */
const LOAD_WAIT_MS = 60_000;
const INITIAL_CREDITS = 10_000;
const LOOPS_PER_USER = 2;
/**
 * The pause of each load loop between its requests: four loops keep requests in flight at every moment
 * (the outage meets them), and each request through the gateway, the authorizer and DynamoDB Local
 * costs CPU on a machine the rest of the suite shares (at 50 ms the loops sent several times more).
 */
const LOAD_PAUSE_MS = 250;

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

type Phase = 'up' | 'stopping' | 'down' | 'starting' | 'recovered';

interface Outcome {
  what: string;
  startPhase: Phase;
  endPhase: Phase;
  /** HTTP status, or 0 when no answer came (connection failure or client timeout). */
  status: number;
  body: unknown;
  timedOut: boolean;
  failure?: string;
}

interface User {
  userId: string;
  /** Used from the start: its authorizer Allow is cached by the gateway. */
  apiKey: string;
  /** First used while DynamoDB is down: the authorizer itself must fail cleanly. */
  freshKey: string;
}

describe('storage faults: DynamoDB Local stopped and restarted under load', () => {
  let workDir: string;
  let dynamoPort: number;
  let dynamo: DynamoDbLocalHandle | undefined;
  let stack: SpawnedLocalStack | undefined;
  let store: StoreContext | undefined;
  let baseUrl: string;
  const users: User[] = [];

  let phase: Phase = 'up';
  const outcomes: Outcome[] = [];
  /** 202 answers: task id -> owner. */
  const accepted = new Map<string, User>();

  async function call(what: string, path: string, apiKey: string, body?: unknown): Promise<Outcome> {
    const startPhase = phase;
    const outcome: Outcome = { what, startPhase, endPhase: startPhase, status: 0, body: undefined, timedOut: false };
    try {
      const response = await fetch(`${baseUrl}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      outcome.status = response.status;
      const text = await response.text();
      try {
        outcome.body = JSON.parse(text);
      } catch {
        outcome.body = text;
      }
    } catch (error) {
      const name = (error as Error).name;
      outcome.timedOut = name === 'TimeoutError' || name === 'AbortError';
      outcome.failure = `${name}: ${(error as Error).message}`;
    }
    outcome.endPhase = phase;
    outcomes.push(outcome);
    return outcome;
  }

  async function submit(user: User, apiKey = user.apiKey): Promise<Outcome> {
    const outcome = await call('submit', '/api/ai/image/generate', apiKey, {
      model: 'image-model-1',
      prompt: 'storage fault load',
      providerInput: { mockDelayMs: 300 },
    });
    const taskId = (outcome.body as { taskId?: unknown } | undefined)?.taskId;
    if (outcome.status === 202 && typeof taskId === 'string') accepted.set(taskId, user);
    return outcome;
  }

  function taskIdsOf(user: User): string[] {
    return [...accepted].filter(([, owner]) => owner === user).map(([taskId]) => taskId);
  }

  /** Submits and polls (a GET of one of the user's accepted tasks) until told to stop. */
  async function loadLoop(user: User, seed: number, running: () => boolean): Promise<void> {
    for (let i = seed; running(); i++) {
      if (i % 2 === 0) await submit(user);
      else {
        const ids = taskIdsOf(user);
        const taskId = ids[i % Math.max(1, ids.length)];
        if (taskId) await call('get', `/api/ai/tasks/${encodeURIComponent(taskId)}`, user.apiKey);
      }
      await sleep(LOAD_PAUSE_MS);
    }
  }

  async function startStack(): Promise<void> {
    stack = await spawnLocalStack({
      readyTimeoutMs: READY_TIMEOUT_MS,
      env: {
        DYNAMODB_ENDPOINT: `http://127.0.0.1:${dynamoPort}`,
        DATA_DIR: join(workDir, 'stack'),
        TABLE_NAME,
        PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
        SWEEPER_INTERVAL_SECONDS: '1',
        // A create the upstream took while the table was down cannot record its id: its outcome is
        // unknown (never resent), and its callback, sent during the outage, was lost. It ends at this
        // limit, refunded, instead of the deployed default's 10 minutes.
        PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS: '2',
        // The dispatcher's pause after a failed send (deployed 1 s): short, the recovery waits less.
        PROVIDER_MIN_BACKOFF_MS: '200',
        // No authorizer cache (there is none since the authorizer takes session cookies too): during the
        // outage the authorizer itself meets the stopped table, and must answer a clean 500 as well.
        LOG_LEVEL: 'warn',
      },
    });
    baseUrl = stack.baseUrl;
  }

  /** Every task item of a user, read straight from the table (consistent, all pages). */
  async function tasksInTable(
    userId: string,
  ): Promise<{ taskId: string; status: number; creditsUsed: number; creditsRefunded: boolean }[]> {
    if (!store) throw new Error('no store');
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await store.doc.send(
        new QueryCommand({
          TableName: store.tableName,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :task)',
          ExpressionAttributeValues: { ':pk': keys.account(userId).PK, ':task': 'TASK#' },
          ConsistentRead: true,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      items.push(...(out.Items ?? []));
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return items.map((item) => ({
      taskId: String(item.taskId),
      status: Number(item.status),
      creditsUsed: Number(item.creditsUsed),
      creditsRefunded: item.creditsRefunded === true,
    }));
  }

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'storage-faults-'));
    dynamoPort = await findFreePort();
    await mkdir(join(workDir, 'dynamodb'));
    dynamo = await startDynamoDbLocal({ port: dynamoPort, dataDir: join(workDir, 'dynamodb') });
    await startStack();
    store = {
      doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: `http://127.0.0.1:${dynamoPort}` }),
      tableName: TABLE_NAME,
    };
    for (const userId of ['storage-user-a', 'storage-user-b']) {
      await grantCredits(store, { userId, amount: INITIAL_CREDITS });
      const used = await putApiKey(store, { userId, name: 'load' });
      const fresh = await putApiKey(store, { userId, name: 'first used during the outage' });
      users.push({ userId, apiKey: used.apiKey, freshKey: fresh.apiKey });
    }
  });

  afterAll(async () => {
    // Everything is stopped whatever failed: the child (SIGINT, then SIGKILL), DynamoDB Local, files.
    try {
      await stack?.stop();
    } finally {
      store?.doc.destroy();
      await dynamo?.stop();
      if (workDir) await rm(workDir, { recursive: true, force: true });
    }
  });

  it('fails cleanly while DynamoDB is down, and loses no task and no credit once it is back', async () => {
    // Prepare: load running, some tasks accepted.
    let running = true;
    const loops = users.flatMap((user) =>
      Array.from({ length: LOOPS_PER_USER }, (_, index) => loadLoop(user, index, () => running)),
    );
    const loadDeadline = Date.now() + LOAD_WAIT_MS;
    while (accepted.size < 8 && Date.now() < loadDeadline) await sleep(100);
    expect(accepted.size).toBeGreaterThanOrEqual(8);

    // Act 1: DynamoDB Local goes away in the middle of the load.
    phase = 'stopping';
    await dynamo?.stop();
    phase = 'down';
    const [userA, userB] = users as [User, User];
    const knownTask = taskIdsOf(userA)[0] ?? 'none';
    const probes = [
      await submit(userA),
      await call('get', `/api/ai/tasks/${knownTask}`, userA.apiKey),
      await submit(userB, userB.freshKey),
      await call('get', `/api/ai/tasks/${knownTask}`, userA.freshKey),
    ];
    // The outage lasts until the load has met it: beyond the probes, as many requests started and
    // answered while it was down as there are load loops (a fixed 3 s could pass with none of them
    // answered when a loaded machine slowed each request).
    const answeredDuringOutage = () => outcomes.filter((o) => o.startPhase === 'down' && o.endPhase === 'down');
    const outageDeadline = Date.now() + LOAD_WAIT_MS;
    while (answeredDuringOutage().length < probes.length + loops.length && Date.now() < outageDeadline) {
      await sleep(100);
    }

    // Act 2: back on the same port and data directory.
    phase = 'starting';
    for (let attempt = 1; ; attempt++) {
      try {
        dynamo = await startDynamoDbLocal({ port: dynamoPort, dataDir: join(workDir, 'dynamodb') });
        break;
      } catch (error) {
        if (attempt >= 3) throw error;
        // A pause before trying again (the old JVM's port may linger); nothing to wait on instead.
        await sleep(2000);
      }
    }
    phase = 'recovered';
    const acceptedBefore = accepted.size;
    // Until the service takes work again; bounded generously, since on a loaded machine the restarted
    // JVM and the clients' reconnects can take far longer than on an idle one (the suite once failed
    // here with a 30 s bound while other test runs shared the two cores).
    const recovered = () => outcomes.some((o) => o.startPhase === 'recovered' && o.status === 202);
    for (let wait = 0; wait < 1200 && (accepted.size < acceptedBefore + 4 || !recovered()); wait++) await sleep(100);
    running = false;
    await Promise.all(loops);

    // Act 3: wait (bounded) until every task in the table and every 202 has ended.
    const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
    let pending = Number.POSITIVE_INFINITY;
    while (pending > 0 && Date.now() < deadline) {
      pending = 0;
      for (const user of users) pending += (await tasksInTable(user.userId)).filter((task) => task.status === 0).length;
      if (pending > 0) await sleep(1000);
    }
    const reads = await Promise.all(
      [...accepted].map(([taskId, owner]) => call('final get', `/api/ai/tasks/${taskId}`, owner.apiKey)),
    );

    // Assert: nothing hung, nothing answered without a body, and the outage answered 5xx cleanly.
    const where = (o: Outcome) =>
      `${o.what} ${o.startPhase}->${o.endPhase}: ${o.status} ${JSON.stringify(o.body)} ${o.failure ?? ''}`;
    const cleanServerError = (o: Outcome) => {
      const body = o.body as Record<string, unknown>;
      return (
        o.status >= 500 &&
        o.status <= 599 &&
        typeof body === 'object' &&
        body !== null &&
        body.error === 'Internal error' &&
        Object.keys(body).every((key) => key === 'error' || (key === 'requestId' && typeof body.requestId === 'string'))
      );
    };
    expect(outcomes.filter((o) => o.timedOut || o.status === 0).map(where)).toEqual([]);
    expect(outcomes.filter((o) => o.status >= 500 && !cleanServerError(o)).map(where)).toEqual([]);
    expect(outcomes.filter((o) => ![200, 202].includes(o.status) && o.status < 500).map(where)).toEqual([]);
    expect(probes.filter((o) => !cleanServerError(o)).map(where)).toEqual([]);
    const duringOutage = answeredDuringOutage();
    expect(duringOutage.length).toBeGreaterThan(probes.length);
    expect(duringOutage.filter((o) => !cleanServerError(o)).map(where)).toEqual([]);

    // Assert: the service took work again once the table was back.
    expect(outcomes.some((o) => o.startPhase === 'recovered' && o.status === 202)).toBe(true);

    // Assert: every accepted task exists and ended; no credit lost or made.
    expect(pending).toBe(0);
    expect(
      reads.filter((o) => o.status !== 200 || ![1, 2].includes((o.body as { status: number }).status)).map(where),
    ).toEqual([]);
    const audit = await auditAll(store as StoreContext);
    expect(audit.users.filter((user) => !user.ok)).toEqual([]);
    for (const user of users) {
      const tasks = await tasksInTable(user.userId);
      const inTable = new Set(tasks.map((task) => task.taskId));
      expect(taskIdsOf(user).filter((taskId) => !inTable.has(taskId))).toEqual([]);
      const kept = tasks.filter((task) => !task.creditsRefunded).reduce((sum, task) => sum + task.creditsUsed, 0);
      const balance = audit.users.find((entry) => entry.userId === user.userId)?.balance;
      expect(balance).toBe(INITIAL_CREDITS - kept);
    }
  });
});
