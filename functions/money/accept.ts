/**
 * The accept: the atomic debit of a task's price, composed from its contributors (the balance shards,
 * the key guard, each spend allowance, the task, the ledger entry, the idempotency record, the queue
 * entry, the usage counter) and answered by the accept's declared precedence (money/findings.ts).
 */
import { IdempotencyConflictError, InsufficientCreditsError, TaskStateError, UnauthorizedError } from '../core/errors';
import { type TaskRecord, TaskStatus } from '../core/task';
import { usageDay } from '../core/usage';
import { type AcceptBudget, budgetPlan, countedOn, readRooms, roomsIfThin } from '../store/accept-budgets';
import {
  credentialGuard,
  pauseAfterConflict,
  randomShard,
  readShards,
  type ShardBalances,
  totalOf,
} from '../store/balance';
import { busy, isRetryable, type RetryingStoreContext, type SpendScope } from '../store/errors';
import { readOutranking } from '../store/outranking-reads';
import type { ShardPlan } from '../store/shard-plan';
import { accountBudget, knownAccountLimit, learnAccountLimit, spendCounterOf } from '../store/spend';
import * as keys from '../store/task-keys';
import { getTask, IDEMPOTENCY_TTL_SECONDS, type IdempotencyInput, type NewTask } from '../store/tasks';
import {
  holdPlan,
  layoutBeforeFirstTry,
  planTry,
  readLayout,
  rememberThick,
  settleLayout,
  triesEnded,
  turnToPlan,
  unpaidLately,
  untilSettled,
} from '../store/thin-balance';
import { transactOnce } from '../store/transaction';
import { usageCounterChange } from '../store/usage';
import {
  balanceDebit,
  guardFinding,
  idempotencyFinding,
  idempotencyRecord,
  keyGuard as keyGuardContributor,
  ledgerEntry,
  newTask,
  spendAllowance,
  unconditioned,
} from './contributors';
import { ACCEPT_PRECEDENCE, type AcceptFinding } from './findings';
import { type ComposedTransaction, type Contributor, compose, decide, ofKind } from './transaction';

/**
 * What a cancelled accept means to the accept's loop, besides the outcomes thrown:
 * - `replay`: the Idempotency-Key was used before with the same request; answer with that task.
 * - `account-limit`: a debited shard carries another account spend limit than the accept assumed
 *   (`version`, `credits`: the shard's); learn it and try again.
 * - `short`: a debited shard did not hold what was taken from it (`shards` lists them), or a counter
 *   shard had less room than was taken from it (`spend`: whose budget, the key's or the account's):
 *   read them all and plan again; only the total decides 402 (store/spend.ts).
 * - `conflict`: another transaction held one of the items (or throttling cancelled it): nothing was
 *   written, try again; `conflictedShards` are the shards to avoid on the next try.
 */
export type AcceptOutcome =
  | { kind: 'replay'; replayOf: string }
  | { kind: 'account-limit'; version: number; credits: number | undefined }
  | { kind: 'short'; shards: number[]; spend?: SpendScope[] }
  | { kind: 'conflict'; conflictedShards: number[] };

/**
 * Turns a failed accept into its outcome by the accept's precedence (money/findings.ts
 * `ACCEPT_PRECEDENCE`). Throws `UnauthorizedError` (the key ended), `IdempotencyConflictError`,
 * `ServiceBusyError` (the key's limit changed since the authorizer read it), or rethrows what it does
 * not recognise. A counter shard short of room is no 402 by itself: the accept reads the budget's sum.
 */
export function acceptAnswer(error: unknown, transaction: ComposedTransaction<AcceptFinding>): AcceptOutcome {
  const findings = transaction.findings(error);
  if (!findings) {
    if (isRetryable(error)) return { kind: 'conflict', conflictedShards: [] };
    throw error;
  }
  return answerOf(findings, error);
}

/** The outcome of `findings` by the accept's precedence (`error`: what cancelled the try, if one did). */
function answerOf(findings: AcceptFinding[], error: unknown): AcceptOutcome {
  switch (decide(findings, ACCEPT_PRECEDENCE)) {
    case 'key-ended':
      throw new UnauthorizedError();
    case 'idempotency': {
      const replayOf = ofKind(findings, 'idempotency')[0]?.replayOf;
      if (replayOf !== undefined) return { kind: 'replay', replayOf };
      throw new IdempotencyConflictError();
    }
    case 'limit-changed':
      // Nothing was written, and a retry reads the new limit (503).
      throw busy(error);
    case 'account-limit': {
      // The last shard that told it (a change being stamped may show two versions for a moment).
      const told = ofKind(findings, 'account-limit');
      const { version, credits } = told[told.length - 1] ?? { version: 0, credits: undefined };
      return { kind: 'account-limit', version, credits };
    }
    case 'short': {
      const short = ofKind(findings, 'short');
      const shards = short.flatMap(({ shard }) => (shard === undefined ? [] : [shard]));
      const spend = SCOPE_ORDER.filter((scope) => short.some((finding) => finding.scope === scope));
      return spend.length > 0 ? { kind: 'short', shards, spend } : { kind: 'short', shards };
    }
    case 'task-taken':
      throw new Error('Task id already in use: a task id must be unique per user', { cause: error });
    default:
      // A conflict (or throttling) cancelled it: nothing was written; avoid the shards that were held.
      if (isRetryable(error)) {
        return { kind: 'conflict', conflictedShards: ofKind(findings, 'conflict').map(({ shard }) => shard) };
      }
      throw error;
  }
}

/**
 * Tries per accept: more than a grant's or a refund's (`SHARD_ATTEMPTS`). One account's accepts race on
 * its 32 shards, and at 32 in flight most shards are held at any moment: with 12 tries, about one accept
 * in 130 lost every try and answered 503 (`npm run bench -- big-customer`, quiet machine, conflict layer
 * 10 ms). The extra tries cost only the unlucky accept, and its waits (full jitter, capped at 800 ms a
 * try) stay near 11 s at most, well inside the 29 s a submit may take.
 */
export const ACCEPT_ATTEMPTS = 20;

/** The order budgets are named in a `short` outcome: the key's, then the account's. */
const SCOPE_ORDER: readonly SpendScope[] = ['key', 'account'];

/**
 * Accepts a task in ONE `TransactWriteItems`: debit a balance shard picked at random
 * (`balance >= cost`, and the caller's key not ended), put the task (pending, in the pending index), put
 * the ledger debit and, with an Idempotency-Key, put the idempotency record. When that shard cannot
 * cover the cost, the shards are read (one Query) and the debit is spread over several of them in the
 * same single transaction (balance.ts).
 *
 * - Key seen before with the same request hash: nothing is written; the original task is read and
 *   returned with `replayed: true` (2 requests in all).
 * - Key seen before with another hash: `IdempotencyConflictError` (checked before the balance).
 * - Not enough credits in all shards together, or no account: `InsufficientCreditsError(cost, balance)`,
 *   with no transaction sent: the key guard and the Idempotency-Key's record, whose answers outrank it,
 *   are read instead (store/outranking-reads.ts).
 * - The caller's key revoked or past its grace end (`task.keyId`): `UnauthorizedError`, nothing written.
 * - The caller's key has a spend limit (`task.spendLimit`): its period's counter is one more item
 *   (store/spend.ts); past the limit, `SpendLimitError` (402), nothing written. A limit changed since the
 *   authorizer read it fails the key-end guard: `ServiceBusyError`, nothing written.
 * - The account has a monthly spend limit: its month's counter is one more item the same way
 *   (`SpendLimitError` with scope `account`). The debits state the limit's version the process knows;
 *   a debit that finds another one teaches it and is tried again at once (store/spend.ts).
 * - Racing accepts of one account in one process plan one after another's lesson: the first of an
 *   account this process knows nothing of, and a gathering, settle its layout while the others wait
 *   (store/thin-balance.ts, docs/decisions/0020-one-process-settles-a-layout.md).
 * - A conflict on a shard is retried at once on another shard; after `ACCEPT_ATTEMPTS` tries,
 *   `ServiceBusyError` (nothing written), or `InsufficientCreditsError` when the account can no longer
 *   pay by then.
 */
export async function acceptTask(
  ctx: RetryingStoreContext,
  input: { task: NewTask; idempotency?: IdempotencyInput },
): Promise<{ task: TaskRecord; replayed: boolean }> {
  const { task, idempotency } = input;
  const cost = task.creditsUsed;
  if (!Number.isSafeInteger(cost) || cost < 0) throw new Error(`creditsUsed must be a whole number >= 0, got ${cost}`);
  const createdAt = task.now.toISOString();
  const nowSeconds = Math.floor(task.now.getTime() / 1000);
  // A key with a spend limit: the period's counter joins the transaction (store/spend.ts).
  const limit = task.keyId === undefined ? undefined : task.spendLimit;
  const spend = limit ? spendCounterOf(task.userId, limit, task.now) : undefined;
  const record: TaskRecord = {
    userId: task.userId,
    taskId: task.taskId,
    type: task.type,
    status: TaskStatus.PENDING,
    model: task.model,
    prompt: task.prompt,
    request: task.request,
    creditsUsed: cost,
    creditsRefunded: false,
    createdAt,
    updatedAt: createdAt,
    attempts: 0,
    // Sent later, by the dispatcher, at the upstream's pace (lifecycle/dispatch.ts).
    stage: 'queued',
    // Polls claim a provider read one interval from now at the earliest: a task just accepted has nothing
    // to ask the provider yet (the dispatcher sends it; polls never send).
    lastCheckedAt: task.now.getTime(),
    ...(task.keyId === undefined ? {} : { keyId: task.keyId }),
    ...(spend ? { spendCounter: spend.key.SK } : {}),
    // Undefined values are left out of the item (the document client's removeUndefinedValues).
    webhookUrl: task.webhookUrl,
  };
  const taskItem: Record<string, unknown> = {
    ...keys.task(task.userId, task.taskId),
    ...keys.pendingIndex(task.taskId, createdAt),
    ...keys.taskListing(task.userId, task.taskId, createdAt),
    ...record,
  };
  // What every try writes besides the debits and the counters.
  const ledger = ledgerEntry<AcceptFinding>(ctx, {
    entry: { userId: task.userId, kind: 'debit', delta: -cost, at: createdAt, taskId: task.taskId },
    taken: { kind: 'task-taken' },
  });
  const replayRecord = idempotency
    ? idempotencyRecord(ctx, {
        userId: task.userId,
        key: idempotency.key,
        taskId: task.taskId,
        requestHash: idempotency.requestHash,
        createdAt,
        nowSeconds,
        ttlSeconds: idempotency.ttlSeconds ?? IDEMPOTENCY_TTL_SECONDS,
      })
    : undefined;
  // The task's place in the dispatch queue: a new item, so accepts never contend on it. The model, so
  // the dispatcher can pass over the tasks of a model the upstream refuses for now without reading them
  // (docs/design/dispatching.md, "Backoff").
  const queueEntry = unconditioned<AcceptFinding>('queue entry', [
    {
      Put: {
        TableName: ctx.tableName,
        Item: {
          ...keys.queueEntry(task.userId, createdAt, task.taskId),
          userId: task.userId,
          taskId: task.taskId,
          model: task.model,
        },
      },
    },
  ]);
  // Every accept checks its credential's end on its guard for the first debited shard (keyEndCheck): an
  // API key's, or the account's sessions' (credentialGuard), which closing the account ends.
  const guard = credentialGuard(task.keyId, nowSeconds, task.spendLimitVersion ?? 0);

  // The account's monthly limit, as this process knows it (store/spend.ts): its version goes into
  // every debit's condition, its counter into the transaction when there is a limit.
  let account = knownAccountLimit(task.userId);

  const random = ctx.retry?.random ?? Math.random;
  const avoid = new Set<number>();
  let target = randomShard(avoid, random);
  // Unknown until the picked shard turns out short, or read first on a thin balance (store/thin-balance.ts).
  // On a layout remembered as unable to pay, a refusal's reads go out beside the balance read.
  const outranking = { userId: task.userId, guard, shard: target, idempotencyKey: idempotency?.key };
  // Racing accepts of this process wait while one of them learns the layout or gathers it into lumps,
  // then plan from what it left (store/thin-balance.ts `untilSettled`).
  const scout = await turnToPlan(task.userId);
  try {
    const early = unpaidLately(task.userId, cost) ? readOutranking(ctx, outranking) : undefined;
    early?.catch(() => undefined);
    let balances: ShardBalances | undefined = await layoutBeforeFirstTry(ctx, task.userId, cost);
    // The same for each budget's counter shards (store/spend.ts): unknown, the cost is taken from the
    // shard number the balance is debited on; read when a shard is short or the shares are too thin.
    const budgets = new Map<SpendScope, AcceptBudget>();
    if (limit) budgets.set('key', { limit, ...(await roomsIfThin(ctx, task.userId, limit, cost, task.now)) });
    for (let attempt = 1; ; attempt++) {
      const accountLimit = account.credits === undefined ? undefined : accountBudget(account.credits);
      if (accountLimit && budgets.get('account')?.limit.credits !== accountLimit.credits) {
        budgets.set('account', {
          limit: accountLimit,
          ...(await roomsIfThin(ctx, task.userId, accountLimit, cost, task.now)),
        });
      } else if (!accountLimit) budgets.delete('account');
      const plan = planTry(task.userId, balances, cost, { target, avoid, random });
      if (plan === 'read' || plan === 'wait') {
        // The remembered layout was taken by this process's tries in flight: read what is there; or
        // what was read is all taken by tries in flight: read once they have ended.
        if (plan === 'wait') await triesEnded(task.userId);
        balances = await readLayout(ctx, task.userId, cost);
        continue;
      }
      // One gathering at a time in this process: racing gatherings name the same shards and cancel each
      // other. One in flight is waited for, and the lumps it leaves in the memory planned from.
      const gathering = plan && plan.length > 1 ? (scout ?? settleLayout(task.userId, 'gather')) : scout;
      if (plan && plan.length > 1 && !gathering) {
        await untilSettled(task.userId);
        balances = (await layoutBeforeFirstTry(ctx, task.userId, cost)) ?? (await readLayout(ctx, task.userId, cost));
        continue;
      }
      const first = plan?.[0]?.shard ?? target;
      // A spent budget answers 402 before the balance does.
      const spendPlans = new Map<SpendScope, ShardPlan>();
      const exhausted = new Map<SpendScope, Error>();
      for (const [scope, budget] of budgets) {
        const planned = budgetPlan(budget, { scope, cost, prefer: first, random, at: task.now });
        spendPlans.set(scope, planned.plan);
        if (planned.exhausted) exhausted.set(scope, planned.exhausted);
      }
      if (!plan) {
        // A refusal sends no transaction: what outranks its 402 is read from items a try would check
        // (store/outranking-reads.ts), so it holds no shard a racing gathering needs.
        const found = await ((attempt === 1 && early) || readOutranking(ctx, { ...outranking, shard: target }));
        const findings: AcceptFinding[] = [];
        if (found.guard) findings.push(guardFinding(found.guard.endsAt, found.guard.limitVersion, guard));
        if (found.idempotency && idempotency) {
          const { taskId, requestHash } = found.idempotency;
          findings.push(idempotencyFinding(taskId, requestHash, idempotency.requestHash));
        }
        // Throws 401, 409 or 503 by the precedence; a replay is answered as a try's would be.
        if (findings.length > 0) return replay(ctx, task.userId, answerOf(findings, undefined));
        // A budget read as spent answers its own 402.
        const [budgetSpent] = exhausted.values();
        throw budgetSpent ?? new InsufficientCreditsError(cost, totalOf(balances ?? []));
      }
      const contributors: Array<Contributor<AcceptFinding>> = plan.map(({ shard, delta }) =>
        balanceDebit(ctx, { userId: task.userId, shard, delta, at: createdAt, accountLimitVersion: account.version }),
      );
      if (guard) contributors.push(keyGuardContributor(ctx, { userId: task.userId, guard, shard: first }));
      // Each spend allowance: one contributor per counter shard the cost is counted on.
      for (const [scope, spendPlan] of spendPlans) {
        const budget = budgets.get(scope);
        if (!budget) continue;
        for (const { shard, delta } of spendPlan) {
          contributors.push(
            spendAllowance(ctx, { scope, userId: task.userId, limit: budget.limit, shard, delta, at: task.now }),
          );
        }
      }
      // Where the cost was counted, for a refund to give it back there.
      const counted = countedOn(task.userId, budgets, spendPlans, task.now);
      const accepted: TaskRecord = { ...record };
      for (const [name, value] of Object.entries(counted)) {
        if (value !== undefined) Object.assign(accepted, { [name]: value });
      }
      contributors.push(newTask(ctx, { ...taskItem, ...counted }), ledger);
      if (replayRecord) contributors.push(replayRecord);
      contributors.push(
        queueEntry,
        // Usage: the day's counters, on the shard this try debits (store/usage.ts).
        unconditioned('usage counter', [
          usageCounterChange(ctx, {
            userId: task.userId,
            day: usageDay(createdAt),
            shard: first,
            subject: { keyId: task.keyId, model: task.model },
            change: { debited: cost, accepted: 1 },
          }),
        ]),
      );
      const transaction = compose(contributors);
      // The plan is taken in the layout this process remembers while it is in flight (store/thin-balance.ts).
      const release = holdPlan(task.userId, plan);
      try {
        // One try, one command: the loop below decides whether and how to try again.
        await transactOnce(ctx, transaction.items);
        release(true);
        if (gathering !== scout) gathering?.end();
        if (!balances) rememberThick(task.userId);
        return { task: accepted, replayed: false };
      } catch (error) {
        release(false);
        if (gathering !== scout) gathering?.end();
        const outcome = acceptAnswer(error, transaction);
        if (outcome.kind === 'replay') return replay(ctx, task.userId, outcome);
        // A budget read as spent, and its shard short on this try: 402, naming the budget.
        const spent = outcome.kind === 'short' ? outcome.spend?.find((scope) => exhausted.has(scope)) : undefined;
        if (spent) throw exhausted.get(spent);
        if (attempt >= (ctx.retry?.maxAttempts ?? ACCEPT_ATTEMPTS)) {
          const [budgetSpent] = exhausted.values();
          if (budgetSpent) throw budgetSpent;
          // Out of tries. Busy (503, "try again") is only the truth while the account could still pay:
          // when the race has spent its credits meanwhile, the honest answer is 402.
          const latest = await readShards(ctx, task.userId);
          if (totalOf(latest) < cost) throw new InsufficientCreditsError(cost, totalOf(latest));
          // A budget spent by the racing accepts meanwhile is told by the retry the 503 asks for (the
          // counter then refuses at once): reading it here cost the submit functions 0.4 KB of budget.
          throw busy(error);
        }
        if (outcome.kind === 'account-limit') {
          // Learnt: the next try (at once: this is not contention, and counted, as a change being stamped may show two
          // versions for a moment) states the limit now stamped.
          account = { version: outcome.version, credits: outcome.credits };
          learnAccountLimit(task.userId, account);
          continue;
        }
        if (outcome.kind === 'conflict') {
          for (const shard of outcome.conflictedShards) avoid.add(shard);
          // A gathering that met a conflict backs off before it reads again (store/thin-balance.ts).
          await pauseAfterConflict(ctx, attempt, outcome.conflictedShards.length > 0 && plan.length === 1);
          target = randomShard(avoid, random);
        }
        // What was read is stale once a try failed: read again what was read, and what turned out short.
        const short = outcome.kind === 'short' ? outcome : undefined;
        if (balances || (short && short.shards.length > 0)) balances = await readLayout(ctx, task.userId, cost);
        for (const [scope, budget] of budgets) {
          if (budget.rooms || short?.spend?.includes(scope)) {
            budget.rooms = await readRooms(ctx, task.userId, budget.limit, task.now);
          }
        }
      }
    }
  } finally {
    scout?.end();
  }
}

/** The answer to a replayed Idempotency-Key: its original task (`outcome` is a replay: other outcomes do not come here). */
async function replay(
  ctx: RetryingStoreContext,
  userId: string,
  outcome: AcceptOutcome,
): Promise<{ task: TaskRecord; replayed: boolean }> {
  const original = outcome.kind === 'replay' ? await getTask(ctx, userId, outcome.replayOf) : undefined;
  // Its task was deleted by its owner (DELETE /api/ai/tasks/{id}): the key stays used, for its 24 h.
  if (!original) throw new TaskStateError('The task of this Idempotency-Key was deleted: use a new key');
  return { task: original, replayed: true };
}
