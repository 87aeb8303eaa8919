/**
 * The project's error classes. Domain code throws these; each names its HTTP status, body and headers
 * here, beside its meaning, and `functions/http/error-handler.ts` is the one place that answers with
 * them. The answer lives on the class rather than in one `instanceof` chain so that a bundle carries
 * only the classes its code can throw (measured: about 1 KB of the submit functions' bundle budget).
 */

/**
 * Base class so the error handler can tell "ours, expected" from "unexpected" (500). Each subclass
 * names itself: the bundles are minified without keepNames (measured 7% smaller, bench/bundles.ts), so
 * a class name read at run time would be a minified one; this is the fallback for one that does not.
 */
export abstract class DomainError extends Error {
  override readonly name: string = this.constructor.name;
  /** The HTTP status of the answer. */
  abstract readonly status: number;
  /** The answer's body: `{ error }` with the message, and what else the status needs. */
  body(): Record<string, unknown> {
    return { error: this.message };
  }
  /** Headers of the answer beyond the request id (`Retry-After`). */
  headers(): Record<string, string> {
    return {};
  }
}

/** Field errors keyed by dotted path (`inputImageUrls.3`), plus errors about the body as a whole. */
export interface ValidationDetails {
  fieldErrors: Record<string, string[]>;
  formErrors: string[];
}

/** 400: the body failed validation or is not JSON. */
export class ValidationError extends DomainError {
  override readonly name: string = 'ValidationError';
  readonly status: number = 400;
  override body(): Record<string, unknown> {
    return { error: this.message, details: this.details };
  }
  constructor(readonly details: ValidationDetails) {
    super('Invalid request');
  }
}

/** 415: the request body is not declared as JSON. */
export class UnsupportedMediaTypeError extends DomainError {
  override readonly name: string = 'UnsupportedMediaTypeError';
  readonly status: number = 415;
  constructor() {
    super('Unsupported Media Type');
  }
}

/** 401: missing, unknown, revoked or expired key. */
export class UnauthorizedError extends DomainError {
  override readonly name: string = 'UnauthorizedError';
  readonly status: number = 401;
  constructor() {
    super('Unauthorized');
  }
}

/** 403: a valid key used from an address outside its allowlist. */
export class ForbiddenError extends DomainError {
  override readonly name: string = 'ForbiddenError';
  readonly status: number = 403;
  constructor() {
    super('Forbidden');
  }
}

/** 402: the account cannot pay for the task. */
export class InsufficientCreditsError extends DomainError {
  override readonly name: string = 'InsufficientCreditsError';
  readonly status: number = 402;
  override body(): Record<string, unknown> {
    return { error: this.message, required: this.required, balance: this.balance };
  }
  constructor(
    readonly required: number,
    readonly balance: number,
  ) {
    super('Insufficient credits');
  }
}

/** 409: an Idempotency-Key already used with a different request body. */
export class IdempotencyConflictError extends DomainError {
  override readonly name: string = 'IdempotencyConflictError';
  readonly status: number = 409;
  constructor() {
    super('Idempotency key reused with a different request');
  }
}

/**
 * 429: the account already has `limit` tasks queued for the provider (docs/design/dispatching.md); nothing was
 * debited. `Retry-After` says when to try again (`retryAfterSeconds`).
 */
export class QueueFullError extends DomainError {
  override readonly name: string = 'QueueFullError';
  readonly status: number = 429;
  override body(): Record<string, unknown> {
    return { error: this.message, limit: this.limit };
  }
  override headers(): Record<string, string> {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
  constructor(
    readonly limit: number,
    readonly retryAfterSeconds: number,
  ) {
    super('Queue full');
  }
}

/** 404: the task does not exist or belongs to someone else (indistinguishable by design). */
export class TaskNotFoundError extends DomainError {
  override readonly name: string = 'TaskNotFoundError';
  readonly status: number = 404;
  constructor() {
    super('Task not found');
  }
}

/**
 * 409: the task cannot be cancelled any more: it has left the queue for the provider ("Task already
 * started") or it has ended ("Task already finished").
 */
export class TaskStateError extends DomainError {
  override readonly name: string = 'TaskStateError';
  readonly status: number = 409;
}

/**
 * 503: the store could not win against concurrent writes within its retry budget (transaction
 * conflicts, throttling). Nothing was written; the same request (same Idempotency-Key) may be retried.
 */
export class ServiceBusyError extends DomainError {
  override readonly name: string = 'ServiceBusyError';
  readonly status: number = 503;
  override headers(): Record<string, string> {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
  /** What `Retry-After` tells the client: the contention is gone in well under a second. */
  readonly retryAfterSeconds: number = 1;
  constructor(options?: { cause?: unknown }, message = 'Service busy, retry later') {
    super(message, options);
  }
}

/**
 * 503: the request ran out of its time (the function's timeout, API Gateway's 29 s) before it had an
 * answer, on a table or machine too slow for it. What it did may or may not have been written, so the
 * answer says so: a retry is safe for reads, and for a submit with the same `Idempotency-Key` (done once).
 * Raised by the middy stack's early-timeout response (http/timeout.ts), never a 500: nothing is wrong with
 * the request.
 */
export class RequestOutOfTimeError extends ServiceBusyError {
  override readonly name: string = 'RequestOutOfTimeError';
  constructor() {
    super(
      undefined,
      'Service busy: the request ran out of time and may or may not have taken effect; retry it (a submit with the same Idempotency-Key is done once)',
    );
  }
}

/**
 * 503: API Gateway's control plane (creating, enrolling or deleting the API Gateway key that carries a
 * key's rate limit) refused or failed the call: its per-AWS-account rate, shared by every customer, was
 * exceeded, or it was unavailable. The key was not issued; the same request may be retried.
 */
export class ControlPlaneBusyError extends ServiceBusyError {
  override readonly name: string = 'ControlPlaneBusyError';
  override readonly retryAfterSeconds: number;
  constructor(options: { cause?: unknown; retryAfterSeconds?: number } = {}) {
    super({ cause: options.cause }, 'Key service busy, retry later');
    this.retryAfterSeconds = options.retryAfterSeconds ?? CONTROL_PLANE_RETRY_AFTER_SECONDS;
  }
}

/** `Retry-After` of a control-plane refusal without a hint of its own: its rate refills within seconds. */
export const CONTROL_PLANE_RETRY_AFTER_SECONDS = 5;

/**
 * 409: the account holds as many active API keys as it may (`limit`); revoke one first. Every key has
 * a rate bucket of its own, so the cap is what bounds one account's request rate.
 */
export class KeyLimitError extends DomainError {
  override readonly name: string = 'KeyLimitError';
  readonly status: number = 409;
  override body(): Record<string, unknown> {
    return { error: this.message, limit: this.limit };
  }
  constructor(readonly limit: number) {
    super(
      `This account already has ${limit} active API key${limit === 1 ? '' : 's'}, the most it may hold; revoke one first`,
    );
  }
}

/** An operator/CLI input error (never reaches HTTP; a 400 if it did). */
export class UsageError extends DomainError {
  override readonly name: string = 'UsageError';
  readonly status: number = 400;
}

/** 403: the route manages keys or the account, which a leaked API key must not be able to do. */
export class SessionRequiredError extends DomainError {
  override readonly name: string = 'SessionRequiredError';
  readonly status: number = 403;
  constructor() {
    super('This endpoint needs a signed-in session; API keys cannot use it');
  }
}

/** Why a state-changing request with a session was refused as possible cross-site request forgery. */
export type CsrfFailure = 'missing-token' | 'bad-token' | 'missing-origin' | 'cross-origin';

/** 403: a state-changing request with a session lacks a matching CSRF token or a same-origin `Origin`. */
export class CsrfError extends DomainError {
  override readonly name: string = 'CsrfError';
  readonly status: number = 403;
  override body(): Record<string, unknown> {
    return { error: this.message, reason: this.reason };
  }
  constructor(readonly reason: CsrfFailure) {
    super('Cross-site request refused');
  }
}

/** 404: no such key, or someone else's (indistinguishable by design). */
export class KeyNotFoundError extends DomainError {
  override readonly name: string = 'KeyNotFoundError';
  readonly status: number = 404;
  /** Always the same words: a subclass's message may name the key, which a stranger must not learn. */
  override body(): Record<string, unknown> {
    return { error: 'Key not found' };
  }
  constructor() {
    super('Key not found');
  }
}

/** 409: the key cannot undergo the action (rotating a revoked, expired or already rotated key). */
export class KeyStateError extends DomainError {
  override readonly name: string = 'KeyStateError';
  readonly status: number = 409;
}

/**
 * 402: the caller's API key (`scope: key`) or the account (`scope: account`, monthly) has spent its
 * budget for the period (docs/api/spend-limits-and-usage.md#spend-limits); nothing was debited. `resetsAt` is when
 * the next
 * period starts (ISO 8601, UTC), null for a `total` budget.
 */
export class SpendLimitError extends DomainError {
  override readonly name: string = 'SpendLimitError';
  readonly status: number = 402;
  override body(): Record<string, unknown> {
    const { scope, limit, period, spent, resetsAt } = this;
    return { error: this.message, scope, limit, period, spent, resetsAt };
  }
  constructor(
    readonly limit: number,
    readonly period: 'day' | 'month' | 'total',
    readonly spent: number,
    readonly resetsAt: string | null,
    /** Whose budget: the API key's, or the whole account's monthly one. */
    readonly scope: 'key' | 'account' = 'key',
  ) {
    super('Spend limit reached');
  }
}

/** 404: the upload does not exist, has expired or belongs to someone else (indistinguishable by design). */
export class UploadNotFoundError extends DomainError {
  override readonly name: string = 'UploadNotFoundError';
  readonly status: number = 404;
  constructor() {
    super('Upload not found');
  }
}
