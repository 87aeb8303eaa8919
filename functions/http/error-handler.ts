/**
 * The one place the API answers an error: a DomainError with the status, body and headers its class
 * names (core/errors.ts, docs/api/errors.md). Anything that is not a DomainError is unexpected: the caller gets 500 with the request id, the log
 * gets the cause, and no stack trace or internal message leaves the service.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { DomainError } from '../core/errors';
import { logger } from '../observability/logger';
import { jsonResponse } from './response';

/** Status and body for an error; `requestId` is echoed only where a client needs it to report a fault. */
export function errorResponse(error: unknown, requestId: string): APIGatewayProxyResult {
  const headers = { 'X-Request-Id': requestId };
  if (error instanceof DomainError) return jsonResponse(error.status, error.body(), { ...error.headers(), ...headers });
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
