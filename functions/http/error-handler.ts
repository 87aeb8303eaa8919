/**
 * The one mapping from the project's error classes to HTTP statuses and bodies (DESIGN.md's table).
 * Anything that is not a DomainError is unexpected: the caller gets 500 with the request id, the log
 * gets the cause, and no stack trace or internal message leaves the service.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import {
  CsrfError,
  DomainError,
  ForbiddenError,
  IdempotencyConflictError,
  InsufficientCreditsError,
  KeyLimitError,
  KeyNotFoundError,
  KeyStateError,
  QueueFullError,
  ServiceBusyError,
  SessionRequiredError,
  SpendLimitError,
  TaskNotFoundError,
  TaskStateError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../core/errors';
import { logger } from '../observability/logger';
import { jsonResponse } from './response';

/** Status and body for an error; `requestId` is echoed only where a client needs it to report a fault. */
export function errorResponse(error: unknown, requestId: string): APIGatewayProxyResult {
  const headers = { 'X-Request-Id': requestId };
  if (error instanceof ValidationError) {
    return jsonResponse(400, { error: error.message, details: error.details }, headers);
  }
  if (error instanceof UnauthorizedError) return jsonResponse(401, { error: error.message }, headers);
  if (error instanceof InsufficientCreditsError) {
    return jsonResponse(402, { error: error.message, required: error.required, balance: error.balance }, headers);
  }
  if (error instanceof SpendLimitError) {
    const { limit, period, spent, resetsAt } = error;
    return jsonResponse(402, { error: error.message, limit, period, spent, resetsAt }, headers);
  }
  if (error instanceof ForbiddenError) return jsonResponse(403, { error: error.message }, headers);
  if (error instanceof SessionRequiredError) return jsonResponse(403, { error: error.message }, headers);
  if (error instanceof CsrfError) {
    return jsonResponse(403, { error: error.message, reason: error.reason }, headers);
  }
  if (error instanceof KeyNotFoundError) return jsonResponse(404, { error: 'Key not found' }, headers);
  if (error instanceof KeyStateError) return jsonResponse(409, { error: error.message }, headers);
  if (error instanceof KeyLimitError) return jsonResponse(409, { error: error.message, limit: error.limit }, headers);
  if (error instanceof TaskNotFoundError) return jsonResponse(404, { error: error.message }, headers);
  if (error instanceof TaskStateError) return jsonResponse(409, { error: error.message }, headers);
  if (error instanceof IdempotencyConflictError) return jsonResponse(409, { error: error.message }, headers);
  if (error instanceof QueueFullError) {
    return jsonResponse(
      429,
      { error: error.message, limit: error.limit },
      { ...headers, 'Retry-After': String(error.retryAfterSeconds) },
    );
  }
  if (error instanceof UnsupportedMediaTypeError) return jsonResponse(415, { error: error.message }, headers);
  if (error instanceof ServiceBusyError) {
    return jsonResponse(503, { error: error.message }, { ...headers, 'Retry-After': String(error.retryAfterSeconds) });
  }
  return jsonResponse(500, { error: 'Internal error', requestId }, headers);
}

/** Middy onError: logs unexpected errors with their cause and answers with `errorResponse`. */
export function httpErrorHandler(): MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> {
  return {
    name: 'httpErrorHandler',
    onError: (request) => {
      const requestId = request.event.requestContext?.requestId ?? request.context.awsRequestId;
      const error = request.error;
      if (!(error instanceof DomainError)) {
        logger.error('Unexpected error', { requestId, error });
      }
      request.response = errorResponse(error, requestId);
    },
  };
}
