import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { useUsagePlansStandIn } from '../functions/auth/rate-limits';
import { resetSqsClient } from '../functions/aws/sqs';
import { observeClient } from '../functions/core/aws-call-observer';
import { DEFAULT_PROFILE_NAME } from '../functions/core/profiles';
import {
  AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY,
  environmentOf,
  LOG_LEVEL,
  MAX_ACTIVE_KEYS,
  MAX_OPEN_UPLOADS,
  MEDIA_SOURCE_INSECURE_ORIGINS,
  METRICS,
  OIDC_CLIENT_ID,
  OIDC_CLIENT_SECRET,
  OIDC_ISSUER,
  PROVIDER_CALLBACK_BASE_URL,
  PROVIDER_CALLBACK_SECRET,
  PROVIDER_PROFILE,
  PROVIDER_PROFILE_JSON,
  PROVIDER_UPSTREAMS,
  PUBLIC_ORIGIN,
  readEnv,
  SESSION_ABSOLUTE_SECONDS,
  SESSION_IDLE_SECONDS,
  setting,
  UPLOADS_BUCKET,
  UPLOADS_S3_ENDPOINT,
  WEBHOOK_INSECURE_ORIGINS,
  WEBHOOK_RETRY_DELAYS_SECONDS,
  WEBHOOK_SECRETS_KEY,
} from '../functions/environment/environment';
import { mediaResponseHeaders, resolveMediaPath } from '../functions/media/fs-media-store';
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { resetLifecycleFromEnv } from '../functions/runtime/lifecycle-from-env';
import { listApiKeys } from '../functions/store/api-keys';
import { ensureTable } from '../functions/store/ensure-table';
import { resetStoreFromEnv, storeFromEnv } from '../functions/store/from-env';
import { inviteAccount } from '../functions/store/invites';
import { ProfileSettingError, type ResolvedProfile, resolveProfileSetting } from '../lib/provider-profile';
import { type LambdaDefinition, lambdasTriggeredBy } from '../lib/routes';
import { asFunction, recordedUsageEnrollment, startAwsCallRecording, stopAwsCallRecording } from './aws-call-recorder';
import { conflictSettingsFromEnv, startConflictProxy } from './conflict-proxy';
import { deployedStreamMapping, type PacedHandler, startDeployedDriver } from './deployed-driver';
import { type DispatchHandler, startDispatchLoop } from './dispatch-loop';
import type { DynamoDbLocalHandle } from './dynamodb-local';
import {
  type AuthorizerHandler,
  createGateway,
  type GatewayTraffic,
  type LoadedRoute,
  type ProxyHandler,
} from './gateway';
import { handlerEnvironment } from './handler-environment';
import { type MockProvider, startMockProvider } from './mock-provider';
import { nudgeOnWrites } from './nudge-on-writes';
import { startLocalOidcProvider } from './oidc-provider';
import { startScheduledRuns } from './scheduled-runs';
import type { LocalSettings } from './settings';
import { writeStackState } from './stack-state';
import { LocalStackError, startSettingsDynamoDb } from './start-dynamodb';
import { type StreamHandler, startStreamPoller } from './stream-poller';
import { createUploadBucket } from './upload-bucket';
import { localUpstreamsList } from './upstream-settings';
import { createUsageLimiter, localUsageEnrollment, storePlanLookup } from './usage-plans';

/** A startup problem the user can fix (Java missing, a port taken), reported without a stack trace. */
export { LocalStackError } from './start-dynamodb';

export interface LocalStack {
  /** The origin: the dashboard, media and (without API_STAGE) the API. */
  url: string;
  /** Where the API's paths start: the origin, or `<origin>/<stage>` with API_STAGE. */
  apiUrl: string;
  dynamodbEndpoint: string;
  mockProvider: MockProvider;
  /** With MOCK_UPSTREAMS=N: mock-2 ... mock-N (`mockProvider` is mock-1). */
  mockUpstreams: readonly MockProvider[];
  /** A working demo key, shown only now: the demo user's own on a fresh database, else one for this run. */
  demoKey: DemoKey;
  /** The local OpenID provider and the demo account's sign-in (a new password every start). */
  oidcIssuer: string;
  demoSignIn: { email: string; password: string };
  /**
   * Bytes counted so far (the bench's uploads section): request bodies handed to the route Lambdas,
   * and request bodies the uploads' S3 stand-in read.
   */
  traffic(): GatewayTraffic & { storageRequestBytes: number };
  stop(): Promise<void>;
}

/**
 * The longest idle pause of the stack's loops (the dispatcher loop or its deployed stream mapping, the
 * stream pollers): an idle stack looks every two seconds, and every request through the gateway and
 * every write by the stack's handlers (local/nudge-on-writes.ts) brings the next look within the base
 * pause (local/idle-backoff.ts).
 */
const IDLE_LOOK_MAX_MS = 2000;

export const DEMO_USER = 'demo';
export const DEMO_CREDITS = 1000;
/** How long the key a later start prints keeps working (the first start's demo key does not end). */
export const DEMO_RUN_KEY_SECONDS = 24 * 3600;
export const DEMO_EMAIL = 'demo@example.com';
const LOCAL_OIDC_CLIENT_ID = 'generation-service-local';
const PROVIDER_KEY = 'local-provider-key';
/** The name (and path, `/<name>/`) of the local stand-in of the media bucket for uploads. */
export const LOCAL_UPLOADS_BUCKET = 'local-uploads';
// local/ here, dist/ when bundled (bin/run-ts.cjs): one level below the repository either way.
const ROOT = resolve(__dirname, '..');

function assertPortFree(port: number, host: string, setting: string): Promise<void> {
  return new Promise((resolvePort, reject) => {
    const probe = createNetServer();
    probe.once('error', () =>
      reject(new LocalStackError(`Port ${port} (${setting}) is already in use; set ${setting} to a free port.`)),
    );
    probe.listen(port, host, () => probe.close(() => resolvePort()));
  });
}

async function loadHandler<T>(definition: LambdaDefinition, recording: boolean): Promise<T> {
  const folder = /^functions\/([a-z0-9-]+)\/handler\.ts$/.exec(definition.entry)?.[1];
  if (!folder) throw new Error(`${definition.entry} is not functions/<name>/handler.ts`);
  // A pattern esbuild can bundle (every functions/*/handler.ts), so that the bundled local stack
  // (bin/run-ts.cjs) holds every handler; tsx and jest resolve it as a plain path.
  const module = (await import(`../functions/${folder}/handler.ts`)) as {
    handler?: T;
    default?: { handler?: T };
  };
  const handler = module.handler ?? module.default?.handler;
  if (!handler) throw new Error(`${definition.entry} does not export a handler`);
  if (!recording || typeof handler !== 'function') return handler;
  // Recording AWS calls: everything the invocation does is its function's (local/aws-call-recorder.ts).
  const invoke = handler as (...args: unknown[]) => unknown;
  return ((...args: unknown[]) => asFunction(definition.name, () => invoke(...args))) as T;
}

/** Creates the demo user with credits and a key on a fresh database, or a key for this run; returns it (shown once). */
/** The key the banner shows; `endsAt` when it is this run's key (the first start's key does not end). */
export interface DemoKey {
  apiKey: string;
  endsAt?: Date;
}

async function ensureDemoUser(freshTable: boolean): Promise<DemoKey> {
  const store = storeFromEnv();
  if (freshTable) {
    // A table this start created holds no demo user: every write at once (a round trip less).
    const [, , issued] = await Promise.all([
      inviteAccount(store, { email: DEMO_EMAIL, userId: DEMO_USER }),
      grantCredits(store, { userId: DEMO_USER, amount: DEMO_CREDITS, grantId: 'demo-welcome', spread: false }),
      putApiKey(store, { userId: DEMO_USER, name: 'demo' }),
    ]);
    return { apiKey: issued.apiKey };
  }
  // Invited on every start (a repeat changes nothing), so the demo account can always sign in.
  const [, existing] = await Promise.all([
    inviteAccount(store, { email: DEMO_EMAIL, userId: DEMO_USER }),
    listApiKeys(store, DEMO_USER),
  ]);
  if (existing.length > 0) {
    // A later start on kept data: the first key was shown once and is stored only as a hash, so this
    // run gets a key of its own (ending in a day), and the banner's curl lines work again.
    const expiresAt = Math.floor(Date.now() / 1000) + DEMO_RUN_KEY_SECONDS;
    const issued = await putApiKey(store, {
      userId: DEMO_USER,
      name: `demo (npm start ${new Date().toISOString()})`,
      expiresAt,
    });
    return { apiKey: issued.apiKey, endsAt: new Date(expiresAt * 1000) };
  }
  const [, issued] = await Promise.all([
    grantCredits(store, { userId: DEMO_USER, amount: DEMO_CREDITS, grantId: 'demo-welcome', spread: false }),
    putApiKey(store, { userId: DEMO_USER, name: 'demo' }),
  ]);
  return { apiKey: issued.apiKey };
}

/**
 * Every handler module of the registry (lib/routes.ts `LAMBDAS`), by what invokes it: the gateway's
 * routes and authorizer, the timers of the scheduled functions, the pollers of the stream workers, the
 * loops of the paced functions (the dispatcher).
 */
async function loadHandlers(recording: boolean) {
  const [authorizerDefinition, ...others] = lambdasTriggeredBy('authorizer');
  if (!authorizerDefinition || others.length > 0) throw new Error('the registry must name exactly one authorizer');
  const [routes, authorizer, scheduled, streamWorkers, paced] = await Promise.all([
    Promise.all(
      lambdasTriggeredBy('route').map(
        async (route): Promise<LoadedRoute> => ({ route, handler: await loadHandler<ProxyHandler>(route, recording) }),
      ),
    ),
    loadHandler<AuthorizerHandler>(authorizerDefinition, recording),
    Promise.all(
      lambdasTriggeredBy('schedule').map(async (definition) => ({
        definition,
        handler: await loadHandler<() => Promise<unknown>>(definition, recording),
      })),
    ),
    Promise.all(
      lambdasTriggeredBy('stream').map(async (definition) => ({
        definition,
        handler: await loadHandler<StreamHandler>(definition, recording),
      })),
    ),
    Promise.all(
      lambdasTriggeredBy('paced').map(async (definition) => ({
        definition,
        handler: await loadHandler<PacedHandler & DispatchHandler>(definition, recording),
      })),
    ),
  ]);
  return { routes, authorizer, scheduled, streamWorkers, paced, stop: () => undefined };
}

type Started<T> = T & { stop(): Promise<void> | void };

/**
 * Waits for parts started together. Each part that started gets its stop into `cleanups`, also when
 * another failed; then the first failure is thrown.
 */
async function settleAll<T extends readonly Promise<Started<unknown>>[]>(
  cleanups: Array<() => Promise<void> | void>,
  parts: T,
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(parts);
  for (const result of settled) {
    if (result.status === 'fulfilled') {
      const part = result.value;
      cleanups.push(() => part.stop());
    }
  }
  const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}

/**
 * The profile `PROVIDER_PROFILE` names, validated before anything starts.
 * @throws LocalStackError naming the model and field of every problem
 */
function localProfile(value: string): ResolvedProfile {
  try {
    return resolveProfileSetting(value, process.cwd(), 'PROVIDER_PROFILE');
  } catch (error) {
    if (error instanceof ProfileSettingError) throw new LocalStackError(error.message);
    throw error;
  }
}

/**
 * The secret that signs provider callback URLs (Secrets Manager holds it when deployed): made once and
 * kept in the data directory (readable by its owner only), so callback URLs of tasks sent before a
 * restart stay valid; a new one per start with `:memory:`.
 */
function localCallbackSecret(dataDir: string): string {
  if (dataDir === ':memory:') return randomBytes(32).toString('base64url');
  const file = resolve(dataDir, 'provider-callback-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}

/**
 * The key that seals accounts' webhook signing secrets (Secrets Manager holds it when deployed):
 * `WEBHOOK_SECRETS_KEY` when set, else made once and kept in the data directory (readable by its owner
 * only), where the operator CLI finds it; a new one per start with `:memory:`, which the CLI finds in
 * that run's record.
 */
function localWebhookSecretsKey(dataDir: string): { key: string; from: 'env' | 'memory' | 'file' } {
  const given = readEnv(WEBHOOK_SECRETS_KEY);
  if (given) return { key: given, from: 'env' };
  // Kept for the CLI in this run's record (local/stack-state.ts), which is removed when the stack stops.
  if (dataDir === ':memory:') return { key: randomBytes(32).toString('base64url'), from: 'memory' };
  const file = resolve(dataDir, 'webhook-secrets-key');
  if (existsSync(file)) return { key: readFileSync(file, 'utf8').trim(), from: 'file' };
  const key = randomBytes(32).toString('base64url');
  writeFileSync(file, key, { mode: 0o600 });
  return { key, from: 'file' };
}

/** Starts everything; on any failure, stops what already started. */
export async function startLocalStack(
  settings: LocalSettings,
  log: (line: string) => void,
  /** DynamoDB Local already starting (`startSettingsDynamoDb`); started here when absent. */
  dynamodbStarting?: Promise<Pick<DynamoDbLocalHandle, 'endpoint' | 'stop'>>,
): Promise<LocalStack> {
  let profile: ResolvedProfile;
  try {
    profile = localProfile(settings.providerProfile);
    await Promise.all([
      assertPortFree(settings.port, settings.host, 'PORT'),
      assertPortFree(settings.mockProviderPort, settings.host, 'MOCK_PROVIDER_PORT'),
      assertPortFree(settings.oidcProviderPort, settings.host, 'OIDC_PROVIDER_PORT'),
    ]);
  } catch (error) {
    // A DynamoDB Local the caller already started would otherwise outlive the refusal.
    await dynamodbStarting?.then(
      (dynamodb) => dynamodb.stop(),
      () => undefined,
    );
    throw error;
  }
  // Set before the handlers load: the submit functions read their profile when they load.
  Object.assign(
    process.env,
    // An empty PROVIDER_PROFILE_JSON is written, not left out: it clears one an earlier start set.
    environmentOf(setting(PROVIDER_PROFILE, profile.profile.name), {
      name: PROVIDER_PROFILE_JSON.name,
      text: profile.json ?? '',
    }),
  );

  const inMemory = settings.dataDir === ':memory:';
  const mediaDir = inMemory ? mkdtempSync(join(tmpdir(), 'generation-media-')) : resolve(settings.dataDir, 'media');
  // Callers' uploads: the local stand-in of the media bucket's uploads/ prefix (local/upload-bucket.ts).
  const traffic: GatewayTraffic = { lambdaInvocations: 0, lambdaRequestBytes: 0 };
  let storageRequestBytes = 0;
  const uploadsDir = inMemory
    ? mkdtempSync(join(tmpdir(), 'generation-uploads-'))
    : resolve(settings.dataDir, 'uploads');
  if (!inMemory) mkdirSync(resolve(settings.dataDir, 'dynamodb'), { recursive: true });
  mkdirSync(mediaDir, { recursive: true });

  const cleanups: Array<() => Promise<void> | void> = [];
  const stop = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  };
  if (inMemory) cleanups.push(() => rmSync(mediaDir, { recursive: true, force: true }));
  if (inMemory) cleanups.push(() => rmSync(uploadsDir, { recursive: true, force: true }));
  // Before any handler module loads: some create their logger when imported.
  process.env[METRICS.name] ??= 'off';
  process.env[LOG_LEVEL.name] ??= 'warn';

  try {
    const url = `http://${settings.host}:${settings.port}`;
    const apiUrl = settings.apiStage ? `${url}/${settings.apiStage}` : url;
    // The same sign-in code as deployed; only the issuer and the client credentials differ.
    const oidcClientSecret = randomBytes(32).toString('base64url');
    const demoSignIn = { email: DEMO_EMAIL, password: randomBytes(9).toString('base64url') };

    // API Gateway's usage-plan control plane, recorded in the table (local/usage-plans.ts): installed before
    // the handlers load, as they read their enrollment when they load.
    // Recording the handlers' AWS calls for the IAM simulation: on before any client is made.
    if (settings.awsCallRecordFile) {
      startAwsCallRecording(settings.awsCallRecordFile);
      cleanups.push(() => stopAwsCallRecording());
    }
    useUsagePlansStandIn(
      settings.awsCallRecordFile
        ? recordedUsageEnrollment(localUsageEnrollment(storeFromEnv))
        : localUsageEnrollment(storeFromEnv),
    );
    // DynamoDB Local's JVM takes most of the start (measured: about 3 s of 11); everything that does
    // not need it starts meanwhile, so the ready line comes soon after DynamoDB Local answers.
    const [started, mockProvider, oidc, handlers] = await settleAll(cleanups, [
      dynamodbStarting ?? startSettingsDynamoDb(settings),
      startMockProvider({
        port: settings.mockProviderPort,
        host: settings.host,
        apiKey: PROVIDER_KEY,
        ...(settings.mockProviderCreateRateLimit ? { createRateLimit: settings.mockProviderCreateRateLimit } : {}),
        ...(settings.mockProviderMaxInFlight ? { maxInFlight: settings.mockProviderMaxInFlight } : {}),
        // The mock's own profile keeps its open door (any providerInput option); any other profile makes
        // it refuse what that upstream would refuse.
        ...(profile.profile.name === DEFAULT_PROFILE_NAME && profile.json === undefined
          ? {}
          : { profile: profile.profile }),
      }),
      startLocalOidcProvider({
        host: settings.host,
        port: settings.oidcProviderPort,
        clientId: LOCAL_OIDC_CLIENT_ID,
        clientSecret: oidcClientSecret,
        redirectUri: `${apiUrl}/api/auth/callback`,
        accounts: [demoSignIn, ...settings.idpAccounts],
      }),
      loadHandlers(settings.awsCallRecordFile !== undefined),
    ] as const);
    let dynamodb: Pick<DynamoDbLocalHandle, 'endpoint'> = started;
    // MOCK_UPSTREAMS=N: mock-2 ... mock-N on the next ports, each enforcing its own limits.
    const moreMocks = await settleAll(
      cleanups,
      Array.from({ length: settings.mockUpstreams - 1 }, (_, index) =>
        startMockProvider({
          port: settings.mockProviderPort + index + 1,
          host: settings.host,
          apiKey: PROVIDER_KEY,
          ...(settings.mockProviderCreateRateLimit ? { createRateLimit: settings.mockProviderCreateRateLimit } : {}),
          ...(settings.mockProviderMaxInFlight ? { maxInFlight: settings.mockProviderMaxInFlight } : {}),
          ...(profile.profile.name === DEFAULT_PROFILE_NAME && profile.json === undefined
            ? {}
            : { profile: profile.profile }),
        }),
      ),
    );
    const mockUrls = [mockProvider.url, ...moreMocks.map((mock) => mock.url)];
    const upstreamsList = localUpstreamsList({
      settings,
      mockUrls,
      apiKey: PROVIDER_KEY,
      profile: profile.profile.name,
      createRateLimit: settings.providerCreateRateLimit ?? profile.profile.capacity?.createRateLimit,
      maxInFlight: settings.providerMaxInFlight ?? profile.profile.capacity?.maxInFlight,
    });

    // DYNAMODB_CONFLICTS=on: the handlers talk to DynamoDB through the conflict-faithful layer.
    const conflicts = conflictSettingsFromEnv();
    if (conflicts) {
      const proxy = await startConflictProxy({ target: dynamodb.endpoint, holdMs: conflicts.holdMs });
      cleanups.push(() => proxy.stop());
      log(`DynamoDB transaction conflicts emulated (hold ${conflicts.holdMs} ms) at ${proxy.endpoint}`);
      dynamodb = { endpoint: proxy.endpoint };
    }

    const webhookKey = localWebhookSecretsKey(settings.dataDir);
    // The handlers' environment (local/handler-environment.ts, shared with the tests' harness), with
    // what only the whole stack has: uploads, callbacks, webhooks, sign-in and sessions.
    Object.assign(
      process.env,
      handlerEnvironment(
        {
          tableName: settings.tableName,
          dynamodbEndpoint: dynamodb.endpoint,
          provider: {
            url: mockProvider.url,
            apiKey: PROVIDER_KEY,
            // PROVIDER_CREATE_RATE_LIMIT and PROVIDER_MAX_IN_FLIGHT, else the profile's declared capacity.
            createRateLimit: settings.providerCreateRateLimit ?? profile.profile.capacity?.createRateLimit,
            maxInFlight: settings.providerMaxInFlight ?? profile.profile.capacity?.maxInFlight,
          },
          media: { dir: mediaDir, baseUrl: url },
          providerRefreshIntervalSeconds: settings.providerRefreshIntervalSeconds,
          maxPendingSeconds: settings.maxPendingSeconds,
          maxQueuedTasksPerAccount: settings.maxQueuedTasksPerAccount,
        },
        // Uploads go to the gateway's S3 stand-in through the same S3 code as deployed.
        setting(UPLOADS_BUCKET, LOCAL_UPLOADS_BUCKET),
        setting(UPLOADS_S3_ENDPOINT, url),
        setting(MAX_ACTIVE_KEYS, settings.maxActiveKeys),
        setting(MAX_OPEN_UPLOADS, settings.maxOpenUploads),
        setting(PUBLIC_ORIGIN, url),
        // The mock provider calls back here when a task ends (the same route as deployed).
        setting(PROVIDER_CALLBACK_BASE_URL, apiUrl),
        setting(PROVIDER_CALLBACK_SECRET, localCallbackSecret(settings.dataDir)),
        setting(WEBHOOK_SECRETS_KEY, webhookKey.key),
        setting(WEBHOOK_RETRY_DELAYS_SECONDS, settings.webhookRetryDelays || undefined),
        setting(WEBHOOK_INSECURE_ORIGINS, settings.webhookInsecureOrigins || undefined),
        setting(OIDC_ISSUER, oidc.issuer),
        setting(OIDC_CLIENT_ID, LOCAL_OIDC_CLIENT_ID),
        setting(OIDC_CLIENT_SECRET, oidcClientSecret),
        setting(SESSION_IDLE_SECONDS, settings.sessionIdleSeconds || undefined),
        setting(SESSION_ABSOLUTE_SECONDS, settings.sessionAbsoluteSeconds || undefined),
        setting(PROVIDER_UPSTREAMS, upstreamsList),
        // Every mock serves its results over plain HTTP on 127.0.0.1: each allowed by name.
        setting(MEDIA_SOURCE_INSECURE_ORIGINS, mockUrls.length > 1 ? mockUrls.join(',') : undefined),
      ),
    );
    resetStoreFromEnv();
    resetLifecycleFromEnv();
    // The handlers' one DynamoDB client (store/from-env.ts) gets the recording middleware from here, so
    // the request-path bundles carry none of it (the document client shares its client's middleware stack).
    if (settings.awsCallRecordFile) observeClient('dynamodb', storeFromEnv().doc);
    const { created } = await ensureTable(storeFromEnv());
    // The demo user is written while the pollers and the server start; awaited before the banner.
    const demoKeyWritten = ensureDemoUser(created);
    demoKeyWritten.catch(() => undefined); // a failure is thrown where it is awaited
    const { routes, authorizer, scheduled, streamWorkers, paced } = handlers;
    // What the gateway calls on every request, and the handlers' client after every write: the loops' nudges.
    const nudges: Array<() => void> = [];
    nudgeOnWrites(storeFromEnv().doc, () => {
      for (const nudge of nudges) nudge();
    });
    // The stream workers (media, webhooks) on the table's stream, with the deployed mappings' filters.
    for (const { definition, handler } of streamWorkers) {
      const poller = await startStreamPoller({
        // DynamoDB Local itself: the conflict layer, when on, speaks only the table API.
        endpoint: started.endpoint,
        tableName: settings.tableName,
        handler,
        filter: undefined,
        filters: definition.filters,
        name: definition.name.replace('-', ' '),
        maxIdleMs: IDLE_LOOK_MAX_MS,
        log,
        // DISPATCH_DRIVER=deployed: the mapping's batch size, parallelization, bisection and retries.
        ...(settings.dispatchDriver === 'deployed' ? deployedStreamMapping(definition) : {}),
      });
      nudges.push(poller.nudge);
      cleanups.push(() => poller.stop());
    }
    // The paced functions (the dispatcher), as their stream records and SQS wake-ups drive them deployed
    // (local/dispatch-loop.ts).
    // DISPATCH_DRIVER=deployed: their deployed triggers instead (local/deployed-driver.ts), whose queue
    // the handlers' SQS client is pointed at.
    for (const { definition, handler } of paced) {
      if (settings.dispatchDriver === 'deployed') {
        const driver = await startDeployedDriver({
          endpoint: started.endpoint,
          tableName: settings.tableName,
          handler,
          definition,
          host: settings.host,
          maxIdleMs: IDLE_LOOK_MAX_MS,
          log,
        });
        Object.assign(process.env, driver.environment());
        resetSqsClient();
        nudges.push(driver.nudge);
        cleanups.push(() => driver.stop());
        continue;
      }
      const loop = startDispatchLoop({ handler, maxIdleMs: IDLE_LOOK_MAX_MS, log });
      nudges.push(loop.nudge);
      cleanups.push(() => loop.stop());
    }

    const gateway = createGateway({
      traffic,
      routes,
      authorizer,
      authorizerCacheTtlSeconds: settings.authorizerCacheTtlSeconds,
      // API Gateway's usage plans, with the same semantics (local/usage-plans.ts).
      usageLimiter: createUsageLimiter(
        storePlanLookup(storeFromEnv(), settings.keyRatePlan, settings.ratePlanCacheSeconds),
      ),
      staticDir: resolve(ROOT, settings.staticDir),
      ...(settings.apiStage ? { stage: settings.apiStage, stageInPath: true } : {}),
      media: {
        resolve: (urlPath) => resolveMediaPath(mediaDir, urlPath),
        headers: mediaResponseHeaders,
      },
      uploadBucket: createUploadBucket({
        bucket: LOCAL_UPLOADS_BUCKET,
        dir: uploadsDir,
        region: 'local',
        onBodyRead: (bytes) => {
          storageRequestBytes += bytes;
        },
        // The stack's own key pair (the handlers sign with it, as a Lambda role does deployed).
        credentialsFor: (accessKeyId) => {
          const secretAccessKey = readEnv(AWS_SECRET_ACCESS_KEY);
          return accessKeyId === readEnv(AWS_ACCESS_KEY_ID) && secretAccessKey
            ? { accessKeyId, secretAccessKey }
            : undefined;
        },
      }),
      log,
    });
    // Every request may write (a submit, a callback, an upload): the loops look again within their base
    // pause, so their idle backoff never delays work (local/idle-backoff.ts).
    const server: Server = createServer((request, response) => {
      for (const nudge of nudges) nudge();
      gateway(request, response);
    });
    // Idle connections kept a minute, as API Gateway keeps them, not Node's 5 s: a client that keeps a
    // socket 4 s (fetch) could otherwise reuse one the server was closing just then on a loaded machine.
    server.keepAliveTimeout = 60_000;
    server.headersTimeout = 61_000;
    await new Promise<void>((ready, fail) => {
      server.once('error', fail);
      server.listen(settings.port, settings.host, () => ready());
    });
    cleanups.push(
      () =>
        new Promise<void>((closed) => {
          server.close(() => closed());
          server.closeAllConnections();
        }),
    );

    // The scheduled functions (the sweeper) run as in AWS, on a timer (every SWEEPER_INTERVAL_SECONDS
    // here, less often while they find nothing: local/scheduled-runs.ts); a run never overlaps the previous one.
    for (const { definition, handler } of scheduled) {
      const runs = startScheduledRuns({
        run: handler,
        intervalMs: settings.sweeperIntervalSeconds * 1000,
        idleMaxMs: settings.sweeperIdleMaxSeconds * 1000,
        log,
        name: definition.name,
      });
      nudges.push(runs.nudge);
      cleanups.push(() => runs.stop());
    }

    const demoKey = await demoKeyWritten;
    // The operator CLI finds this stack (its DynamoDB Local and table) through this record.
    cleanups.push(
      writeStackState(settings.dataDir, settings.port, {
        pid: process.pid,
        dynamodbEndpoint: dynamodb.endpoint,
        // The CLI compares an explicit DYNAMODB_PORT with DynamoDB Local's own port too.
        ...(dynamodb.endpoint === started.endpoint ? {} : { dynamodbLocalEndpoint: started.endpoint }),
        tableName: settings.tableName,
        apiUrl,
        ...(webhookKey.from === 'memory' ? { webhookSecretsKey: webhookKey.key } : {}),
        ...(webhookKey.from === 'env' ? { webhookSecretsKeyFromEnv: true } : {}),
        ...(settings.webhookInsecureOrigins ? { webhookInsecureOrigins: settings.webhookInsecureOrigins } : {}),
        keyRatePlan: settings.keyRatePlan,
        mediaDir,
        uploadsDir,
      }),
    );
    return {
      url,
      apiUrl,
      dynamodbEndpoint: dynamodb.endpoint,
      mockProvider,
      mockUpstreams: moreMocks,
      demoKey,
      oidcIssuer: oidc.issuer,
      demoSignIn,
      traffic: () => ({ ...traffic, storageRequestBytes }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
