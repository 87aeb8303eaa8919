/**
 * Section 6: one big customer. The real submit handler in-process, against DynamoDB Local with the
 * conflict-faithful layer (local/conflict-proxy.ts, transactions hold their items 10 ms) off and on:
 * for 1, 4, 16 and 32 submits in flight, one account against the same load spread over as many
 * accounts. Every non-202 answer is counted, and the money is checked after each level (balance =
 * grants - debits + refunds = sum of the ledger, for every account). Then write units per accept,
 * from `ReturnConsumedCapacity`, for a short and a 20,000-character prompt.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyResult } from 'aws-lambda';
import type { StoreContext } from '../functions/store/client';
import { TABLE } from '../functions/store/table';
import { type ConflictProxy, startConflictProxy } from '../local/conflict-proxy';
import { createUser, lambdaContext, type ProxyHandler, proxyEvent, startInProcessEnv } from './in-process';
import { goal, note, onCleanup, out, percentile, runCleanups, table } from './support';

const LEVELS = [1, 4, 16, 32] as const;
const CELL_MS = 3_000;
const COST = 3;
const CREDITS = 1_000_000;
const HOLD_MS = 10;

interface Cell {
  accepted: number;
  perSecond: number;
  latencies: number[];
  others: Map<number, number>;
  moneyOk: boolean;
}

async function reload(endpoint: string): Promise<ProxyHandler> {
  process.env.DYNAMODB_ENDPOINT = endpoint;
  const { resetStoreFromEnv } = await import('../functions/store/from-env');
  const { resetLifecycleFromEnv } = await import('../functions/runtime/lifecycle-from-env');
  resetStoreFromEnv();
  resetLifecycleFromEnv();
  const module = await import('../functions/submit-image/handler');
  return module.handler as unknown as ProxyHandler;
}

/** `inFlight` workers submit back to back for CELL_MS; worker i uses account i % accounts. */
async function runCell(submit: ProxyHandler, store: StoreContext, inFlight: number, accounts: number): Promise<Cell> {
  const users: Array<{ userId: string; keyId: string }> = [];
  for (let i = 0; i < accounts; i++) users.push(await createUser(store, CREDITS));
  const latencies: number[] = [];
  const others = new Map<number, number>();
  const acceptedBy = new Map<string, number>();
  const body = JSON.stringify({ model: 'image-model-1', prompt: 'a lighthouse at dusk' });
  const started = performance.now();
  const deadline = started + CELL_MS;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      const user = users[worker % accounts];
      if (!user) return;
      while (performance.now() < deadline) {
        const event = proxyEvent({
          method: 'POST',
          resource: '/api/ai/image/generate',
          path: '/api/ai/image/generate',
          userId: user.userId,
          keyId: user.keyId,
          headers: { 'Content-Type': 'application/json' },
          body,
        });
        const sent = performance.now();
        const answer = (await submit(event, lambdaContext('submit-image'))) as APIGatewayProxyResult;
        latencies.push(performance.now() - sent);
        if (answer.statusCode === 202) acceptedBy.set(user.userId, (acceptedBy.get(user.userId) ?? 0) + 1);
        else others.set(answer.statusCode, (others.get(answer.statusCode) ?? 0) + 1);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const accepted = [...acceptedBy.values()].reduce((sum, n) => sum + n, 0);
  const { auditUser } = await import('../functions/store/ledger');
  let moneyOk = true;
  for (const user of users) {
    const audit = await auditUser(store, user.userId);
    const debited = COST * (acceptedBy.get(user.userId) ?? 0);
    if (!audit.ok || audit.balance !== CREDITS - debited) moneyOk = false;
  }
  return { accepted, perSecond: accepted / elapsed, latencies, others, moneyOk };
}

function describeOthers(others: Map<number, number>): string {
  if (others.size === 0) return 'none';
  return [...others].map(([status, n]) => `${n}x ${status}`).join(', ');
}

/** Write units of one accept transaction, as DynamoDB reports them. */
async function writeUnits(store: StoreContext, prompt: string, promptTwice: boolean): Promise<number> {
  const { grantCredits } = await import('../functions/money/grant');
  const { acceptTask } = await import('../functions/money/accept');
  const userId = `wcu-${randomUUID()}`;
  await grantCredits(store, { userId, amount: TABLE.balanceShards * COST });
  let units = 0;
  const stack = store.doc.middlewareStack;
  const name = `consumed-capacity-${randomUUID()}`;
  stack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand') {
        (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'TOTAL';
      }
      const result = await next(args);
      const output = result.output as { ConsumedCapacity?: Array<{ CapacityUnits?: number }> };
      for (const consumed of output.ConsumedCapacity ?? []) units += consumed.CapacityUnits ?? 0;
      return result;
    },
    { step: 'initialize', name },
  );
  try {
    const input = { prompt, num_outputs: 1 };
    await acceptTask(store, {
      task: {
        userId,
        taskId: randomUUID(),
        type: 'image',
        model: 'image-model-1',
        prompt,
        // As stored before (the prompt again inside the provider request) or now (once, on the task).
        request: { providerRequest: { model: 'image-model-1', input: promptTwice ? input : { num_outputs: 1 } } },
        creditsUsed: COST,
        keyId: 'key-wcu',
        now: new Date(),
      },
      idempotency: { key: 'wcu', requestHash: 'h' },
    });
  } finally {
    stack.remove(name);
  }
  return units;
}

export async function oneAccount(): Promise<void> {
  out('## 6. One big customer: submits in flight on one account');
  out();
  out(
    `Real submit handler in-process (mock provider over HTTP), ${CELL_MS / 1000} s per cell, image-model-1 ` +
      `(${COST} credits). "Spread": the same load over as many accounts as submits in flight. Layer on: ` +
      `DynamoDB's per-item transaction conflicts modelled, each transaction holding its items ${HOLD_MS} ms.`,
  );
  out();
  try {
    const env = await startInProcessEnv({ providerDelayMs: 600_000 });
    const proxy: ConflictProxy = await startConflictProxy({ target: env.dynamodbEndpoint, holdMs: HOLD_MS });
    onCleanup(() => proxy.stop());
    const rows: Array<Array<string | number>> = [];
    let ratioAt32 = Number.NaN;
    let non202 = 0;
    let moneyOk = true;
    // Warm-up (JIT, sockets, DynamoDB Local's first tables), so the first cell is not the slowest.
    note('warm-up');
    await runCell(await reload(env.dynamodbEndpoint), env.store, 8, 8);
    for (const layer of ['off', 'on'] as const) {
      const submit = await reload(layer === 'on' ? proxy.endpoint : env.dynamodbEndpoint);
      const { storeFromEnv } = await import('../functions/store/from-env');
      const store = storeFromEnv();
      for (const inFlight of LEVELS) {
        note(`layer ${layer}, ${inFlight} in flight`);
        const one = await runCell(submit, store, inFlight, 1);
        const spread = await runCell(submit, store, inFlight, inFlight);
        for (const [label, cell] of [
          ['one', one],
          ['spread', spread],
        ] as const) {
          non202 += [...cell.others.values()].reduce((sum, n) => sum + n, 0);
          moneyOk &&= cell.moneyOk;
          rows.push([
            layer,
            inFlight,
            label,
            cell.accepted,
            cell.perSecond.toFixed(0),
            percentile(cell.latencies, 50).toFixed(0),
            percentile(cell.latencies, 95).toFixed(0),
            percentile(cell.latencies, 99).toFixed(0),
            describeOthers(cell.others),
            cell.moneyOk ? 'exact' : 'WRONG',
          ]);
        }
        const ratio = one.perSecond / spread.perSecond;
        rows.push([layer, inFlight, 'one / spread', '', `${ratio.toFixed(2)}x`, '', '', '', '', '']);
        if (layer === 'on' && inFlight === 32) ratioAt32 = ratio;
      }
    }
    table(
      ['Layer', 'In flight', 'Accounts', 'Accepted', 'Accepted/s', 'p50 ms', 'p95 ms', 'p99 ms', 'Non-202', 'Money'],
      rows,
      ['l', 'r', 'l', 'r', 'r', 'r', 'r', 'r', 'l', 'l'],
    );
    out(`Transactions the layer cancelled with TransactionConflict: ${proxy.stats().cancelledTransactions}`);
    out();
    goal('no non-202 answer at any level', non202 === 0, `${non202} non-202 answers`);
    goal('money exact after every level', moneyOk, moneyOk ? 'every account exact' : 'a mismatch');
    goal(
      "one account's accepted rate >= 0.8x spread at 32 in flight, layer on",
      ratioAt32 >= 0.8,
      `${ratioAt32.toFixed(2)}x`,
    );

    const { storeFromEnv } = await import('../functions/store/from-env');
    const direct = await reload(env.dynamodbEndpoint).then(() => storeFromEnv());
    const long = 'x'.repeat(20_000);
    const figures = [
      [
        'short (20 characters)',
        await writeUnits(direct, 'a lighthouse at dusk', true),
        await writeUnits(direct, 'a lighthouse at dusk', false),
      ],
      ['20,000 characters', await writeUnits(direct, long, true), await writeUnits(direct, long, false)],
    ];
    out('Write units of one accept transaction (with an Idempotency-Key), `ReturnConsumedCapacity: TOTAL`:');
    out();
    table(
      ['Prompt', 'Prompt stored twice (before)', 'Prompt stored once (now)'],
      figures.map(([label, twice, once]) => [String(label), String(twice), String(once)]),
      ['l', 'r', 'r'],
    );
  } finally {
    await runCleanups();
  }
}
