/**
 * Section `big-customer`: one account's submits at 16 and 32 in flight through the conflict layer
 * (local/conflict-proxy.ts, transactions hold their items 10 ms), against the same load spread over as
 * many accounts, for an account without a limit, with a key spend limit and with an account-wide
 * monthly limit (both far above what is spent), and a burst on a thin balance (a few credits per
 * shard) against the same burst on a thick one. The real submit handler in-process; every non-202
 * answer counted; money checked after every cell (balance = grants - debits = sum of the ledger).
 */
import type { APIGatewayProxyResult } from 'aws-lambda';
import type { StoreContext } from '../functions/store/client';
import { type ConflictProxy, startConflictProxy } from '../local/conflict-proxy';
import { attachRequestCounter } from '../test/support/request-counter';
import { lambdaContext, type ProxyHandler, proxyEvent, startInProcessEnv } from './in-process';
import { goal, note, onCleanup, out, table } from './support';

const LEVELS = [16, 32] as const;
/**
 * A row's cells are count-based and interleaved: `ROUNDS` rounds, each one account's cell (a new
 * account each round) then the spread cell (the same accounts each round), each cell
 * `SUBMITS_PER_CELL` submits; a side's rate is its accepts over its time summed over the rounds (480
 * accepts a side). 3 s cells held about 120 accepts and read 0.78x-1.15x on a quiet
 * machine: a drift of the machine's load between the two cells moved the ratio more than the store did.
 */
const ROUNDS = 3;
const SUBMITS_PER_CELL = 160;
const COST = 3;
const CREDITS = 1_000_000;
const HOLD_MS = 10;
/** Far above what a cell spends: the limit never refuses, it only has to be counted. */
const LIMIT = 100_000_000;
/** The thin balance: 2 credits a shard on average (a cost of 3 fits in none), for 21 accepts. */
const THIN_CREDITS = 64;
const BURST = 64;

type Variant = 'no limit' | 'key spend limit' | 'account monthly limit';
const VARIANTS: Variant[] = ['no limit', 'key spend limit', 'account monthly limit'];

interface Customer {
  userId: string;
  keyId: string;
  authorizer: Record<string, string | number>;
}

async function customer(store: StoreContext, variant: Variant, credits: number): Promise<Customer> {
  const { randomUUID } = await import('node:crypto');
  const { grantCredits } = await import('../functions/money/grant');
  const { getApiKeyById } = await import('../functions/store/api-keys');
  const { putApiKey } = await import('../functions/money/key-issue');
  const { setAccountSpendLimit } = await import('../functions/money/account-limit');
  const { spendLimitContext } = await import('../functions/core/spend-limit');
  const userId = `bench-${randomUUID()}`;
  await grantCredits(store, { userId, amount: credits, grantId: `bench-${randomUUID()}` });
  const spendLimit = variant === 'key spend limit' ? { credits: LIMIT, period: 'month' as const } : undefined;
  const issued = await putApiKey(store, { userId, name: 'bench', ...(spendLimit ? { spendLimit } : {}) });
  if (variant === 'account monthly limit')
    await setAccountSpendLimit(store, { userId, credits: LIMIT, now: new Date() });
  const record = await getApiKeyById(store, issued.keyId);
  const context = spendLimitContext(record?.spendLimit, record?.spendLimitVersion);
  return { userId, keyId: issued.keyId, authorizer: { ...context } as Record<string, string | number> };
}

interface Cell {
  accepted: number;
  perSecond: number;
  others: Map<number, number>;
  settledMs: number;
  moneyOk: boolean;
  /** The store's requests by command until the last answer (with `counter`), before the money check. */
  requests?: Record<string, number>;
}

/**
 * `inFlight` workers submit back to back, worker i as customer i % customers, until `burst.submits`
 * submits have been sent (and answered); each customer was granted `burst.granted`.
 */
async function runCell(
  submit: ProxyHandler,
  store: StoreContext,
  customers: Customer[],
  inFlight: number,
  burst: { submits: number; granted: number },
  counter?: ReturnType<typeof attachRequestCounter>,
  /** Accepts per customer in earlier cells of the same customers (updated): the money check counts them. */
  acceptedBefore: Map<string, number> = new Map(),
): Promise<Cell> {
  const others = new Map<number, number>();
  const acceptedBy = new Map<string, number>();
  const body = JSON.stringify({ model: 'image-model-1', prompt: 'a lighthouse at dusk' });
  const started = performance.now();
  let sent = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      const user = customers[worker % customers.length];
      if (!user) return;
      while (sent < burst.submits) {
        sent++;
        const event = proxyEvent({
          method: 'POST',
          resource: '/api/ai/image/generate',
          path: '/api/ai/image/generate',
          userId: user.userId,
          keyId: user.keyId,
          headers: { 'Content-Type': 'application/json' },
          body,
        });
        Object.assign(event.requestContext.authorizer ?? {}, user.authorizer);
        const answer = (await submit(event, lambdaContext('submit-image'))) as APIGatewayProxyResult;
        if (answer.statusCode === 202) acceptedBy.set(user.userId, (acceptedBy.get(user.userId) ?? 0) + 1);
        else others.set(answer.statusCode, (others.get(answer.statusCode) ?? 0) + 1);
      }
    }),
  );
  const settledMs = performance.now() - started;
  const requests = counter?.counts;
  const accepted = [...acceptedBy.values()].reduce((sum, n) => sum + n, 0);
  const { auditUser } = await import('../functions/store/ledger');
  let moneyOk = true;
  for (const user of customers) {
    const audit = await auditUser(store, user.userId);
    const accepts = (acceptedBefore.get(user.userId) ?? 0) + (acceptedBy.get(user.userId) ?? 0);
    acceptedBefore.set(user.userId, accepts);
    if (!audit.ok || audit.balance !== burst.granted - COST * accepts) moneyOk = false;
  }
  return {
    accepted,
    perSecond: accepted / (settledMs / 1000),
    others,
    settledMs,
    moneyOk,
    ...(requests ? { requests } : {}),
  };
}

/** The cells of one side of a row as one: accepts over the summed time, every non-202 answer. */
function sumCells(cells: Cell[]): Cell {
  const others = new Map<number, number>();
  for (const cell of cells) for (const [status, n] of cell.others) others.set(status, (others.get(status) ?? 0) + n);
  const accepted = cells.reduce((sum, cell) => sum + cell.accepted, 0);
  const settledMs = cells.reduce((sum, cell) => sum + cell.settledMs, 0);
  return {
    accepted,
    perSecond: accepted / (settledMs / 1000),
    others,
    settledMs,
    moneyOk: cells.every((cell) => cell.moneyOk),
  };
}

function describeOthers(others: Map<number, number>): string {
  if (others.size === 0) return 'none';
  return [...others].map(([status, n]) => `${n}x ${status}`).join(', ');
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

export async function bigCustomer(): Promise<void> {
  out('## Big customer: one account with and without spend limits, and a thin balance');
  out();
  out(
    `Real submit handler in-process, image-model-1 (${COST} credits), through the ` +
      `conflict layer (each transaction holds its items ${HOLD_MS} ms). "Against spread": one account's ` +
      'accepted rate over that of the same load spread over as many accounts, each with the same limit ' +
      `(${LIMIT.toLocaleString('en')} credits a month, far above what is spent). Each row: ${ROUNDS} rounds of ` +
      `one account's cell (a new account each round) then the spread cell, ${SUBMITS_PER_CELL} submits a cell; a side's rate is its ` +
      'accepts over its summed time.',
  );
  out();
  const env = await startInProcessEnv({ providerDelayMs: 600_000 });
  const proxy: ConflictProxy = await startConflictProxy({ target: env.dynamodbEndpoint, holdMs: HOLD_MS });
  onCleanup(() => proxy.stop());
  const submit = await reload(proxy.endpoint);
  const { storeFromEnv } = await import('../functions/store/from-env');
  const store = storeFromEnv();
  note('warm-up');
  const warm: Customer[] = [];
  for (let i = 0; i < 4; i++) warm.push(await customer(store, 'no limit', CREDITS));
  await runCell(submit, store, warm, 8, { submits: 96, granted: CREDITS });
  const rows: Array<Array<string | number>> = [];
  let worst = Number.POSITIVE_INFINITY;
  let non202 = 0;
  let moneyOk = true;
  for (const variant of VARIANTS) {
    for (const inFlight of LEVELS) {
      note(`${variant}, ${inFlight} in flight`);
      // One at a time: an account limit stamps 32 shards, and hundreds of requests at once outrun the sockets.
      const many: Customer[] = [];
      for (let i = 0; i < inFlight; i++) many.push(await customer(store, variant, CREDITS));
      const cells = { submits: SUBMITS_PER_CELL, granted: CREDITS };
      const before = new Map<string, number>();
      const rounds: Array<{ one: Cell; spread: Cell }> = [];
      for (let round = 0; round < ROUNDS; round++) {
        // A new account each round: the submit counts the account's queue entries (the queue bound), and
        // 480 tasks queued on one account made its Query read 240 entries on average against 5 spread.
        const single = [await customer(store, variant, CREDITS)];
        const one = await runCell(submit, store, single, inFlight, cells, undefined, before);
        rounds.push({ one, spread: await runCell(submit, store, many, inFlight, cells, undefined, before) });
      }
      const one = sumCells(rounds.map((r) => r.one));
      const spread = sumCells(rounds.map((r) => r.spread));
      const ratio = one.perSecond / spread.perSecond;
      worst = Math.min(worst, ratio);
      non202 += [...one.others.values(), ...spread.others.values()].reduce((sum, n) => sum + n, 0);
      moneyOk &&= one.moneyOk && spread.moneyOk;
      rows.push([
        variant,
        inFlight,
        one.perSecond.toFixed(0),
        spread.perSecond.toFixed(0),
        `${ratio.toFixed(2)}x`,
        describeOthers(new Map([...one.others, ...spread.others])),
        one.moneyOk && spread.moneyOk ? 'exact' : 'WRONG',
      ]);
    }
  }
  table(['One account', 'In flight', 'Accepted/s', 'Spread accepted/s', 'Against spread', 'Non-202', 'Money'], rows, [
    'l',
    'r',
    'r',
    'r',
    'r',
    'l',
    'l',
  ]);
  out();
  const burst = await burstTable(submit, store, proxy);
  moneyOk &&= burst.moneyOk;
  out();
  goal('one account >= 0.8x spread in every row', worst >= 0.8, `worst ${worst.toFixed(2)}x`);
  goal('no non-202 answer in the rows', non202 === 0, `${non202} non-202 answers`);
  burstGoals(burst);
  goal('money exact after every cell', moneyOk, moneyOk ? 'every account exact' : 'a mismatch');
}

interface BurstFigures {
  thinSlowest: number;
  thickSlowest: number;
  burst503: number;
  moneyOk: boolean;
}

/**
 * A burst of `BURST` submits on one account, thin balance against thick, at each level of `LEVELS`:
 * the settle time with the load average beside it (a shared machine), and what does not depend on
 * load: the transactions sent and the ones the layer cancelled, and the reads (Queries, and GetItems
 * and the like), per cell.
 */
async function burstTable(submit: ProxyHandler, store: StoreContext, proxy: ConflictProxy): Promise<BurstFigures> {
  const { loadavg } = await import('node:os');
  out(
    `A burst of ${BURST} submits on one account: a thin balance (${THIN_CREDITS} credits granted, spread evenly ` +
      `over its shards: ${THIN_CREDITS / 32} a shard, so ${Math.floor(THIN_CREDITS / COST)} fit) against a thick one:`,
  );
  out();
  const burstRows: Array<Array<string | number>> = [];
  const figures: BurstFigures = { thinSlowest: 0, thickSlowest: 0, burst503: 0, moneyOk: true };
  // The handler's store client is the process's (storeFromEnv), whose middleware stack this counts on.
  const counter = attachRequestCounter(store.doc);
  onCleanup(() => counter.detach());
  for (const inFlight of LEVELS) {
    for (const [label, credits] of [
      ['thin', THIN_CREDITS],
      ['thick', CREDITS],
    ] as const) {
      note(`${label} balance burst, ${inFlight} in flight`);
      const user = await customer(store, 'no limit', credits);
      const before = proxy.stats();
      counter.reset();
      const cell = await runCell(submit, store, [user], inFlight, { submits: BURST, granted: credits }, counter);
      const requests = cell.requests ?? {};
      const reads = Object.entries(requests).filter(([name]) => !/^(Query|TransactWriteItems)Command$/.test(name));
      const after = proxy.stats();
      const unexpected = [...cell.others].filter(([status]) => status !== 402).reduce((sum, [, n]) => sum + n, 0);
      figures.burst503 += unexpected;
      figures.moneyOk &&= cell.moneyOk;
      if (label === 'thin') figures.thinSlowest = Math.max(figures.thinSlowest, cell.settledMs);
      else figures.thickSlowest = Math.max(figures.thickSlowest, cell.settledMs);
      const sent = after.forwardedTransactions + after.cancelledTransactions;
      burstRows.push([
        label,
        inFlight,
        cell.accepted,
        describeOthers(cell.others),
        cell.settledMs.toFixed(0),
        sent - before.forwardedTransactions - before.cancelledTransactions,
        after.cancelledTransactions - before.cancelledTransactions,
        requests.QueryCommand ?? 0,
        reads.reduce((sum, [, n]) => sum + n, 0),
        (loadavg()[0] ?? 0).toFixed(1),
        cell.moneyOk ? 'exact' : 'WRONG',
      ]);
    }
  }
  table(
    [
      'Balance',
      'In flight',
      'Accepted',
      'Other answers',
      'Settled in ms',
      'Transactions',
      'Cancelled',
      'Queries',
      'Other requests',
      'Load',
      'Money',
    ],
    burstRows,
    ['l', 'r', 'r', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
  );
  out(`Transactions the layer cancelled with TransactionConflict: ${proxy.stats().cancelledTransactions}`);
  return figures;
}

function burstGoals(burst: BurstFigures): void {
  goal('the thin-balance burst answers only 202 and 402', burst.burst503 === 0, `${burst.burst503} other answers`);
  goal(
    'the thin-balance burst settles within 2 s',
    burst.thinSlowest <= 2_000,
    `slowest ${burst.thinSlowest.toFixed(0)} ms (thick ${burst.thickSlowest.toFixed(0)} ms)`,
  );
}

/** Section `thin-burst`: only the burst table of `big-customer` (a few seconds instead of a minute). */
export async function thinBurst(): Promise<void> {
  out('## Big customer: a burst on a thin balance');
  out();
  const env = await startInProcessEnv({ providerDelayMs: 600_000 });
  const proxy: ConflictProxy = await startConflictProxy({ target: env.dynamodbEndpoint, holdMs: HOLD_MS });
  onCleanup(() => proxy.stop());
  const submit = await reload(proxy.endpoint);
  const { storeFromEnv } = await import('../functions/store/from-env');
  const store = storeFromEnv();
  note('warm-up');
  const warm: Customer[] = [];
  for (let i = 0; i < 4; i++) warm.push(await customer(store, 'no limit', CREDITS));
  await runCell(submit, store, warm, 8, { submits: 96, granted: CREDITS });
  const burst = await burstTable(submit, store, proxy);
  out();
  burstGoals(burst);
  goal('money exact after every cell', burst.moneyOk, burst.moneyOk ? 'every account exact' : 'a mismatch');
}
