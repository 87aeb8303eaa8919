/**
 * The middy stack every API Lambda uses: error handling, caller identity, the credential rule and CSRF
 * check, then (for POST) the JSON body. Middleware first, the handler last; handlers receive a typed request and return a typed
 * result, and never build responses or map errors themselves.
 */
import middy, { type MiddlewareObj } from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { sessionIdFromHeaders } from '../auth/session-cookie';
import { SessionRequiredError, UnauthorizedError, UnsupportedMediaTypeError, ValidationError } from '../core/errors';
import { CSRF_HEADER, hashSessionId } from '../core/session';
import { publicOrigin } from '../environment/environment';
import { type Logger, logger, withInvocation } from '../observability/logger';
import { type Caller, resolveCaller } from './caller';
import { checkCsrf } from './csrf';
import { httpErrorHandler } from './error-handler';
import { jsonResponse } from './response';
import { timeoutPlugin } from './timeout';

/** The viewer address the authorizer put in its context (only behind the distribution). */
function callerIpOf(event: APIGatewayProxyEvent): string | undefined {
  const value: unknown = event.requestContext?.authorizer?.callerIp;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

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
  /**
   * The caller's address: API Gateway's `sourceIp`, or behind the dashboard's distribution the viewer
   * address the authorizer vouched for (`callerIp`, functions/auth/viewer-address.ts); never X-Forwarded-For.
   */
  sourceIp: string | undefined;
  /** The session id from the cookie, for session callers only (checked against the authorizer's hash). */
  sessionId: string | undefined;
  /** Query string parameters (single values). */
  query: Record<string, string | undefined>;
  /**
   * What stands before the API's own paths in the URL the client called: `/prod` on an execute-api
   * stage URL, a base path behind a custom domain, or nothing. Links the service hands out start with it.
   */
  pathPrefix: string;
  /** The function's time left (ms), when the runtime tells it: a request that waits stops in time. */
  remainingTimeMs(): number | undefined;
}

export interface ApiResult {
  statusCode: number;
  body: unknown;
  headers?: Record<string, string>;
  /** `Set-Cookie` values (a response may set several, so they travel as multi-value headers). */
  cookies?: string[];
}

/** Which credentials a route takes: the task and read routes both; key and account management a session only. */
export type Credentials = 'key-or-session' | 'session';

export type ApiHandlerFn = (request: ApiRequest) => Promise<ApiResult>;

/** The event as it moves through the middleware: identity attached, body possibly parsed. */
type ApiEvent = APIGatewayProxyEvent & { caller?: Caller; sessionId?: string; parsedBody?: unknown };

function findHeader(event: APIGatewayProxyEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

/**
 * API Gateway's `requestContext.path` is the path the client sent (with the stage on execute-api URLs,
 * with the base path behind a custom domain); `event.path` is the API's own. The difference is the prefix.
 */
export function pathPrefixOf(event: Pick<APIGatewayProxyEvent, 'path' | 'requestContext'>): string {
  const full = event.requestContext?.path;
  if (!full || !event.path || !full.endsWith(event.path)) return '';
  const prefix = full.slice(0, full.length - event.path.length);
  // Only a plain path prefix is used in a header: nothing a client could smuggle in.
  return /^(\/[A-Za-z0-9._~-]+)*$/.test(prefix) ? prefix : '';
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

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The credential rule of the route, then CSRF for session callers. A session caller's cookie must hash
 * to the session the authorizer decided on (it always does behind the gateway; the check keeps a
 * handler from ever acting on another cookie than the one authorized).
 */
function credentialRule(credentials: Credentials): MiddlewareObj<ApiEvent, APIGatewayProxyResult> {
  return {
    name: 'credentialRule',
    before: async (request) => {
      const event = request.event;
      const caller = event.caller;
      if (!caller) throw new UnauthorizedError();
      if (caller.sessionHash === undefined) {
        if (credentials === 'session') throw new SessionRequiredError();
        return;
      }
      const sessionId = sessionIdFromHeaders(event.headers, event.multiValueHeaders);
      if (!sessionId || hashSessionId(sessionId) !== caller.sessionHash) throw new UnauthorizedError();
      event.sessionId = sessionId;
      if (SAFE_METHODS.has(event.httpMethod?.toUpperCase() ?? 'GET')) return;
      checkCsrf({
        sessionId,
        origin: findHeader(event, 'origin'),
        token: findHeader(event, CSRF_HEADER),
        expectedOrigin: publicOrigin(),
      });
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
 * @param options.credentials which credentials the route takes (default: a key or a session)
 */
export function apiHandler(options: { jsonBody: boolean; credentials?: Credentials }, handle: ApiHandlerFn) {
  const chain = middy<ApiEvent, APIGatewayProxyResult, Error, Context>(timeoutPlugin)
    .use(httpErrorHandler())
    .use(authenticate())
    .use(credentialRule(options.credentials ?? 'key-or-session'));
  if (options.jsonBody) chain.use(jsonBody());
  const handler = chain.handler(async (event, context) => {
    const requestId = event.requestContext?.requestId ?? context.awsRequestId;
    const caller = event.caller;
    // authenticate() always sets it or throws; this keeps the type honest without a non-null assertion.
    if (!caller) throw new Error('caller missing after authentication');
    const log = logger.child({
      requestId,
      userId: caller.userId,
      ...(caller.keyId === undefined ? { credential: 'session' } : { keyId: caller.keyId }),
    });
    const result = await handle({
      caller,
      body: event.parsedBody,
      pathParameters: event.pathParameters ?? {},
      header: (name) => findHeader(event, name),
      requestId,
      log,
      sourceIp: callerIpOf(event) ?? event.requestContext?.identity?.sourceIp,
      sessionId: event.sessionId,
      query: event.queryStringParameters ?? {},
      pathPrefix: pathPrefixOf(event),
      remainingTimeMs: () =>
        typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : undefined,
    });
    const response = jsonResponse(result.statusCode, result.body, { 'X-Request-Id': requestId, ...result.headers });
    return result.cookies?.length ? { ...response, multiValueHeaders: { 'Set-Cookie': result.cookies } } : response;
  });
  // Every log line of the invocation (and the provider call's X-Request-Id) carries the request id.
  return withInvocation(
    (event: ApiEvent, context: Context) => handler(event, context),
    (event, context) => event.requestContext?.requestId ?? context?.awsRequestId,
  );
}
