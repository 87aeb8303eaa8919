/**
 * The one place that reads DynamoDB failures: cancellation reasons of transactions and conditional
 * check failures become domain outcomes here, and the transient failures the SDK does not retry
 * itself (transaction conflicts, cancelled transactions) are retried here, with bounds.
 */
import { ServiceBusyError } from '../core/errors';
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

/** A string attribute of an item returned with a failed condition (ALL_OLD). */
export function readString(item: Record<string, WireValue> | undefined, name: string): string | undefined {
  return item?.[name]?.S;
}

/** A number attribute of an item returned with a failed condition (ALL_OLD). */
export function readNumber(item: Record<string, WireValue> | undefined, name: string): number | undefined {
  const text = item?.[name]?.N;
  return text === undefined ? undefined : Number(text);
}

// ---------------------------------------------------------------------------------------------------
// Domain outcomes
// ---------------------------------------------------------------------------------------------------

/** Whose budget a counter belongs to: the key's limit or the account's. */
export type SpendScope = 'key' | 'account';

/**
 * Maps a failed completion (the task's update and its usage counter, one transaction): true when the
 * task was no longer pending (another caller ended it), so nothing was written. Rethrows anything else.
 */
export function completionLost(error: unknown, layout: { task: number }): true {
  const reasons = cancellationReasons(error);
  if (reasons && failedCondition(reasons, layout.task)) return true;
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
