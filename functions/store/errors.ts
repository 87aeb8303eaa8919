/**
 * The one place that reads DynamoDB failures: cancellation reasons of transactions and conditional
 * check failures become domain outcomes here, and the transient failures the SDK does not retry
 * itself (transaction conflicts, cancelled transactions) are retried here, with bounds.
 */
import {
  IdempotencyConflictError,
  KeyLimitError,
  ServiceBusyError,
  UnauthorizedError,
  UsageError,
} from '../core/errors';
import type { StoreContext } from './client';

/** One entry of `TransactionCanceledException.CancellationReasons`, in transaction item order. */
export interface CancellationReason {
  Code?: string;
  Message?: string;
  /** The item as it was (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`), in AttributeValue form. */
  Item?: Record<string, WireValue>;
}

/**
 * The wire shape of an attribute value. The document client does not unmarshall errors, so the few
 * scalar fields the mappings need are read from it directly.
 */
export type WireValue = { S?: string; N?: string; BOOL?: boolean } & Record<string, unknown>;

function errorName(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const name = (error as { name?: unknown }).name;
  return typeof name === 'string' ? name : undefined;
}

/** The reasons of a cancelled transaction, or undefined for any other error. */
export function cancellationReasons(error: unknown): CancellationReason[] | undefined {
  if (errorName(error) !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: unknown }).CancellationReasons;
  return Array.isArray(reasons) ? (reasons as CancellationReason[]) : [];
}

/** A single-item write whose condition did not hold. */
export function isConditionalCheckFailed(error: unknown): boolean {
  return errorName(error) === 'ConditionalCheckFailedException';
}

function failedCondition(reasons: CancellationReason[], index: number | undefined): CancellationReason | undefined {
  if (index === undefined) return undefined;
  const reason = reasons[index];
  return reason?.Code === 'ConditionalCheckFailed' ? reason : undefined;
}

function readString(item: Record<string, WireValue> | undefined, name: string): string | undefined {
  return item?.[name]?.S;
}

function readNumber(item: Record<string, WireValue> | undefined, name: string): number | undefined {
  const text = item?.[name]?.N;
  return text === undefined ? undefined : Number(text);
}

/**
 * Whether a failed key-end guard says the key has ended: its `endsAt` is at or before the accept's time,
 * or the guard came back without a limit stamp to blame (an old guard, or no item returned).
 */
function keyEndedOn(guard: CancellationReason, nowSeconds: number | undefined): boolean {
  const endsAt = readNumber(guard.Item, 'endsAt');
  if (endsAt !== undefined && (nowSeconds === undefined || endsAt <= nowSeconds)) return true;
  return readNumber(guard.Item, 'limitVersion') === undefined;
}

// ---------------------------------------------------------------------------------------------------
// Domain outcomes
// ---------------------------------------------------------------------------------------------------

/** Where the accept transaction put each conditional item. */
export interface AcceptLayout {
  /** The balance shards the accept writes, in transaction order: they are its first items. */
  shards: number[];
  task: number;
  ledger: number;
  idempotency?: number;
  requestHash?: string;
  /** The key-end guard's ConditionCheck (accepts with an API key only). */
  keyEnd?: number;
  /** The accept's time in epoch seconds: a guard's `endsAt` at or before it means the key has ended. */
  nowSeconds?: number;
  /** The key's counter shards in the transaction (accepts with a limited key only). */
  spend?: number[];
  /** The account limit version the debits state (store/spend.ts `knownAccountLimit`). */
  accountLimitVersion?: number;
  /** The account's monthly counter shards in the transaction (an account with a limit only). */
  accountSpend?: number[];
}

/**
 * What a cancelled accept means, besides the outcomes thrown:
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

/** Whose budget a counter belongs to: the key's limit or the account's. */
export type SpendScope = 'key' | 'account';

/**
 * Maps a failed accept. Idempotency wins over credits and over the key's spend limit (a replayed request
 * gets its original answer even when the balance or the budget has since run out), and an ended key over
 * everything (a revoked key spends nothing and replays nothing). Throws `UnauthorizedError` /
 * `IdempotencyConflictError` / `ServiceBusyError` (the key's limit changed since the authorizer read it),
 * or rethrows what it does not recognise. A counter shard short of room is no 402 by itself: the accept
 * reads the budget's sum (store/spend.ts).
 */
export function acceptFailure(error: unknown, layout: AcceptLayout): AcceptOutcome {
  const reasons = cancellationReasons(error);
  if (!reasons) {
    if (isRetryable(error)) return { kind: 'conflict', conflictedShards: [] };
    throw error;
  }
  const guard = failedCondition(reasons, layout.keyEnd);
  // The guard failed for one of two reasons: the key ended (401), or its spend limit changed after the
  // authorizer read it (store/spend.ts): nothing was written, and a retry reads the new limit (503).
  // The key's end outranks everything; a stale limit only the replay (checked below).
  if (guard && keyEndedOn(guard, layout.nowSeconds)) throw new UnauthorizedError();
  const shortShards: number[] = [];
  const conflictedShards: number[] = [];
  let accountLimit: AcceptOutcome | undefined;
  for (const [index, shard] of layout.shards.entries()) {
    const reason = reasons[index];
    if (reason?.Code === 'TransactionConflict') conflictedShards.push(shard);
    const failed = failedCondition(reasons, index);
    const version = readNumber(failed?.Item, 'acctLimitVersion') ?? 0;
    if (!failed) continue;
    if (version !== (layout.accountLimitVersion ?? version)) {
      accountLimit = { kind: 'account-limit', version, credits: readNumber(failed.Item, 'acctLimitCredits') };
    } else shortShards.push(shard);
  }
  const idempotency = failedCondition(reasons, layout.idempotency);
  if (idempotency) {
    const taskId = readString(idempotency.Item, 'taskId');
    const requestHash = readString(idempotency.Item, 'requestHash');
    if (taskId !== undefined && requestHash === layout.requestHash) return { kind: 'replay', replayOf: taskId };
    throw new IdempotencyConflictError();
  }
  if (guard) throw busy(error);
  // The account's limit changed: judged by the one now stamped, not by the counter of the old one.
  if (accountLimit) return accountLimit;
  // A counter shard short of room: the budget may still have room on other shards.
  const spend: SpendScope[] = [];
  if (layout.spend?.some((index) => failedCondition(reasons, index))) spend.push('key');
  if (layout.accountSpend?.some((index) => failedCondition(reasons, index))) spend.push('account');
  if (spend.length > 0) return { kind: 'short', shards: shortShards, spend };
  if (shortShards.length > 0) return { kind: 'short', shards: shortShards };
  if (failedCondition(reasons, layout.task) || failedCondition(reasons, layout.ledger)) {
    throw new Error('Task id already in use: a task id must be unique per user', { cause: error });
  }
  if (isRetryable(error)) return { kind: 'conflict', conflictedShards };
  throw error;
}

/** What a cancelled refund means. */
export type RefundFailure = 'task-missing' | 'not-refundable';

/**
 * Maps a failed refund: the task was missing, or it is no longer refundable (terminal, or already
 * refunded: the exactly-once case). Rethrows anything else.
 */
export function refundFailure(error: unknown, layout: { task: number; ledger: number }): RefundFailure {
  const reasons = cancellationReasons(error);
  if (!reasons) throw error;
  const task = failedCondition(reasons, layout.task);
  if (task) return task.Item ? 'not-refundable' : 'task-missing';
  // The refund entry's key is unique per task, so it exists only if the task was refunded.
  if (failedCondition(reasons, layout.ledger)) return 'not-refundable';
  throw error;
}

/**
 * Maps a failed completion (the task's update and its usage counter, one transaction): true when the
 * task was no longer pending (another caller ended it), so nothing was written. Rethrows anything else.
 */
export function completionLost(error: unknown, layout: { task: number }): true {
  const reasons = cancellationReasons(error);
  if (reasons && failedCondition(reasons, layout.task)) return true;
  throw error;
}

/** Maps a failed grant: the same grant id at the same instant was recorded already. */
export function grantFailure(error: unknown, layout: { ledger: number; grantId: string }): never {
  const reasons = cancellationReasons(error);
  if (reasons && failedCondition(reasons, layout.ledger)) {
    throw new UsageError(`Grant ${layout.grantId} is already recorded`);
  }
  throw error;
}

/**
 * Maps a failed attempt record (the attempt item and the delivery's update, one transaction): true when
 * the delivery's claim was lost (another worker or a re-claim moved it on), so nothing was written.
 * Rethrows anything else.
 */
export function attemptRecordLost(error: unknown): true {
  const reasons = cancellationReasons(error);
  if (reasons?.some((reason) => reason.Code === 'ConditionalCheckFailed')) return true;
  throw error;
}

/**
 * Maps a failed key write (issue or rotation) whose transaction took one more key into the account's
 * active-key count: when the count's condition failed, the account holds `limit` active keys already
 * (KeyLimitError, a 409 naming the limit). Returns the error unchanged for any other cause.
 */
export function keyCountFailure(
  error: unknown,
  layout: { counter: number | undefined; limit: number | undefined },
): unknown {
  const reasons = cancellationReasons(error);
  if (reasons && layout.limit !== undefined && failedCondition(reasons, layout.counter)) {
    return new KeyLimitError(layout.limit);
  }
  return error;
}

/** True when a conditional single-item update lost (the state moved on); anything else rethrows. */
export function lostCondition(error: unknown): true {
  if (isConditionalCheckFailed(error)) return true;
  throw error;
}

// ---------------------------------------------------------------------------------------------------
// Retries
// ---------------------------------------------------------------------------------------------------

const RETRYABLE_REASONS = new Set(['TransactionConflict', 'ThrottlingError']);

/**
 * Transient failures the SDK does not retry itself: `TransactionConflictException`, and a cancelled
 * transaction whose reasons include a conflict or throttling (a cancelled transaction wrote nothing, so
 * trying again is safe). Plain throttling errors (`ProvisionedThroughputExceededException`,
 * `ThrottlingException`, `RequestLimitExceeded`) and network faults are already retried by the SDK's
 * retry strategy; retrying them here too would multiply the attempts (3 x 5) and the latency.
 */
export function isRetryable(error: unknown): boolean {
  if (errorName(error) === 'TransactionConflictException') return true;
  const reasons = cancellationReasons(error);
  return reasons?.some((reason) => reason.Code !== undefined && RETRYABLE_REASONS.has(reason.Code)) ?? false;
}

const THROTTLED = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);

/**
 * A request DynamoDB throttled (a hot partition, a quota) and the SDK's retry strategy gave up on:
 * nothing was written, and the caller is told busy rather than a fault (the conflict layer's throughput
 * model found GETs answering 500 under it).
 */
export function isThrottled(error: unknown): boolean {
  return THROTTLED.has(errorName(error) ?? '');
}

export interface RetryOptions {
  /** Total tries, the first included; default 5. */
  maxAttempts?: number;
  /** Backoff base; the n-th retry waits a random time in [0, min(maxDelayMs, baseDelayMs * 2^(n-1))). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Injectable for tests. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/**
 * The context every store operation takes: a plain `StoreContext` works; `retry` overrides the retry
 * settings (unit tests make the delays zero).
 */
export type RetryingStoreContext = StoreContext & { retry?: RetryOptions };

export const RETRY_DEFAULTS = { maxAttempts: 5, baseDelayMs: 25, maxDelayMs: 1000 } as const;

/** Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff And Jitter"). */
export function backoffDelay(retry: number, options: RetryOptions = {}): number {
  const base = options.baseDelayMs ?? RETRY_DEFAULTS.baseDelayMs;
  const cap = options.maxDelayMs ?? RETRY_DEFAULTS.maxDelayMs;
  const random = options.random ?? Math.random;
  return Math.floor(random() * Math.min(cap, base * 2 ** (retry - 1)));
}

/** A real wait (tests inject `retry.sleep` instead). */
export const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `operation` and tries again on transient failures, at most `maxAttempts` times in all. After
 * the last try the error propagates unchanged; throttling the SDK gave up on becomes `ServiceBusyError`
 * at once; other errors propagate at once.
 */
export async function withRetry<T>(operation: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? RETRY_DEFAULTS.maxAttempts);
  const sleep = options.sleep ?? realSleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      // The SDK retried the throttling already: busy (503, Retry-After), as a lost conflict, not a 500.
      if (isThrottled(error)) throw busy(error);
      if (!isRetryable(error)) throw error;
      if (attempt >= maxAttempts) throw busy(error);
      await sleep(backoffDelay(attempt, options));
    }
  }
}

/**
 * The domain error for contention that retrying could not win: a 503 with Retry-After, never a 500.
 * Only ever built from a failure that wrote nothing (a cancelled transaction, a refused write).
 */
export function busy(error: unknown): ServiceBusyError {
  return new ServiceBusyError({ cause: error });
}

/** What a cancelled opening of a delivery means (the delivery's put and the open counter's update). */
export type DeliveryOpenFailure = 'exists' | 'over-limit';

/**
 * Maps a failed opening of a webhook delivery: the task has its delivery already (a redelivered
 * record), an account event's marker says it was sent already (`marker`: its place, when there is one),
 * or the account is at its bound of open deliveries. Rethrows anything else (a conflict is retried by
 * `withRetry` before it gets here).
 */
export function deliveryOpenFailure(
  error: unknown,
  layout: { delivery: number; counter?: number; marker?: number },
): DeliveryOpenFailure {
  const reasons = cancellationReasons(error);
  if (!reasons) throw error;
  if (failedCondition(reasons, layout.delivery) || failedCondition(reasons, layout.marker)) return 'exists';
  if (failedCondition(reasons, layout.counter)) return 'over-limit';
  throw error;
}
