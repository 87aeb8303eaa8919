/**
 * Signed webhooks out, black box: a local stack of this file's own (so the suite's stack keeps the real
 * retry schedule) with a short schedule (1 s between attempts) and a test receiver, a real HTTP server
 * on a free port, named as the one local endpoint allowed over plain http. The signing secret comes
 * from the operator CLI, as an operator would get it (its `main` in this process: the bin itself is
 * test/integration/admin-cli.test.ts's); every delivery is verified with the `standardwebhooks`
 * package's `Webhook.verify`.
 *
 * The stack's pollers keep its DynamoDB Local busy for as long as it runs, so this file's CPU follows
 * its wall clock: the scenarios after the first checks run side by side (`test.concurrent`), each on an
 * account and a receiver path of its own.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient } from '../../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { freePorts } from '../../local/spawn-local-stack';
import { type AdminRun, adminInProcess } from '../support/admin-cli';
import { spawnTestStack, type TestStack } from '../support/test-stack';
import { IMAGE_PATH, taskPath } from './support/api';
import { loadTarget } from './support/target';

const target = loadTarget();
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
/** Each wait for a state of this file's stack, on the wall clock: generous, for a loaded machine. */
const WAIT_MS = 120_000;
/** The stack's start (DynamoDB Local's JVM first): generous, for a loaded machine. */
const STACK_READY_MS = 180_000;
/** Jest's limit for a test that waits for `waits` such states, with room for the rest. */
const timeoutFor = (waits: number) => waits * WAIT_MS + 60_000;
const TABLE_NAME = 'generation-service-e2e-webhooks';
const USER = 'e2e-webhooks';
const HANG_USER = 'e2e-webhooks-default';
const REFUSED_USER = 'e2e-webhooks-refused';
const BOUND_USER = 'e2e-webhooks-bound';
/** This stack's bound on open deliveries per account (WEBHOOK_MAX_OPEN_DELIVERIES). */
const MAX_OPEN = 2;

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

if (target.runs('webhooks')) {
  describe('webhooks out, on a stack with a short retry schedule', () => {
    let stack: TestStack;
    let receiver: Server;
    let origin: string;
    const received: Received[] = [];
    const hanging = new Set<Socket>();
    const keys: Record<string, string> = {};
    let operatorEnv: NodeJS.ProcessEnv;

    /** The receiver: `/flaky` answers 500 the first time and 200 after, `/bound` always 500, `/hang` never answers. */
    function receive(request: IncomingMessage, response: ServerResponse) {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '';
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
        );
        received.push({ path, headers, body: Buffer.concat(chunks).toString('utf8') });
        if (path === '/hang') {
          hanging.add(request.socket);
          return;
        }
        const first = received.filter((entry) => entry.path === path).length === 1;
        response.writeHead(path === '/bound' || (path === '/flaky' && first) ? 500 : 200).end('ok');
      });
    }

    /** The operator CLI on this file's stack (its table on the stack's DynamoDB Local). */
    const admin = (args: string[]) => adminInProcess(args, operatorEnv);

    async function request(user: string, path: string, init: RequestInit = {}) {
      const response = await fetch(`${stack.baseUrl}${path}`, {
        ...init,
        headers: { Authorization: `Bearer ${keys[user]}`, 'Content-Type': 'application/json' },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    }

    const submit = (user: string, body: Record<string, unknown>) =>
      request(user, IMAGE_PATH, {
        method: 'POST',
        body: JSON.stringify({ model: 'image-model-1', prompt: 'tell me when done', ...body }),
      });

    /** GETs the task until it ends, or WAIT_MS of wall clock passed; the caller asserts on the answer. */
    async function pollUntilEnded(user: string, taskId: string) {
      const deadline = Date.now() + WAIT_MS;
      let task = await request(user, taskPath(taskId));
      while (task.body.status === 0 && Date.now() < deadline) {
        await sleep(250);
        task = await request(user, taskPath(taskId));
      }
      return task;
    }

    /** What the receiver got on `path`, once at least `count` requests came, or WAIT_MS passed. */
    async function receivedOn(path: string, count: number): Promise<Received[]> {
      const deadline = Date.now() + WAIT_MS;
      while (received.filter((entry) => entry.path === path).length < count && Date.now() < deadline) {
        await sleep(200);
      }
      return received.filter((entry) => entry.path === path);
    }

    /**
     * The operator's record of the task's deliveries once it holds `attempts` attempts, or WAIT_MS passed
     * (the receiver gets a request before the worker records its answer).
     */
    async function deliveriesWithAttempts(user: string, taskId: string, attempts: number) {
      const deadline = Date.now() + WAIT_MS;
      const recorded = ({ json }: AdminRun) =>
        ((json.attempts as unknown[] | undefined)?.length ?? 0) >= attempts &&
        Number((json.delivery as { attempts?: number } | null | undefined)?.attempts ?? 0) >= attempts;
      let deliveries = await admin(['webhooks', 'deliveries', '--user', user, '--task', taskId]);
      while (!recorded(deliveries) && Date.now() < deadline) {
        await sleep(500);
        deliveries = await admin(['webhooks', 'deliveries', '--user', user, '--task', taskId]);
      }
      return deliveries;
    }

    /** The ids of the user's tasks, newest first (the first page is plenty here). */
    async function taskIdsOf(user: string): Promise<string[]> {
      const listed = await request(user, '/api/ai/tasks?limit=100');
      return (listed.body.tasks as { taskId: string }[]).map((task) => task.taskId);
    }

    beforeAll(async () => {
      const [port] = await freePorts(1);
      origin = `http://127.0.0.1:${port}`;
      receiver = createServer(receive);
      await new Promise<void>((ready) => receiver.listen(port, '127.0.0.1', () => ready()));
      const settings = {
        TABLE_NAME,
        // The webhook worker and the dispatcher on their deployed triggers (local/deployed-driver.ts); the
        // Python client's e2e stack delivers a signed webhook under the fast loop.
        DISPATCH_DRIVER: 'deployed',
        WEBHOOK_INSECURE_ORIGINS: origin,
        WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1',
        WEBHOOK_MAX_OPEN_DELIVERIES: String(MAX_OPEN),
        WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64url'),
        SWEEPER_INTERVAL_SECONDS: '1',
        PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
        DYNAMODB_ENDPOINT: '',
        API_STAGE: '',
      };
      stack = await spawnTestStack({ readyTimeoutMs: STACK_READY_MS, env: settings });
      const { DYNAMODB_PORT: _p, DATA_DIR: _d, ...rest } = process.env;
      operatorEnv = { ...rest, ...settings, DYNAMODB_ENDPOINT: stack.dynamodbEndpoint };
      const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
      const store = { doc, tableName: TABLE_NAME };
      try {
        for (const user of [USER, HANG_USER, REFUSED_USER, BOUND_USER]) {
          await grantCredits(store, { userId: user, amount: 100, grantId: user });
          keys[user] = (await putApiKey(store, { userId: user, name: 'e2e webhooks' })).apiKey;
        }
      } finally {
        doc.destroy();
      }
    }, STACK_READY_MS + 60_000);

    afterAll(async () => {
      for (const socket of hanging) socket.destroy();
      await new Promise<void>((closed) => (receiver ? receiver.close(() => closed()) : closed()));
      await stack?.stop();
    });

    test('the stack runs the dispatcher and the webhook worker on their deployed triggers', () => {
      // Assert: the stack said so when it started (local/start.ts), before any request was logged
      expect(stack.output()).toContain('run on their deployed triggers (DISPATCH_DRIVER=deployed)');
    });

    test('a webhookUrl on a private address, a local name or plain http is a 400 naming the field, and never called', async () => {
      // Prepare: runs before the scenarios that submit for USER, so its tasks are its own to count
      const refused = [
        `https://127.0.0.1:${new URL(origin).port}/private`,
        'https://10.0.0.7/private',
        'https://169.254.169.254/private',
        'https://[::1]/private',
        `https://localhost:${new URL(origin).port}/private`,
        'http://example.com/private',
        'https://user:pw@example.com/private',
        'not a url',
      ];

      const tasksBefore = await taskIdsOf(USER);

      // Act
      const answers = await Promise.all(refused.map((webhookUrl) => submit(USER, { webhookUrl })));
      // Nothing to wait for: a refused request stores no task, so no delivery can ever follow it.
      const tasksAfter = await taskIdsOf(USER);

      // Assert
      for (const answer of answers) {
        expect(answer.status).toBe(400);
        expect(answer.body).toMatchObject({
          error: 'Invalid request',
          details: { fieldErrors: { webhookUrl: [expect.stringMatching(/^Must /)] } },
        });
      }
      expect(tasksAfter).toEqual(tasksBefore);
      expect(received.filter((entry) => entry.path === '/private')).toEqual([]);
    });

    test.concurrent(
      'a completed task is POSTed signed, retried after a 500 with the same webhook-id, both attempts recorded',
      async () => {
        // Prepare: the account's secret, printed once by the CLI
        const made = await admin(['webhooks', 'secret', '--user', USER]);
        const secret = String(made.json.secret);

        // Act
        const submitted = await submit(USER, { webhookUrl: `${origin}/flaky`, providerInput: { mockDelayMs: 200 } });
        const taskId = String(submitted.body.taskId);
        const task = await pollUntilEnded(USER, taskId);
        const [first, second] = await receivedOn('/flaky', 2);
        const deliveries = await deliveriesWithAttempts(USER, taskId, 2);

        // Assert: the secret's form, and the task ended on its own
        expect(made.code).toBe(0);
        expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
        expect(submitted.status).toBe(202);
        expect(task.body.status).toBe(1);
        // Both attempts verify, carry the same id, and hold the Task resource as GET shows it
        const webhook = new Webhook(secret);
        const payloads = [first, second].map((attempt) => webhook.verify(attempt?.body ?? '', attempt?.headers ?? {}));
        expect(first?.headers['webhook-id']).toMatch(/^msg_/);
        expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
        expect(payloads[1]).toEqual({ type: 'task.completed', timestamp: expect.any(String), data: task.body });
        expect(payloads[0]).toEqual(payloads[1]);
        // A body signed with another secret does not verify
        expect(() =>
          new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(first?.body ?? '', first?.headers ?? {}),
        ).toThrow();
        // The operator sees both attempts: the 500, then the 200
        expect(deliveries.json.delivery).toMatchObject({
          webhookId: first?.headers['webhook-id'],
          state: 'delivered',
          attempts: 2,
          eventType: 'task.completed',
        });
        expect(deliveries.json.attempts).toEqual([
          expect.objectContaining({ attempt: 1, statusCode: 500, error: null }),
          expect.objectContaining({ attempt: 2, statusCode: 200, error: null }),
        ]);
      },
      timeoutFor(2),
    );

    test.concurrent(
      'a receiver that never answers does not hold up the task; the attempt ends at its deadline and is recorded',
      async () => {
        // Prepare: the account's default endpoint hangs
        await admin(['webhooks', 'secret', '--user', HANG_USER]);
        const set = await admin(['webhooks', 'set', '--user', HANG_USER, '--url', `${origin}/hang`]);

        // Act
        const submitted = await submit(HANG_USER, { providerInput: { mockDelayMs: 200 } });
        const taskId = String(submitted.body.taskId);
        const task = await pollUntilEnded(HANG_USER, taskId);
        const calls = await receivedOn('/hang', 1);
        // The attempt is recorded when the product's own deadline (10 s) ends it: the product times out.
        const deliveries = await deliveriesWithAttempts(HANG_USER, taskId, 1);

        // Assert
        expect(set.json).toMatchObject({ url: `${origin}/hang`, hasSecret: true });
        expect(task.body.status).toBe(1);
        expect(calls.length).toBeGreaterThanOrEqual(1);
        expect((deliveries.json.attempts as unknown[])[0]).toMatchObject({
          attempt: 1,
          statusCode: null,
          error: 'No answer within 10 s',
        });
      },
      timeoutFor(3),
    );

    test.concurrent(
      'a task the provider refused at its first send sends no webhook; the next task of the account does',
      async () => {
        // Prepare: an account of its own (a secret made here would rotate another scenario's)
        await admin(['webhooks', 'secret', '--user', REFUSED_USER]);

        // Act: the refused one first, then one that completes, both to the same endpoint
        const refused = await submit(REFUSED_USER, {
          webhookUrl: `${origin}/refused`,
          providerInput: { mockOutcome: 'reject' },
        });
        const later = await submit(REFUSED_USER, {
          webhookUrl: `${origin}/refused`,
          providerInput: { mockDelayMs: 200 },
        });
        // The dispatcher sends after the 202: the refusal is learnt by polling.
        const refusedTask = await pollUntilEnded(REFUSED_USER, String(refused.body.taskId));
        const [event] = await receivedOn('/refused', 1);
        const refusedDelivery = await admin([
          'webhooks',
          'deliveries',
          '--user',
          REFUSED_USER,
          '--task',
          String(refused.body.taskId),
        ]);

        // Assert
        expect(refused).toMatchObject({ status: 202, body: { status: 0 } });
        expect(refusedTask.body).toMatchObject({ status: 2, errorCode: 'PROVIDER_REJECTED' });
        expect(later.status).toBe(202);
        expect(JSON.parse(event?.body ?? '{}')).toMatchObject({ data: { taskId: later.body.taskId } });
        expect(received.filter((entry) => entry.path === '/refused')).toHaveLength(1);
        expect(refusedDelivery.json).toMatchObject({ delivery: null, attempts: [] });
      },
      timeoutFor(2),
    );

    test.concurrent(
      'past the account bound on open deliveries, the next one waits queued and goes out once an earlier one gave up',
      async () => {
        // Prepare: the endpoint answers 500 to every attempt, so every delivery stays open for its whole
        // schedule (an endpoint that never answers would hold each attempt for the 10 s deadline instead)
        await admin(['webhooks', 'secret', '--user', BOUND_USER]);
        await admin(['webhooks', 'set', '--user', BOUND_USER, '--url', `${origin}/bound`]);

        // Act
        const taskIds: string[] = [];
        for (let n = 0; n <= MAX_OPEN; n++) {
          const submitted = await submit(BOUND_USER, { providerInput: { mockDelayMs: 200 } });
          taskIds.push(String(submitted.body.taskId));
        }
        for (const taskId of taskIds) await pollUntilEnded(BOUND_USER, taskId);
        const calledTask = (call: Received) => String(JSON.parse(call.body).data.taskId);
        // Every task's delivery is sent in the end: the one past the bound once a place freed
        const deadline = Date.now() + WAIT_MS * 2;
        let calls = await receivedOn('/bound', MAX_OPEN + 1);
        while (new Set(calls.map(calledTask)).size <= MAX_OPEN && Date.now() < deadline) {
          await sleep(500);
          calls = received.filter((entry) => entry.path === '/bound');
        }

        // Assert: nothing dropped, and the last task to be called waited until an earlier delivery had
        // been tried on its whole schedule (a first attempt and 3 retries, WEBHOOK_RETRY_DELAYS_SECONDS)
        const calledTasks = calls.map(calledTask);
        expect(new Set(calledTasks)).toEqual(new Set(taskIds));
        const lastStarted = [...new Set(calledTasks)].at(-1) ?? '';
        const before = calledTasks.slice(0, calledTasks.indexOf(lastStarted));
        const attemptsBefore = taskIds
          .filter((id) => id !== lastStarted)
          .map((id) => before.filter((t) => t === id).length);
        expect(Math.max(...attemptsBefore)).toBe(4);
      },
      timeoutFor(2 * MAX_OPEN + 4),
    );
  });
}
