/**
 * The local API Gateway: the same routes as the deployed REST API (built from lib/routes.ts), the real
 * handler code, the real authorizer with the same identity sources and result cache, and the same
 * gateway error bodies. It builds REST proxy events the way API Gateway does, with `sourceIp` taken from
 * the TCP socket (never from X-Forwarded-For). Like the deployed CloudFront distribution, it also
 * serves the dashboard's static files on the same origin, so the session cookie is first-party.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, resolve as resolvePath, sep } from 'node:path';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';
import { dashboardHeaders } from '../lib/dashboard-headers';
import { AUTHORIZER_IDENTITY_SOURCES, type RouteDefinition } from '../lib/routes';
import type { UploadBucket } from './upload-bucket';
import type { UsageLimiter } from './usage-plans';

export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type AuthorizerHandler = (event: APIGatewayRequestAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;

export interface LoadedRoute {
  route: RouteDefinition;
  handler: ProxyHandler;
}

/**
 * What passed through the gateway's Lambda invocations (route handlers: every request body handed to
 * one), counted as it goes; the bench's uploads section sets it against what the storage stand-in read.
 */
export interface GatewayTraffic {
  lambdaInvocations: number;
  /** Request body bytes handed to route handlers (the event's `body`). */
  lambdaRequestBytes: number;
}

export interface GatewayOptions {
  routes: LoadedRoute[];
  authorizer: AuthorizerHandler;
  /** Authorizer result cache TTL, as `authorizerCacheTtlSeconds` in the stack; 0 disables it. */
  authorizerCacheTtlSeconds: number;
  /** Serves GET /media/<key> from here (stands in for the bucket's signed URLs). */
  media?: { resolve(urlPath: string): string | undefined; headers(path: string): Record<string, string> };
  /** The media bucket's `uploads/` stand-in at `/<bucket>/` (presigned POST and GET, local/upload-bucket.ts). */
  uploadBucket?: UploadBucket;
  /** Counted into when given: what reached the Lambda handlers. */
  traffic?: GatewayTraffic;
  /** One line per request. */
  log?: (line: string) => void;
  /** Identity sources of the authorizer (default: the stack's); a missing one is a 401 without a call. */
  identitySources?: readonly string[];
  /** Serves GET requests outside /api/ and /media/ from this folder (the dashboard's built files). */
  staticDir?: string;
  stage?: string;
  /**
   * Serve the API under `/<stage>/...`, as API Gateway's own `execute-api` URL does (requests without
   * the prefix are 404s). Without it the API is served at the root, as behind a custom domain; the
   * event's `requestContext.path` follows the same rule, so handlers see what they would in AWS.
   */
  stageInPath?: boolean;
  /**
   * The usage plans (local/usage-plans.ts): after an Allow, the authorizer's `usageIdentifierKey` must be
   * in a plan (else 403) with a token left and quota for the day (else 429 with `Retry-After`), as API
   * Gateway does for methods that require an API key. Unset: no limits (the bench's in-process gateway).
   */
  usageLimiter?: UsageLimiter;
}

/** API Gateway's payload limit for REST APIs. */
const MAX_BODY_BYTES = 10 * 1024 * 1024;
const REGION = 'local';
const ACCOUNT = '000000000000';
const API_ID = 'local';

interface CompiledRoute extends LoadedRoute {
  pattern: RegExp;
  params: string[];
}

function compile(loaded: LoadedRoute): CompiledRoute {
  const params: string[] = [];
  const source = loaded.route.path
    .split('/')
    .map((segment) => {
      const match = /^\{(\w+)\}$/.exec(segment);
      if (!match?.[1]) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      params.push(match[1]);
      return '([^/]+)';
    })
    .join('/');
  return { ...loaded, pattern: new RegExp(`^${source}$`), params };
}

/**
 * The request target as a URL, or undefined when it cannot be parsed (an absolute-form target such as
 * `http://[`): no route matches it, so it gets the unknown-route 404, never a 500.
 */
function parseTarget(target: string | undefined): URL | undefined {
  try {
    return new URL(target ?? '/', 'http://localhost');
  } catch {
    return undefined;
  }
}

/**
 * A path parameter, percent-decoded. A malformed escape (`%E0%A4%A`, an encoded lone surrogate) is
 * passed on as sent rather than failing the request: no id of ours contains `%`, so the handler
 * answers its own 404.
 */
function decodePathParameter(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

class PayloadTooLarge extends Error {}

/** How much of an oversized body is read and dropped before the connection is cut. */
const MAX_DRAIN_BYTES = 8 * MAX_BODY_BYTES;

/**
 * An oversized body is still read to its end (and dropped) before the 413: answering and closing while
 * the client is still sending resets the connection under it (EPIPE in Node's fetch), so the client
 * would never see the 413. Only an absurdly large body is cut short.
 */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  let tooLarge = Number.isFinite(declared) && declared > MAX_BODY_BYTES;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) tooLarge = true;
    if (size > MAX_DRAIN_BYTES) break;
    if (!tooLarge) chunks.push(chunk as Buffer);
  }
  if (tooLarge) throw new PayloadTooLarge();
  return Buffer.concat(chunks);
}

/**
 * The request target for the log: the sign-in callback's query (a one-time code, `state`) and a
 * provider callback's (the task's signature) are left out.
 */
function loggedUrl(target: string | undefined): string {
  const url = target ?? '';
  if (url.startsWith('/api/auth/callback?')) return '/api/auth/callback?<redacted>';
  const query = url.indexOf('?');
  return query >= 0 && url.includes('/api/provider/callbacks/') ? `${url.slice(0, query)}?<redacted>` : url;
}

/** Policy resources may use `*` wildcards (the authorizer allows `.../<stage>/*\/*`). */
function resourceMatches(pattern: string, arn: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`).test(arn);
}

/** Explicit Deny wins, then an Allow must match; anything else is a Deny, as in IAM. */
function isAllowed(result: APIGatewayAuthorizerResult, methodArn: string): boolean {
  let allowed = false;
  for (const statement of result.policyDocument.Statement) {
    if (!('Resource' in statement)) continue;
    const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
    if (!resources.some((resource) => typeof resource === 'string' && resourceMatches(resource, methodArn))) continue;
    if (statement.Effect === 'Deny') return false;
    if (statement.Effect === 'Allow') allowed = true;
  }
  return allowed;
}

function headerMaps(req: IncomingMessage) {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? '';
    const value = req.rawHeaders[i + 1] ?? '';
    headers[name] = value;
    multiValueHeaders[name] = [...(multiValueHeaders[name] ?? []), value];
  }
  return { headers, multiValueHeaders };
}

function queryMaps(url: URL) {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [key, value] of url.searchParams) {
    single[key] = value;
    multi[key] = [...(multi[key] ?? []), value];
  }
  const present = Object.keys(single).length > 0;
  return { queryStringParameters: present ? single : null, multiValueQueryStringParameters: present ? multi : null };
}

/**
 * `requestContext.identity` as a REST API fills it for a call authorized by a Lambda authorizer: only
 * the caller's address and user agent are known.
 */
export function requestIdentity(
  sourceIp: string,
  userAgent: string | null,
): APIGatewayProxyEvent['requestContext']['identity'] {
  return {
    sourceIp,
    userAgent,
    accessKey: null,
    accountId: null,
    apiKey: null,
    apiKeyId: null,
    caller: null,
    clientCert: null,
    cognitoAuthenticationProvider: null,
    cognitoAuthenticationType: null,
    cognitoIdentityId: null,
    cognitoIdentityPoolId: null,
    principalOrgId: null,
    user: null,
    userArn: null,
  };
}

/** The Lambda context the handlers read (request id, remaining time), with API Gateway's 29 s limit. */
export function lambdaContext(functionName: string, requestId: string = randomUUID()): Context {
  const deadline = Date.now() + 29_000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

interface CachedDecision {
  result: APIGatewayAuthorizerResult;
  expiresAt: number;
}

/**
 * Builds the request listener. Returned as a function so the caller owns the server (port, shutdown).
 */
export function createGateway(options: GatewayOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const stage = options.stage ?? 'local';
  const routes = options.routes.map(compile);
  const cache = new Map<string, CachedDecision>();
  const log = options.log ?? (() => undefined);

  const identitySources = options.identitySources ?? AUTHORIZER_IDENTITY_SOURCES;

  /** The value of one identity source (`method.request.header.X` or `context.identity.sourceIp`). */
  function identityValue(source: string, headers: Record<string, string>, sourceIp: string): string | undefined {
    if (source === 'context.identity.sourceIp') return sourceIp;
    const header = /^method\.request\.header\.(.+)$/.exec(source)?.[1]?.toLowerCase();
    if (header === undefined) throw new Error(`Unsupported identity source: ${source}`);
    return Object.entries(headers).find(([name]) => name.toLowerCase() === header)?.[1];
  }

  /** Runs the authorizer (or reuses its cached result) and answers 401/403/500 as API Gateway would. */
  async function authorize(
    headers: Record<string, string>,
    sourceIp: string,
    methodArn: string,
    event: APIGatewayRequestAuthorizerEvent,
  ): Promise<
    { ok: true; context: Record<string, string>; usageKey?: string } | { ok: false; status: number; body: unknown }
  > {
    // API Gateway does not call a REQUEST authorizer whose identity source is missing: it answers 401.
    const values = identitySources.map((source) => identityValue(source, headers, sourceIp));
    if (values.some((value) => value === undefined || value === '')) {
      return { ok: false, status: 401, body: { error: 'Unauthorized' } };
    }
    const cacheKey = values.join('\n');
    const now = Date.now();
    let decision = cache.get(cacheKey);
    if (!decision || decision.expiresAt <= now) {
      try {
        const result = await options.authorizer(event);
        decision = { result, expiresAt: now + options.authorizerCacheTtlSeconds * 1000 };
        if (options.authorizerCacheTtlSeconds > 0) cache.set(cacheKey, decision);
      } catch (error) {
        if (error instanceof Error && error.message === 'Unauthorized') {
          return { ok: false, status: 401, body: { error: 'Unauthorized' } };
        }
        return { ok: false, status: 500, body: { error: 'Internal error', requestId: event.requestContext.requestId } };
      }
    }
    if (!isAllowed(decision.result, methodArn)) return { ok: false, status: 403, body: { error: 'Forbidden' } };
    // REST APIs hand the authorizer context to the integration with string values.
    const context: Record<string, string> = { principalId: decision.result.principalId };
    for (const [key, value] of Object.entries(decision.result.context ?? {})) {
      if (value !== undefined && value !== null) context[key] = String(value);
    }
    const usageKey = decision.result.usageIdentifierKey;
    return usageKey === undefined || usageKey === null ? { ok: true, context } : { ok: true, context, usageKey };
  }

  async function serveMedia(path: string, res: ServerResponse): Promise<boolean> {
    const file = options.media?.resolve(path);
    if (!file || !options.media) return false;
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) return false;
    res.writeHead(200, { ...options.media.headers(file), 'Content-Length': String(info.size) });
    createReadStream(file).pipe(res);
    return true;
  }

  const STATIC_TYPES: Record<string, string> = {
    '.html': 'text/html; charset=utf-8',
    '.js': 'text/javascript; charset=utf-8',
    '.css': 'text/css; charset=utf-8',
    '.json': 'application/json',
    '.svg': 'image/svg+xml',
    '.png': 'image/png',
    '.ico': 'image/x-icon',
    '.txt': 'text/plain; charset=utf-8',
  };

  /** A file of the static folder (`/` is index.html); never a path outside it. */
  async function serveStatic(path: string, res: ServerResponse): Promise<boolean> {
    if (!options.staticDir) return false;
    const root = resolvePath(options.staticDir);
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      return false;
    }
    const file = resolvePath(root, `.${decoded.endsWith('/') ? `${decoded}index.html` : decoded}`);
    if (file !== root && !file.startsWith(`${root}${sep}`)) return false;
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) return false;
    res.writeHead(200, {
      'Content-Type': STATIC_TYPES[extname(file)] ?? 'application/octet-stream',
      'Content-Length': String(info.size),
      ...dashboardHeaders(),
    });
    createReadStream(file).pipe(res);
    return true;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<number> {
    const requestId = randomUUID();
    const method = req.method ?? 'GET';
    const url = parseTarget(req.url);
    // An unparseable target matches no route (and no media path).
    const requestPath = url?.pathname ?? '';
    const stagePrefix = options.stageInPath ? `/${stage}` : '';
    // Under a stage prefix, a path outside it matches nothing (an empty path is no route).
    const path = requestPath.startsWith(`${stagePrefix}/`) ? requestPath.slice(stagePrefix.length) : '';
    const sourceIp = req.socket.remoteAddress ?? '127.0.0.1';

    // The uploads bucket's stand-in reads its own (larger) bodies and answers as S3 would.
    if (url && options.uploadBucket?.matches(requestPath)) return options.uploadBucket.handle(req, res, url);
    // Media (the bucket's stand-in) and the dashboard's files are served at the root in either mode.
    if (method === 'GET' && requestPath.startsWith('/media/') && (await serveMedia(requestPath, res))) return 200;
    if (
      method === 'GET' &&
      !path.startsWith('/api/') &&
      !requestPath.startsWith('/media/') &&
      !(options.stageInPath && requestPath.startsWith(`${stagePrefix}/`)) &&
      (await serveStatic(requestPath, res))
    ) {
      return 200;
    }

    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (error) {
      if (!(error instanceof PayloadTooLarge)) throw error;
      json(res, 413, { error: 'Payload too large' }, { Connection: 'close' });
      return 413;
    }

    let matched: { route: CompiledRoute; pathParameters: Record<string, string> } | undefined;
    for (const route of routes) {
      const match = route.pattern.exec(path);
      if (!match || route.route.method !== method) continue;
      const pathParameters: Record<string, string> = {};
      route.params.forEach((name, index) => {
        pathParameters[name] = decodePathParameter(match[index + 1] ?? '');
      });
      matched = { route, pathParameters };
      break;
    }
    // A REST API answers unknown routes (and unknown methods) with MISSING_AUTHENTICATION_TOKEN,
    // which the stack's gateway response turns into this 404.
    if (!matched || !url) {
      json(res, 404, { error: 'Not found' });
      return 404;
    }

    const { route, pathParameters } = matched;
    const { headers, multiValueHeaders } = headerMaps(req);
    const methodArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${API_ID}/${stage}/${method}${path}`;
    const identity = requestIdentity(sourceIp, req.headers['user-agent'] ?? null);
    const requestContext = {
      accountId: ACCOUNT,
      apiId: API_ID,
      resourceId: route.route.name,
      resourcePath: route.route.path,
      httpMethod: method,
      // API Gateway's requestContext.path: the path as the client sent it (stage included on execute-api URLs).
      path: `${stagePrefix}${path}`,
      stage,
      requestId,
      requestTimeEpoch: Date.now(),
      protocol: `HTTP/${req.httpVersion}`,
      identity,
      authorizer: null as Record<string, string> | null,
    };
    const { queryStringParameters, multiValueQueryStringParameters } = queryMaps(url);
    const authorizerEvent = {
      type: 'REQUEST',
      methodArn,
      resource: route.route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      pathParameters,
      queryStringParameters,
      multiValueQueryStringParameters,
      stageVariables: null,
      requestContext: { ...requestContext, authorizer: undefined },
    } as APIGatewayRequestAuthorizerEvent;
    // Routes without an authorizer (starting sign-in, its callback) reach their handler directly.
    if (route.route.auth !== 'none') {
      const decision = await authorize(headers, sourceIp, methodArn, authorizerEvent);
      if (!decision.ok) {
        json(res, decision.status, decision.body);
        return decision.status;
      }
      if (options.usageLimiter) {
        const verdict = await options.usageLimiter(decision.usageKey, decision.context);
        if (!verdict.ok) {
          json(res, verdict.status, verdict.body, verdict.headers);
          return verdict.status;
        }
      }
      requestContext.authorizer = decision.context;
    }

    const event = {
      resource: route.route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters,
      multiValueQueryStringParameters,
      pathParameters: Object.keys(pathParameters).length > 0 ? pathParameters : null,
      stageVariables: null,
      requestContext,
      body: body.length > 0 ? body.toString('utf8') : null,
      isBase64Encoded: false,
    } as APIGatewayProxyEvent;

    if (options.traffic) {
      options.traffic.lambdaInvocations += 1;
      options.traffic.lambdaRequestBytes += body.length;
    }
    let result: APIGatewayProxyResult;
    try {
      result = await route.handler(event, lambdaContext(route.route.name, requestId));
    } catch {
      // A Lambda that throws is a 502 at API Gateway; the stack's DEFAULT_5XX response gives this body.
      json(res, 500, { error: 'Internal error', requestId });
      return 500;
    }
    const responseHeaders: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(result.headers ?? {})) responseHeaders[name] = String(value);
    // Multi-value headers (several Set-Cookie) are sent as separate header lines, as API Gateway does.
    for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) {
      responseHeaders[name] = values.map(String);
    }
    res.writeHead(result.statusCode, responseHeaders);
    res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
    return result.statusCode;
  }

  return (req, res) => {
    const started = performance.now();
    handle(req, res)
      .then((status) =>
        log(`${req.method} ${loggedUrl(req.url)} ${status} ${(performance.now() - started).toFixed(1)}ms`),
      )
      .catch((error: unknown) => {
        log(
          `${req.method} ${loggedUrl(req.url)} 500 gateway error: ${error instanceof Error ? error.message : String(error)}`,
        );
        if (!res.headersSent) json(res, 500, { error: 'Internal error' });
        else res.destroy();
      });
  };
}
