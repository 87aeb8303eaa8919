/**
 * Section 5: DynamoDB requests per API call, counted. The real handlers run in-process against
 * DynamoDB Local; a middleware on the process's store client (`storeFromEnv().doc`, whose middleware
 * stack is the DynamoDBClient's own) counts every request by command. The authorizer's cache is API
 * Gateway's, so a hit is shown through the local gateway, which caches exactly like it.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import * as keys from '../functions/store/task-keys';
import { ROUTES } from '../lib/routes';
import { createGateway } from '../local/gateway';
import { attachRequestCounter } from '../test/support/request-counter';
import {
  type AuthorizerHandler,
  authorizerEvent,
  completedTask,
  createUser,
  lambdaContext,
  type ProxyHandler,
  proxyEvent,
  startInProcessEnv,
} from './in-process';
import { bounded, out, runCleanups, table } from './support';

interface Row {
  call: string;
  counts: Record<string, number>;
  providerCalls: string;
  expected: Record<string, number>;
}

/** `{ GetItemCommand: 1, UpdateItemCommand: 2 }` → `GetItem 1 + UpdateItem 2`. */
function describe(counts: Record<string, number>): string {
  const parts = Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, n]) => `${name.replace(/Command$/, '')} ${n}`);
  return parts.length > 0 ? parts.join(' + ') : 'none';
}

const REFRESH_SECONDS = 1;
const waitOutInterval = () => new Promise((r) => setTimeout(r, REFRESH_SECONDS * 1000 + 100));

const total = (counts: Record<string, number>) => Object.values(counts).reduce((sum, n) => sum + n, 0);

export async function requestCounts(): Promise<void> {
  out('## 5. DynamoDB requests per API call');
  out();
  try {
    // A 1 s refresh interval, waited out below, makes "the interval elapsed" cheap to reach.
    const env = await startInProcessEnv({ providerDelayMs: 0, refreshIntervalSeconds: REFRESH_SECONDS });
    const counter = attachRequestCounter(env.store.doc);
    const rows: Row[] = [];

    // The document client shares the DynamoDBClient's middleware stack (lib-dynamodb's constructor
    // assigns it), so one counter sees document and plain commands alike. Checked, not assumed:
    const user = await createUser(env.store, 1000);
    const verifyTask = await completedTask(env.store, user.userId, user.keyId);
    counter.reset();
    await env.store.doc.send(
      new GetCommand({ TableName: env.store.tableName, Key: keys.task(user.userId, verifyTask) }),
    );
    const verification = describe(counter.counts);
    if (verification !== 'GetItem 1') throw new Error(`the request counter is not attached: saw ${verification}`);

    const submit = (await import('../functions/submit-image/handler')) as { handler: ProxyHandler };
    const getTask = (await import('../functions/get-task/handler')) as { handler: ProxyHandler };
    const authorizer = (await import('../functions/authorizer/handler')) as { handler: AuthorizerHandler };
    const stats = env.provider.stats;

    async function measure(call: string, expected: Record<string, number>, act: () => Promise<unknown>): Promise<void> {
      counter.reset();
      stats.reset();
      await act();
      const provider = [
        stats.createTaskCalls > 0 ? `createTask ${stats.createTaskCalls}` : '',
        stats.totalGetTaskCalls > 0 ? `recordInfo ${stats.totalGetTaskCalls}` : '',
        stats.fileDownloads > 0 ? `result download ${stats.fileDownloads}` : '',
      ].filter(Boolean);
      rows.push({ call, counts: counter.counts, providerCalls: provider.join(', ') || 'none', expected });
    }

    const submitEvent = (body: Record<string, unknown>, idempotencyKey?: string) =>
      proxyEvent({
        method: 'POST',
        resource: '/api/ai/image/generate',
        path: '/api/ai/image/generate',
        userId: user.userId,
        keyId: user.keyId,
        headers: {
          'Content-Type': 'application/json',
          ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
        },
        body: JSON.stringify(body),
      });
    const getEvent = (taskId: string) =>
      proxyEvent({
        method: 'GET',
        resource: '/api/ai/tasks/{id}',
        path: `/api/ai/tasks/${taskId}`,
        userId: user.userId,
        keyId: user.keyId,
        pathParameters: { id: taskId },
      });
    const expectStatus = async (promise: Promise<{ statusCode: number; body: string }>, status: number) => {
      const result = await promise;
      if (result.statusCode !== status) throw new Error(`expected ${status}, got ${result.statusCode}: ${result.body}`);
      return JSON.parse(result.body) as { taskId: string; status: number };
    };

    const body = { model: 'image-model-1', prompt: 'a lighthouse at dusk' };
    let submitted = '';
    await measure('POST generate (submit, image-model-1)', { TransactWriteItems: 1, UpdateItem: 1 }, async () => {
      submitted = (await expectStatus(submit.handler(submitEvent(body), lambdaContext('submit-image')), 202)).taskId;
    });
    const idempotencyKey = randomUUID();
    await measure('POST generate with Idempotency-Key', { TransactWriteItems: 1, UpdateItem: 1 }, () =>
      expectStatus(submit.handler(submitEvent(body, idempotencyKey), lambdaContext('submit-image')), 202),
    );
    await measure('POST generate, idempotent replay', { TransactWriteItems: 1, GetItem: 1 }, () =>
      expectStatus(submit.handler(submitEvent(body, idempotencyKey), lambdaContext('submit-image')), 202),
    );
    await measure('GET task, terminal (completed)', { GetItem: 1 }, () =>
      expectStatus(getTask.handler(getEvent(verifyTask), lambdaContext('get-task')), 200),
    );
    // A submit counts as the first contact with the provider (lastCheckedAt = now): once the interval
    // has elapsed, a poll claims, asks the provider, which says success (mock delay 0), and records the
    // result URLs; it answers still pending, and the media worker (not in this count) copies the results
    // and completes the task.
    await waitOutInterval();
    await measure('GET task, pending, provider query → success recorded', { GetItem: 1, UpdateItem: 2 }, async () => {
      const task = await expectStatus(getTask.handler(getEvent(submitted), lambdaContext('get-task')), 200);
      if (task.status !== 0) throw new Error(`expected the task to wait for its copy, got status ${task.status}`);
    });
    let running = '';
    const slow = { ...body, providerInput: { mockDelayMs: 600_000 } };
    running = (await expectStatus(submit.handler(submitEvent(slow), lambdaContext('submit-image')), 202)).taskId;
    await waitOutInterval();
    await measure('GET task, pending, provider query → still running', { GetItem: 1, UpdateItem: 1 }, () =>
      expectStatus(getTask.handler(getEvent(running), lambdaContext('get-task')), 200),
    );
    await measure('GET task, pending, interval not elapsed (no claim attempted)', { GetItem: 1 }, () =>
      expectStatus(getTask.handler(getEvent(running), lambdaContext('get-task')), 200),
    );
    // The key's first use: the authorizer also records when it was last used (the dashboard shows it),
    // at most once per interval per key; a later miss within the interval is the GetItem alone.
    await measure('authorizer, miss, key used for the first time', { GetItem: 1, TransactWriteItems: 1 }, async () => {
      const result = await authorizer.handler(authorizerEvent(`Bearer ${user.apiKey}`));
      if (result.policyDocument.Statement[0]?.Effect !== 'Allow') throw new Error('the authorizer did not allow');
    });
    await measure('authorizer, miss, key used again within the interval', { GetItem: 1 }, async () => {
      const result = await authorizer.handler(authorizerEvent(`Bearer ${user.apiKey}`));
      if (result.policyDocument.Statement[0]?.Effect !== 'Allow') throw new Error('the authorizer did not allow');
    });

    // Through the local gateway: the same authorizer behind API Gateway's result cache.
    const route = ROUTES.find((r) => r.name === 'get-task');
    if (!route) throw new Error('get-task route missing');
    let authorizerCalls = 0;
    const server = createServer(
      createGateway({
        routes: [{ route, handler: getTask.handler }],
        authorizer: (event) => {
          authorizerCalls++;
          return authorizer.handler(event);
        },
        authorizerCacheTtlSeconds: 60,
      }),
    );
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/ai/tasks/${verifyTask}`;
      const viaGateway = async () => {
        const response = await bounded(
          'gateway request',
          10_000,
          fetch(url, { headers: { Authorization: `Bearer ${user.apiKey}` } }),
        );
        await response.text();
        if (response.status !== 200) throw new Error(`gateway answered ${response.status}`);
      };
      const callsBefore = authorizerCalls;
      await measure('gateway GET terminal, authorizer cache miss', { GetItem: 2 }, viaGateway);
      const missCalls = authorizerCalls - callsBefore;
      await measure('gateway GET terminal, authorizer cache hit', { GetItem: 1 }, viaGateway);
      const hitCalls = authorizerCalls - callsBefore - missCalls;
      const last = rows.at(-1);
      const missRow = rows.at(-2);
      if (missRow) missRow.call += ` (authorizer invoked ${missCalls}x)`;
      if (last) last.call += ` (authorizer invoked ${hitCalls}x)`;
    } finally {
      await new Promise<void>((closed) => {
        server.close(() => closed());
        server.closeAllConnections();
      });
    }
    counter.detach();

    out(
      'Counted by a middleware in the SDK deserialize step (every HTTP attempt, retries included) on the ' +
        `process's store client; check before counting: one GetCommand through the document client = ${verification}. ` +
        'Handlers run in-process against DynamoDB Local, the mock provider answers at once unless the task ' +
        `asks for a delay; the refresh interval is ${REFRESH_SECONDS} s here and is waited out before the pending polls. ` +
        'An authorizer cache hit makes 0 requests: on the cached gateway call only the ' +
        "handler's GetItem remains.",
    );
    out();
    table(
      ['API call', 'DynamoDB requests', 'By command', 'Expected', 'Provider calls'],
      rows.map((row) => {
        const got = describe(row.counts);
        const want = describe(Object.fromEntries(Object.entries(row.expected).map(([k, v]) => [`${k}Command`, v])));
        return [
          row.call,
          total(row.counts),
          got,
          got === want ? 'as expected' : `DIFF, expected ${want}`,
          row.providerCalls,
        ];
      }),
      ['l', 'r', 'l', 'l', 'l'],
    );
  } finally {
    await runCleanups();
  }
}
