/**
 * The project's error classes. Domain code throws these; `functions/http/error-handler.ts` is the one
 * place that turns them into HTTP statuses and bodies.
 */

/** Base class so the error handler can tell "ours, expected" from "unexpected" (500). */
export abstract class DomainError extends Error {
  override readonly name: string = this.constructor.name;
}

/** Field errors keyed by dotted path (`inputImageUrls.3`), plus errors about the body as a whole. */
export interface ValidationDetails {
  fieldErrors: Record<string, string[]>;
  formErrors: string[];
}

/** 400: the body failed validation or is not JSON. */
export class ValidationError extends DomainError {
  constructor(readonly details: ValidationDetails) {
    super('Invalid request');
  }
}

/** 415: the request body is not declared as JSON. */
export class UnsupportedMediaTypeError extends DomainError {
  constructor() {
    super('Unsupported Media Type');
  }
}

/** 401: missing, unknown, revoked or expired key. */
export class UnauthorizedError extends DomainError {
  constructor() {
    super('Unauthorized');
  }
}

/** 403: a valid key used from an address outside its allowlist. */
export class ForbiddenError extends DomainError {
  constructor() {
    super('Forbidden');
  }
}

/** 402: the account cannot pay for the task. */
export class InsufficientCreditsError extends DomainError {
  constructor(
    readonly required: number,
    readonly balance: number,
  ) {
    super('Insufficient credits');
  }
}

/** 409: an Idempotency-Key already used with a different request body. */
export class IdempotencyConflictError extends DomainError {
  constructor() {
    super('Idempotency key reused with a different request');
  }
}

/** 404: the task does not exist or belongs to someone else (indistinguishable by design). */
export class TaskNotFoundError extends DomainError {
  constructor() {
    super('Task not found');
  }
}

/** An operator/CLI input error (never reaches HTTP). */
export class UsageError extends DomainError {}
