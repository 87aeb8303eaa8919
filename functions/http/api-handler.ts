/**
 * The middy stack every API Lambda uses: error handling, caller identity, then (for POST) the JSON
 * body. Middleware first, the handler last; handlers receive a typed request and return a typed
 * result, and never build responses or map errors themselves.
 */
import middy, { type MiddlewareObj } from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { UnsupportedMediaTypeError, ValidationError } from '../core/errors';
import { type Logger, logger } from '../observability/logger';
import { type Caller, resolveCaller } from './caller';
import { httpErrorHandler } from './error-handler';
import { jsonResponse } from './response';

/** What a handler gets: the caller is authenticated and the body (when any) is parsed JSON. */
export interface ApiRequest {
  caller: Caller;
  /** Parsed JSON body for routes that take one; `undefined` otherwise. */
  body: unknown;
  pathParameters: Record<string, string | undefined>;
  /** Case-insensitive header lookup. */
  header(name: string): string | undefined;
  requestId: string;
  log: Logger;
}

export interface ApiResult {
  statusCode: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type ApiHandlerFn = (request: ApiRequest) => Promise<ApiResult>;

/** The event as it moves through the middleware: identity attached, body possibly parsed. */
type ApiEvent = APIGatewayProxyEvent & { caller?: Caller; parsedBody?: unknown };

function findHeader(event: APIGatewayProxyEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

/** Authentication comes before body parsing so that a bad key is a 401 whatever the body. */
function authenticate(): MiddlewareObj<ApiEvent, APIGatewayProxyResult> {
  return {
    name: 'authenticate',
    before: async (request) => {
      request.event.caller = await resolveCaller(request.event);
    },
  };
}

const parser = httpJsonBodyParser();
const JSON_MEDIA_TYPE = /^application\/(.+\+)?json($|;.+)/i;

/**
 * Runs middy's JSON body parser with two fixes at the boundary: its content-type check only looks at
 * `content-type` or `Content-Type` and matches case-sensitively (header names and media types are both
 * case-insensitive), so the check is done here and the parser is handed the canonical type; and it
 * reports malformed JSON as 415 while that is the client's invalid request (400).
 */
function jsonBody(): MiddlewareObj<ApiEvent, APIGatewayProxyResult> {
  return {
    name: 'jsonBody',
    before: async (request) => {
      const event = request.event;
      const contentType = findHeader(event, 'content-type')?.trim();
      if (!contentType || !JSON_MEDIA_TYPE.test(contentType)) throw new UnsupportedMediaTypeError();
      if (event.body === null || event.body === undefined || event.body.trim() === '') {
        throw new ValidationError({ fieldErrors: {}, formErrors: ['Request body is required'] });
      }
      // Checked above; `Application/JSON` must reach the parser as the type it recognises.
      event.headers = { ...event.headers, 'content-type': 'application/json' };
      try {
        await parser.before?.(request);
      } catch {
        throw new ValidationError({ fieldErrors: {}, formErrors: ['Request body must be valid JSON'] });
      }
      // The parser replaced the string body with the parsed value.
      event.parsedBody = event.body as unknown;
    },
  };
}

/**
 * Builds an API Lambda handler.
 * @param options.jsonBody the route takes a JSON body (POST routes)
 */
export function apiHandler(options: { jsonBody: boolean }, handle: ApiHandlerFn) {
  const chain = middy<ApiEvent, APIGatewayProxyResult, Error, Context>().use(httpErrorHandler()).use(authenticate());
  if (options.jsonBody) chain.use(jsonBody());
  return chain.handler(async (event, context) => {
    const requestId = event.requestContext?.requestId ?? context.awsRequestId;
    const caller = event.caller;
    // authenticate() always sets it or throws; this keeps the type honest without a non-null assertion.
    if (!caller) throw new Error('caller missing after authentication');
    const log = logger.child({ requestId, userId: caller.userId, keyId: caller.keyId });
    const result = await handle({
      caller,
      body: event.parsedBody,
      pathParameters: event.pathParameters ?? {},
      header: (name) => findHeader(event, name),
      requestId,
      log,
    });
    return jsonResponse(result.statusCode, result.body, { 'X-Request-Id': requestId, ...result.headers });
  });
}
