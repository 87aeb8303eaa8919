/**
 * Section 3: what the get-task handler costs on top of the one GetItem it makes. The real handler
 * (middy stack, caller check, store read, URL signing, JSON response) is invoked in-process for a
 * completed task against DynamoDB Local, alternating with the bare SDK GetCommand through the same
 * document client: same process, same engine, same connection pool.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import * as keys from '../functions/store/task-keys';
import {
  completedTask,
  createUser,
  lambdaContext,
  type ProxyHandler,
  proxyEvent,
  startInProcessEnv,
} from './in-process';
import { goal, mean, ms, note, out, percentile, ratio, runCleanups, table } from './support';

export const OVERHEAD_CALLS = Number(process.env.BENCH_OVERHEAD_CALLS) || 2000;
const WARM_UP = 300;
/** Goal of issue 8: the handler at most this factor of the bare GetItem. */
export const OVERHEAD_GOAL = 1.15;

export async function handlerOverhead(): Promise<void> {
  out('## 3. Handler overhead: get-task (completed task) vs the bare GetItem');
  out();
  try {
    const env = await startInProcessEnv();
    const user = await createUser(env.store, 100);
    const taskId = await completedTask(env.store, user.userId, user.keyId);
    const { handler } = (await import('../functions/get-task/handler')) as { handler: ProxyHandler };
    const context = lambdaContext('get-task');
    const event = () =>
      proxyEvent({
        method: 'GET',
        resource: '/api/ai/tasks/{id}',
        path: `/api/ai/tasks/${taskId}`,
        userId: user.userId,
        keyId: user.keyId,
        pathParameters: { id: taskId },
      });
    // Exactly the request getTask makes (consistent read of the task item).
    const bare = () =>
      env.store.doc.send(
        new GetCommand({ TableName: env.store.tableName, Key: keys.task(user.userId, taskId), ConsistentRead: true }),
      );

    const viaHandler = async () => {
      const result = await handler(event(), context);
      if (result.statusCode !== 200) throw new Error(`get-task answered ${result.statusCode}: ${result.body}`);
    };
    const viaSdk = async () => {
      const result = await bare();
      if (!result.Item) throw new Error('the bare GetItem found no task');
    };

    note(`${WARM_UP} warm-up calls each, then ${OVERHEAD_CALLS} measured calls each, alternating`);
    for (let i = 0; i < WARM_UP; i++) {
      await viaHandler();
      await viaSdk();
    }
    const handlerMs: number[] = [];
    const sdkMs: number[] = [];
    for (let i = 0; i < OVERHEAD_CALLS; i++) {
      // Alternate which goes first so neither always follows the other's garbage.
      const order = i % 2 === 0 ? ([viaHandler, viaSdk] as const) : ([viaSdk, viaHandler] as const);
      for (const call of order) {
        const started = performance.now();
        await call();
        (call === viaHandler ? handlerMs : sdkMs).push(performance.now() - started);
      }
    }

    out(
      `${OVERHEAD_CALLS} sequential calls each after ${WARM_UP} warm-up calls, one connection, DynamoDB Local ` +
        'on loopback. The handler is the TypeScript source bundled into this process (bin/run-ts.cjs), as the local stack runs it.',
    );
    out();
    const rows = [
      { name: 'bare SDK GetItem (GetCommand, document client)', samples: sdkMs },
      { name: 'get-task handler', samples: handlerMs },
    ];
    const base = rows[0]?.samples ?? [];
    table(
      ['Call', 'median ms', 'p90 ms', 'p99 ms', 'mean ms', 'median vs GetItem', 'p99 vs GetItem'],
      rows.map((row) => [
        row.name,
        ms(percentile(row.samples, 50)),
        ms(percentile(row.samples, 90)),
        ms(percentile(row.samples, 99)),
        ms(mean(row.samples)),
        ratio(percentile(row.samples, 50), percentile(base, 50)),
        ratio(percentile(row.samples, 99), percentile(base, 99)),
      ]),
      ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
    );
    const factor = percentile(handlerMs, 50) / percentile(sdkMs, 50);
    const extra = percentile(handlerMs, 50) - percentile(sdkMs, 50);
    goal(
      `handler within ${OVERHEAD_GOAL}x of the bare GetItem`,
      factor <= OVERHEAD_GOAL,
      `median ${factor.toFixed(2)}x (${ms(extra)} ms of handler work per call on top of the GetItem)`,
    );
  } finally {
    await runCleanups();
  }
}
