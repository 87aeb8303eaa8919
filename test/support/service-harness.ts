/**
 * The service as the API Lambdas see it, on real parts: a fresh table on the DynamoDB Local of the
 * integration project's global setup, the mock provider over HTTP on an ephemeral port, and a temp
 * media directory served by a tiny HTTP server (standing in for the bucket's signed URLs).
 *
 * `startServiceHarness()` sets `process.env` by the environment contract the deployed stack sets by
 * (functions/environment/environment.ts; local stand-ins for the AWS services) and resets the
 * handlers' cached wiring, so the real handlers (imported by the test file) use these parts. One
 * harness per test file (jest gives every file its own `process.env` and module registry); dispose it
 * in `afterAll`.
 */

import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { resetSqsClient } from '../../functions/aws/sqs';
import { formatCreateRateLimit } from '../../functions/core/provider-capacity';
import { DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT } from '../../functions/core/queue-bound';
import { formatUpstreams } from '../../functions/core/upstreams';
import { handler as dispatcher } from '../../functions/dispatcher/handler';
import {
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_SQS,
  DISPATCH_WAKE_QUEUE_URL,
  INLINE_AUTHORIZER,
  LOG_LEVEL,
  MEDIA_BUCKET,
  MEDIA_COPY_TIMEOUT_MS,
  MEDIA_SOURCE_INSECURE_ORIGINS,
  METRICS,
  PROVIDER_COOL_OFF_MS,
  PROVIDER_CREATE_RATE_LIMIT,
  PROVIDER_MAX_IN_FLIGHT,
  PROVIDER_MAX_REFUSALS_PER_TASK,
  PROVIDER_MAX_RETRY_AFTER_SECONDS,
  PROVIDER_MAX_SEND_ATTEMPTS,
  PROVIDER_MIN_BACKOFF_MS,
  PROVIDER_SECRET_ARN,
  PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS,
  PROVIDER_UPSTREAMS,
  setting,
} from '../../functions/environment/environment';
import type { CopyingLifecycle } from '../../functions/lifecycle/lifecycle';
import { mediaResponseHeaders, resolveMediaPath } from '../../functions/media/fs-media-store';
import { handler as mediaWorker } from '../../functions/media-worker/handler';
import { grantCredits } from '../../functions/money/grant';
import { type LogSink, setLogSink } from '../../functions/observability/logger';
import { lifecycleFromEnv, resetLifecycleFromEnv } from '../../functions/runtime/lifecycle-from-env';
import { providerLifecycleFromEnv } from '../../functions/runtime/provider-lifecycle-from-env';
import { providerProfileFromEnv } from '../../functions/runtime/provider-profile-from-env';
import {
  mediaFromEnv,
  resetWorkerLifecycleFromEnv,
  workerLifecycleFromEnv,
} from '../../functions/runtime/worker-lifecycle-from-env';
import { resetStoreFromEnv, storeFromEnv } from '../../functions/store/from-env';
import { getTask as getStoredTask } from '../../functions/store/tasks';
import { MEDIA_WORKER, MEDIA_WORKER_FILTER } from '../../lib/routes';
import {
  type DeployedDriver,
  type DeployedDriverOptions,
  deployedStreamMapping,
  startDeployedDriver,
} from '../../local/deployed-driver';
import { startDispatchLoop } from '../../local/dispatch-loop';
import { lambdaContext, requestIdentity } from '../../local/gateway';
import { handlerEnvironment } from '../../local/handler-environment';
import { type MockProvider, type MockProviderOptions, startMockProvider } from '../../local/mock-provider';
import { nudgeOnWrites } from '../../local/nudge-on-writes';
import { startStreamPoller } from '../../local/stream-poller';
import { createTestStore, type TestStore, type TestStoreOptions, testEndpoint } from './dynamodb';

/** What a test may tune; everything else is what the deployed stack sets. */
export interface ServiceHarnessOptions {
  /** PROVIDER_REFRESH_INTERVAL_SECONDS; default 1 (the deployed default is 30). */
  refreshIntervalSeconds?: number;
  /** MAX_PENDING_SECONDS; default 1800. */
  maxPendingSeconds?: number;
  /** PROVIDER_MAX_SEND_ATTEMPTS; default 2. */
  maxSendAttempts?: number;
  /** PROVIDER_MAX_RETRY_AFTER_SECONDS; default unset (the code's default, 60). */
  maxRetryAfterSeconds?: number;
  /** PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS; default unset (the code's default, 600). */
  unknownOutcomeLimitSeconds?: number;
  /** PROVIDER_MAX_REFUSALS_PER_TASK; default unset (the code's default, 5). */
  maxRefusalsPerTask?: number;
  /** PROVIDER_MIN_BACKOFF_MS; default unset (the code's default, 1000). */
  minBackoffMs?: number;
  /** PROVIDER_COOL_OFF_MS; default unset (the code's default, 5000). */
  coolOffMs?: number;
  /** MAX_QUEUED_TASKS_PER_ACCOUNT; default the deployed default (1000). */
  maxQueuedTasksPerAccount?: number;
  /** Runs the media worker on the table's stream (default true); false leaves copies to the test. */
  mediaWorker?: boolean;
  /**
   * Puts the conflict-faithful DynamoDB layer in front of DynamoDB Local (test/support/dynamodb.ts), with
   * its per-partition throughput model (`throughput`: limits lower than DynamoDB's, to reach them).
   */
  conflicts?: TestStoreOptions['conflicts'];
  /**
   * The mock provider's capacity limits (create rate, tasks in flight); default none. The service is
   * told the same ones (PROVIDER_CREATE_RATE_LIMIT, PROVIDER_MAX_IN_FLIGHT), as a deployment's profile
   * tells it Kie's.
   */
  providerLimits?: Pick<MockProviderOptions, 'createRateLimit' | 'maxInFlight'>;
  /** The mock provider's clock (epoch ms) for its limits and task ages; default the real one. */
  providerClock?: () => number;
  /** Runs the dispatcher loop (local/dispatch-loop.ts, default true); false leaves queued tasks queued. */
  dispatcher?: boolean;
  /**
   * What drives the dispatcher: `loop` (default, local/dispatch-loop.ts) or `deployed`, its deployed
   * event sources (local/deployed-driver.ts: the stream's filtered inserts, the SQS wake-up queue with
   * its whole-second delays and maximum concurrency), with `deployed`'s time scale and function timeout.
   */
  dispatchDriver?: 'loop' | 'deployed';
  deployed?: Pick<DeployedDriverOptions, 'secondMs' | 'timeoutMs'>;
  /**
   * An upstreams list (docs/guides/upstreams.md): one mock provider per entry over HTTP, named
   * `mock-1` ... `mock-N`, each with its own key and limits (the service is told the same ones), listed
   * in `PROVIDER_UPSTREAMS`. The first is `provider`; all are `upstreams`.
   */
  upstreams?: readonly HarnessUpstream[];
}

/** One mock upstream of the harness. */
export interface HarnessUpstream {
  limits?: Pick<MockProviderOptions, 'createRateLimit' | 'maxInFlight'>;
  /** The models it serves (default all). */
  models?: readonly string[];
  priority?: number;
}

/** A caller as the authorizer describes it. */
export interface TestUser {
  userId: string;
  keyId: string;
  /** Epoch seconds, as the authorizer context carries it; absent for a key that never expires. */
  expiresAt?: number;
}

export interface ServiceHarness {
  readonly store: TestStore;
  readonly provider: MockProvider;
  /** With `upstreams`: every mock upstream, `mock-1` first (the same as `provider`). */
  readonly upstreams: readonly MockProvider[];
  /** Where the fs media store writes results. */
  readonly mediaDir: string;
  /** MEDIA_BASE_URL: the media server's address; result URLs start with it. */
  readonly mediaBaseUrl: string;
  /** The variables the harness set (the deployed stack's). */
  readonly env: Readonly<Record<string, string>>;
  /** Every log line the service wrote since the harness started (JSON text). */
  readonly logs: string[];
  /** A new user (fresh ids) with `credits` granted through the real ledger operation. */
  createUser(credits: number): Promise<TestUser>;
  /**
   * The handlers' own lifecycle wiring with the clock replaced (TIMEOUT without waiting), with the
   * sweeper's copying media store (the API functions' wiring only signs result URLs).
   */
  lifecycle(now: () => Date): CopyingLifecycle;
  /**
   * Runs `fn` with the clock of the handlers' own wiring (the one `lifecycleFromEnv()` caches, so the
   * real GET, submit and sweeper handlers) replaced by `now`, then restores it. Moves time without
   * sleeping, e.g. to one refresh interval after a task's acceptance.
   */
  withClock<T>(now: () => Date, fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` with some variables changed (undefined deletes), then restores them. */
  withEnv<T>(overrides: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` with the dispatcher loop stopped (no DynamoDB requests of its own), then starts it again. */
  withoutDispatcher<T>(fn: () => Promise<T>): Promise<T>;
  /** The deployed driver, with `dispatchDriver: 'deployed'` (its queue's messages, its invocations). */
  driver(): DeployedDriver | undefined;
  /** Stops the servers, deletes the table and the media directory, restores the environment. */
  dispose(): Promise<void>;
}

/** The authorizer is not run here: the tests supply its context, so no inline authorizer either. */
const CLEARED_ENV = [
  INLINE_AUTHORIZER,
  MEDIA_BUCKET,
  PROVIDER_SECRET_ARN,
  AWS_ENDPOINT_URL,
  // Set only with the deployed driver (its wake-up queue); the loop needs none.
  DISPATCH_WAKE_QUEUE_URL,
  AWS_ENDPOINT_URL_SQS,
  PROVIDER_CREATE_RATE_LIMIT,
  PROVIDER_MAX_IN_FLIGHT,
  PROVIDER_MAX_RETRY_AFTER_SECONDS,
  PROVIDER_MAX_REFUSALS_PER_TASK,
  PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS,
  PROVIDER_MIN_BACKOFF_MS,
  PROVIDER_COOL_OFF_MS,
].map((v) => v.name);

/**
 * The longest idle pause of the harness's loops (the dispatcher loop, the media worker's poller), as the
 * local stack's (local/stack.ts): every write of the handlers or of the test's store wakes them, so the
 * pause never delays work, while an idle loop costs a few requests every two seconds. At 400 ms an idle
 * harness cost 2.1 s of DynamoDB Local's CPU and 1.7 s of the worker's every 30 s, and the suite keeps
 * harnesses up for about twenty minutes of a run.
 */
const IDLE_LOOK_MAX_MS = 2000;

/** Drops the cached wiring so the next invocation builds it from the current environment. */
function resetWiring(): void {
  // The cached document client holds keep-alive sockets; close it before forgetting it.
  storeFromEnv().doc.destroy();
  resetSqsClient();
  resetStoreFromEnv();
  resetLifecycleFromEnv();
  resetWorkerLifecycleFromEnv();
}

function applyEnv(values: Record<string, string | undefined>): Record<string, string | undefined> {
  const previous: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(values)) {
    previous[name] = process.env[name];
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  return previous;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

/** Serves GET /media/<key> from `dir`, as the local gateway does for the fs media store. */
function mediaServer(dir: string): Server {
  return createServer((req, res) => {
    const file = req.method === 'GET' ? resolveMediaPath(dir, req.url ?? '/') : undefined;
    const notFound = () => res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
    if (!file) {
      notFound();
      return;
    }
    stat(file).then(
      (info) => {
        if (!info.isFile()) {
          notFound();
          return;
        }
        res.writeHead(200, { ...mediaResponseHeaders(file), 'content-length': String(info.size) });
        createReadStream(file).pipe(res);
      },
      () => notFound(),
    );
  });
}

/** Starts every part and points the environment at them. */
export async function startServiceHarness(options: ServiceHarnessOptions = {}): Promise<ServiceHarness> {
  const providerKey = `provider-key-${randomUUID()}`;
  // The stream on: the media worker (and, deployed, the dispatcher's driver) read it.
  const store = await createTestStore({ stream: true, ...(options.conflicts ? { conflicts: options.conflicts } : {}) });
  const upstreamKeys = (options.upstreams ?? []).map((_, index) => `${providerKey}-${index + 1}`);
  const upstreams = await Promise.all(
    (options.upstreams ?? []).map((upstream, index) =>
      startMockProvider({
        apiKey: upstreamKeys[index] ?? providerKey,
        ...upstream.limits,
        ...(options.providerClock ? { now: options.providerClock } : {}),
      }),
    ),
  );
  const provider =
    upstreams[0] ??
    (await startMockProvider({
      apiKey: providerKey,
      ...options.providerLimits,
      ...(options.providerClock ? { now: options.providerClock } : {}),
    }));
  const upstreamsList = options.upstreams
    ? formatUpstreams(
        options.upstreams.map((upstream, index) => ({
          name: `mock-${index + 1}`,
          profile: 'mock',
          baseUrl: upstreams[index]?.url ?? '',
          apiKey: upstreamKeys[index] ?? providerKey,
          priority: upstream.priority ?? index,
          ...(upstream.limits?.createRateLimit ? { createRateLimit: upstream.limits.createRateLimit } : {}),
          ...(upstream.limits?.maxInFlight === undefined ? {} : { maxInFlight: upstream.limits.maxInFlight }),
          ...(upstream.models ? { models: upstream.models } : {}),
        })),
      )
    : undefined;
  const mediaDir = await mkdtemp(join(tmpdir(), 'service-harness-media-'));
  const media = mediaServer(mediaDir);
  const mediaBaseUrl = await listen(media);

  // The handlers' environment, built as the local stack builds it (local/handler-environment.ts).
  const env = handlerEnvironment(
    {
      tableName: store.tableName,
      dynamodbEndpoint: store.endpoint,
      provider: {
        url: provider.url,
        apiKey: upstreamKeys[0] ?? providerKey,
        // The mock's own limits, which the service is told as a deployment's profile tells it Kie's.
        createRateLimit: options.providerLimits?.createRateLimit
          ? formatCreateRateLimit(options.providerLimits.createRateLimit)
          : undefined,
        maxInFlight: options.providerLimits?.maxInFlight,
      },
      media: { dir: mediaDir, baseUrl: mediaBaseUrl },
      providerRefreshIntervalSeconds: options.refreshIntervalSeconds ?? 1,
      maxPendingSeconds: options.maxPendingSeconds ?? 1800,
      maxQueuedTasksPerAccount: options.maxQueuedTasksPerAccount ?? DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT,
    },
    setting(PROVIDER_MAX_SEND_ATTEMPTS, options.maxSendAttempts ?? 2),
    setting(PROVIDER_UPSTREAMS, upstreamsList),
    // Every mock upstream serves results over plain HTTP on 127.0.0.1: each allowed by name.
    setting(
      MEDIA_SOURCE_INSECURE_ORIGINS,
      upstreams.length > 0 ? upstreams.map((upstream) => upstream.url).join(',') : undefined,
    ),
    setting(PROVIDER_MAX_RETRY_AFTER_SECONDS, options.maxRetryAfterSeconds),
    setting(PROVIDER_MAX_REFUSALS_PER_TASK, options.maxRefusalsPerTask),
    setting(PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS, options.unknownOutcomeLimitSeconds),
    setting(PROVIDER_MIN_BACKOFF_MS, options.minBackoffMs),
    setting(PROVIDER_COOL_OFF_MS, options.coolOffMs),
    // The mock's files are tiny: a copy that takes this long is a hung source (the worker retries it,
    // then fails the task), even on a loaded machine, where 3 s could pass for a healthy copy.
    setting(MEDIA_COPY_TIMEOUT_MS, 10_000),
    setting(METRICS, 'off'),
    setting(LOG_LEVEL, 'error'),
  );
  const deployed = options.dispatchDriver === 'deployed' && options.dispatcher !== false;
  const startDriver = () =>
    startDeployedDriver({
      // DynamoDB Local itself: the conflict layer, when on, speaks only the table API.
      endpoint: testEndpoint(),
      tableName: store.tableName,
      handler: dispatcher,
      ...options.deployed,
    });
  let driver = deployed ? await startDriver() : undefined;
  const cleared = Object.fromEntries(CLEARED_ENV.map((name) => [name, undefined]));
  const previousEnv = applyEnv({ ...cleared, ...env, ...driver?.environment() });
  resetWiring();

  const logs: string[] = [];
  const previousSink: LogSink = setLogSink((line) => logs.push(line));
  // The media worker on the table's stream, as deployed: results are copied off the request path.
  const poller =
    options.mediaWorker === false
      ? undefined
      : await startStreamPoller({
          // DynamoDB Local itself: the conflict layer, when on, speaks only the table API.
          endpoint: testEndpoint(),
          tableName: store.tableName,
          handler: mediaWorker,
          filter: MEDIA_WORKER_FILTER,
          // Under the deployed driver, the media worker's mapping as deployed too.
          ...(options.dispatchDriver === 'deployed'
            ? deployedStreamMapping(MEDIA_WORKER)
            : { maxIdleMs: IDLE_LOOK_MAX_MS }),
        });

  // The dispatcher, as deployed its event sources drive it: queued tasks reach the provider at its pace.
  const startDispatcher = () =>
    options.dispatcher === false || deployed
      ? undefined
      : startDispatchLoop({ handler: dispatcher, maxIdleMs: IDLE_LOOK_MAX_MS });
  let dispatchLoop = startDispatcher();
  // Writes wake the loops, as in the local stack: the test's store, and the handlers'
  // client after every rewiring (a write through a client not yet woken waits at most an idle pause).
  const wake = () => {
    dispatchLoop?.nudge();
    poller?.nudge();
  };
  const woken = new WeakSet<object>();
  const wakeOnWrites = () => {
    for (const { doc } of [store, storeFromEnv()]) {
      if (woken.has(doc)) continue;
      woken.add(doc);
      nudgeOnWrites(doc, wake);
    }
  };
  const rewire = () => {
    resetWiring();
    wakeOnWrites();
  };
  wakeOnWrites();

  return {
    store,
    provider,
    upstreams,
    mediaDir,
    mediaBaseUrl,
    env,
    logs,

    async createUser(credits) {
      const user: TestUser = { userId: `user-${randomUUID()}`, keyId: `key-${randomUUID()}` };
      await grantCredits(store, { userId: user.userId, amount: credits });
      return user;
    },

    lifecycle(now) {
      // With the profile, as the dispatcher's: tests that dispatch with it build provider requests.
      return { ...lifecycleFromEnv(), media: mediaFromEnv(), now, profile: providerProfileFromEnv() };
    },

    async withClock(now, fn) {
      // The handlers call lifecycleFromEnv() (get), workerLifecycleFromEnv() (sweeper, media worker: the
      // same wiring with the copying store) or providerLifecycleFromEnv() (submit) per request and get
      // these same cached objects.
      const wirings = [lifecycleFromEnv(), workerLifecycleFromEnv(), providerLifecycleFromEnv()];
      const previous = wirings.map((wiring) => wiring.now);
      for (const wiring of wirings) wiring.now = now;
      try {
        return await fn();
      } finally {
        wirings.forEach((wiring, index) => {
          wiring.now = previous[index] ?? wiring.now;
        });
      }
    },

    async withEnv(overrides, fn) {
      const previous = applyEnv(overrides);
      rewire();
      try {
        return await fn();
      } finally {
        applyEnv(previous);
        rewire();
      }
    },

    async withoutDispatcher(fn) {
      await dispatchLoop?.stop();
      await driver?.stop();
      try {
        return await fn();
      } finally {
        dispatchLoop = startDispatcher();
        if (deployed) {
          // A new mapping reads the stream from its newest record on, and has a queue of its own.
          driver = await startDriver();
          applyEnv(driver.environment());
          rewire();
        }
      }
    },

    driver: () => driver,

    async dispose() {
      await dispatchLoop?.stop();
      await driver?.stop();
      await poller?.stop();
      resetWiring();
      setLogSink(previousSink);
      applyEnv(previousEnv);
      await Promise.all([
        new Promise<void>((resolve, reject) => {
          media.close((error) => (error ? reject(error) : resolve()));
          media.closeAllConnections();
        }),
        ...(upstreams.length > 0 ? upstreams : [provider]).map((mock) => mock.stop()),
        store.dispose(),
      ]);
      await rm(mediaDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// API Gateway REST proxy events
// ---------------------------------------------------------------------------------------------------

export interface EventOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** The request path, e.g. `/api/ai/tasks/abc`. */
  path: string;
  /** The route's resource path, e.g. `/api/ai/tasks/{id}`. */
  resource: string;
  /** The caller as the authorizer describes it; `null` for a request without authorizer context. */
  user: TestUser | null;
  headers?: Record<string, string>;
  body?: string | null;
  pathParameters?: Record<string, string> | null;
  sourceIp?: string;
}

/**
 * `requestContext.authorizer` as API Gateway passes a REQUEST authorizer's result to a REST proxy
 * integration: `principalId`, `integrationLatency`, and every context value as a string.
 */
export function authorizerContext(user: TestUser): Record<string, string | number> {
  return {
    principalId: user.userId,
    integrationLatency: 12,
    userId: user.userId,
    keyId: user.keyId,
    ...(user.expiresAt === undefined ? {} : { expiresAt: String(user.expiresAt) }),
  };
}

/** A REST proxy event (payload 1.0) as API Gateway builds it. */
export function apiEvent(options: EventOptions): APIGatewayProxyEvent {
  const headers = options.headers ?? {};
  const requestId = randomUUID();
  return {
    resource: options.resource,
    path: options.path,
    httpMethod: options.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: options.pathParameters ?? null,
    stageVariables: null,
    body: options.body ?? null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'testapi',
      authorizer: options.user ? authorizerContext(options.user) : undefined,
      protocol: 'HTTP/1.1',
      httpMethod: options.method,
      identity: requestIdentity(options.sourceIp ?? '203.0.113.10', 'service-harness'),
      path: `/prod${options.path}`,
      stage: 'prod',
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'res123',
      resourcePath: options.resource,
    },
  };
}

const BEARER = { Authorization: 'Bearer gsk_test_not_a_real_key' };

/** POST of `body` to a generate route, JSON content type unless `headers` says otherwise. */
export function submitEvent(
  kind: 'image' | 'video',
  user: TestUser | null,
  body: unknown,
  headers: Record<string, string> = { 'Content-Type': 'application/json' },
): APIGatewayProxyEvent {
  const path = `/api/ai/${kind}/generate`;
  return apiEvent({
    method: 'POST',
    path,
    resource: path,
    user,
    headers: { ...BEARER, ...headers },
    body: typeof body === 'string' || body === null ? body : JSON.stringify(body),
  });
}

/** GET /api/ai/tasks/{id}. */
export function getTaskEvent(user: TestUser | null, taskId: string): APIGatewayProxyEvent {
  return apiEvent({
    method: 'GET',
    path: `/api/ai/tasks/${encodeURIComponent(taskId)}`,
    resource: '/api/ai/tasks/{id}',
    user,
    headers: { ...BEARER },
    pathParameters: { id: taskId },
  });
}

export { lambdaContext };

/** An API Lambda handler as the test calls it. */
export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/** A proxy result with its body parsed (undefined when it is not JSON). */
export interface ApiAnswer<T = Record<string, unknown>> {
  statusCode: number;
  headers: Record<string, string>;
  body: T;
  rawBody: string;
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Invokes a handler the way Lambda does and parses the answer. */
export async function invoke<T = Record<string, unknown>>(
  handler: ProxyHandler,
  event: APIGatewayProxyEvent,
): Promise<ApiAnswer<T>> {
  const result = await handler(event, lambdaContext('test-function'));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  return { statusCode: result.statusCode, headers, body: parseBody(result.body) as T, rawBody: result.body };
}

/** Waits `ms` (a refresh interval to pass; never asserted on). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------------
// Requests and polling
// ---------------------------------------------------------------------------------------------------

/** Credits of {@link imageRequest} (image-model-1: flat 3 per output) and {@link videoRequest}. */
export const IMAGE_COST = 3;
/** video-b-2-text-to-video at its defaults (5 s, 480p). */
export const VIDEO_COST = 10;

/** A valid image request; `providerInput` steers the mock (default: success, no delay). */
export function imageRequest(providerInput: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    model: 'image-model-1',
    prompt: 'a lighthouse at dusk',
    ...extra,
    providerInput: { mockDelayMs: 0, ...providerInput },
  };
}

/** A valid video request (text to video); `providerInput` steers the mock. */
export function videoRequest(providerInput: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    model: 'video-b-2-text-to-video',
    prompt: 'waves on a pier',
    inputMode: 'text_to_video',
    ...extra,
    providerInput: { mockDelayMs: 0, ...providerInput },
  };
}

/**
 * How long a test waits for a task to end (or for anything else the service finishes in the
 * background: the media worker on the stream poller, the sweeper), measured on the wall clock. A loaded
 * 2-core machine (DynamoDB Local's JVM, the stream poller and a second copy of the suite sharing it)
 * can take many times the few seconds an idle one needs: generous, and only ever spent by a test that
 * fails anyway. Files that wait on it set jest's timeout with {@link jestTimeoutFor}.
 */
export const TASK_END_BUDGET_MS = 120_000;

/** Jest's per-test timeout for a test that waits up to `budgets` task-end budgets, with room for the rest. */
export function jestTimeoutFor(budgets = 1): number {
  return budgets * TASK_END_BUDGET_MS + 60_000;
}

/**
 * GETs the task until it is terminal, waiting `intervalMs` (the product's refresh interval, which a GET
 * must let pass to query the provider) between polls; gives up after `timeoutMs` of wall clock
 * (default {@link TASK_END_BUDGET_MS}) and returns the last answer (the caller asserts on its status).
 */
export async function pollUntilTerminal(
  getTask: ProxyHandler,
  user: TestUser,
  taskId: string,
  options: { intervalMs: number; timeoutMs?: number },
): Promise<ApiAnswer> {
  const deadline = Date.now() + (options.timeoutMs ?? TASK_END_BUDGET_MS);
  let answer = await invoke(getTask, getTaskEvent(user, taskId));
  while (answer.statusCode === 200 && answer.body.status === 0 && Date.now() < deadline) {
    await sleep(options.intervalMs);
    answer = await invoke(getTask, getTaskEvent(user, taskId));
  }
  return answer;
}

/**
 * Reads the stored task (reading the table never moves a task) until it is terminal, e.g. until the
 * media worker has copied its results; gives up after `timeoutMs` of wall clock (default
 * {@link TASK_END_BUDGET_MS}) and returns the last read (the caller asserts on it).
 */
export async function storedWhenEnded(
  h: ServiceHarness,
  userId: string,
  taskId: string,
  timeoutMs = TASK_END_BUDGET_MS,
) {
  const deadline = Date.now() + timeoutMs;
  let stored = await getStoredTask(h.store, userId, taskId);
  while (stored?.status === 0 && Date.now() < deadline) {
    await sleep(100);
    stored = await getStoredTask(h.store, userId, taskId);
  }
  return stored;
}

/**
 * The stored task once the dispatcher has sent it to the provider (it has a provider id) or it has
 * ended, read every 100 ms: submits only queue tasks (docs/design/dispatching.md).
 */
export async function storedWhenSent(h: ServiceHarness, userId: string, taskId: string, maxReads = 100) {
  let stored = await getStoredTask(h.store, userId, taskId);
  for (let read = 1; read < maxReads && stored?.status === 0 && stored.providerTaskId === undefined; read++) {
    await sleep(100);
    stored = await getStoredTask(h.store, userId, taskId);
  }
  return stored;
}

/** The internals a Task resource must never show. */
export const TASK_INTERNALS = [
  'userId',
  'keyId',
  'request',
  'providerTaskId',
  'lastCheckedAt',
  'lastCallbackReadAt',
  'resultsToCopy',
  'resultsReadyAt',
  'attempts',
  'resultKeys',
  'sendClaimedAt',
  'sendRequeues',
  'unknownOutcomeSince',
  'callbackProviderTaskId',
  'earlyCallbackAt',
  'sendFailures',
  'sendRefusals',
  'inFlightSlot',
  'upstream',
  'PK',
  'SK',
  'GSI1PK',
  'GSI1SK',
] as const;

/** The fields every Task resource has, whatever its state. */
export const TASK_BASE_FIELDS = [
  'taskId',
  'type',
  'status',
  'model',
  'prompt',
  'creditsUsed',
  'creditsRefunded',
  'createdAt',
  'updatedAt',
] as const;
