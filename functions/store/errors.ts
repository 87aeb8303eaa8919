/**
 * The one place that reads DynamoDB failures: cancellation reasons of transactions and conditional
 * check failures become domain outcomes here, and the transient failures the SDK does not retry
 * itself (transaction conflicts, cancelled transactions) are retried here, with bounds.
 */
import { IdempotencyConflictError, InsufficientCreditsError, UsageError } from '../core/errors';
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
  const raw = item?.[name]?.N;
  return raw === undefined ? undefined : Number(raw);
}

// ---------------------------------------------------------------------------------------------------
// Domain outcomes
// ---------------------------------------------------------------------------------------------------

/** Where the accept transaction put each conditional item. */
export interface AcceptLayout {
  account: number;
  task: number;
  ledger: number;
  idempotency?: number;
  requestHash?: string;
  cost: number;
}

/** A cancelled accept that is not an error: the key was used before with the same request. */
export interface AcceptReplay {
  replayOf: string;
}

/**
 * Maps a failed accept. Idempotency wins over credits: a replayed request must get its original
 * answer even when the balance has since run out. Returns the task to replay, or throws
 * `IdempotencyConflictError` / `InsufficientCreditsError`, or rethrows what it does not recognise.
 */
export function acceptFailure(error: unknown, layout: AcceptLayout): AcceptReplay {
  const reasons = cancellationReasons(error);
  if (!reasons) throw error;
  const idempotency = failedCondition(reasons, layout.idempotency);
  if (idempotency) {
    const taskId = readString(idempotency.Item, 'taskId');
    const requestHash = readString(idempotency.Item, 'requestHash');
    if (taskId !== undefined && requestHash === layout.requestHash) return { replayOf: taskId };
    throw new IdempotencyConflictError();
  }
  const account = failedCondition(reasons, layout.account);
  if (account) {
    // No ALL_OLD item means the account does not exist: it holds nothing.
    throw new InsufficientCreditsError(layout.cost, readNumber(account.Item, 'balance') ?? 0);
  }
  if (failedCondition(reasons, layout.task) || failedCondition(reasons, layout.ledger)) {
    throw new Error('Task id already in use: a task id must be unique per user', { cause: error });
  }
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

/** Maps a failed grant: the same grant id at the same instant was recorded already. */
export function grantFailure(error: unknown, layout: { ledger: number; grantId: string }): never {
  const reasons = cancellationReasons(error);
  if (reasons && failedCondition(reasons, layout.ledger)) {
    throw new UsageError(`Grant ${layout.grantId} is already recorded`);
  }
  throw error;
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

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `operation` and tries again on transient failures, at most `maxAttempts` times in all. After
 * the last try the error propagates unchanged; other errors propagate at once.
 */
export async function withRetry<T>(operation: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? RETRY_DEFAULTS.maxAttempts);
  const sleep = options.sleep ?? realSleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (attempt >= maxAttempts || !isRetryable(error)) throw error;
      await sleep(backoffDelay(attempt, options));
    }
  }
}
