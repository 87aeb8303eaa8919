/**
 * The local stack's settings (the table in docs/guides/local-stack.md), read from the environment. The operator CLI reads
 * the same ones so that it talks to the stack `npm start` runs.
 */
import { DEFAULT_PROFILE_NAME } from '../functions/core/profiles';
import {
  type CreateRateLimit,
  checkCapacityItemFits,
  formatCreateRateLimit,
  parseCreateRateLimit,
  parseMaxInFlight,
} from '../functions/core/provider-capacity';
import { DEFAULT_RATE_PLAN, type RatePlan, ratePlanProblems } from '../functions/core/rate-plan';
import { DEFAULT_MAX_OPEN_UPLOADS } from '../functions/core/uploads';
import { parseRetryDelays } from '../functions/core/webhooks';
import {
  DYNAMODB_ENDPOINT,
  MAX_OPEN_UPLOADS,
  MAX_PENDING_SECONDS,
  PROVIDER_CREATE_RATE_LIMIT,
  PROVIDER_MAX_IN_FLIGHT,
  PROVIDER_PROFILE,
  PROVIDER_REFRESH_INTERVAL_SECONDS,
  readEnv,
  SESSION_ABSOLUTE_SECONDS,
  SESSION_IDLE_SECONDS,
  TABLE_NAME,
  WEBHOOK_INSECURE_ORIGINS,
  WEBHOOK_MAX_ENDPOINTS,
  WEBHOOK_MAX_OPEN_DELIVERIES,
  WEBHOOK_RETRY_DELAYS_SECONDS,
} from '../functions/environment/environment';
import { insecureOriginsFrom } from '../functions/media/source-policy';
import { maxQueuedTasksFromEnv } from '../functions/store/dispatch';
import { maxActiveKeysFromEnv } from '../functions/store/key-count';
import { DEFAULT_TABLE_NAME } from '../functions/store/table';
import { type LocalUpstreamSettings, localUpstreamSettings } from './upstream-settings';

/**
 * The settings of `npm start`, read from the environment. What each one means is its variable's entry in
 * local/settings-catalog.ts (`LOCAL_SETTING_DOCS`), the source of docs/guides/configuration.md.
 */
export interface LocalSettings extends LocalUpstreamSettings {
  host: string;
  port: number;
  dynamodbPort: number;
  mockProviderPort: number;
  mockProviderCreateRateLimit?: CreateRateLimit;
  mockProviderMaxInFlight?: number;
  providerCreateRateLimit?: string;
  providerMaxInFlight?: number;
  oidcProviderPort: number;
  idpAccounts: { email: string; password: string }[];
  staticDir: string;
  sessionIdleSeconds?: number;
  sessionAbsoluteSeconds?: number;
  tableName: string;
  dataDir: string;
  providerRefreshIntervalSeconds: number;
  authorizerCacheTtlSeconds: number;
  maxPendingSeconds: number;
  dynamodbEndpoint?: string;
  sweeperIntervalSeconds: number;
  /** The longest pause between sweeps that found nothing to do (local/scheduled-runs.ts). */
  sweeperIdleMaxSeconds: number;
  /** What drives the dispatcher: the fast loop, or its deployed triggers (local/deployed-driver.ts). */
  dispatchDriver: 'loop' | 'deployed';
  apiStage?: string;
  keyRatePlan: RatePlan;
  ratePlanCacheSeconds: number;
  maxActiveKeys: number;
  maxQueuedTasksPerAccount: number;
  maxOpenUploads: number;
  providerProfile: string;
  webhookRetryDelays?: string;
  webhookInsecureOrigins?: string;
  exitWithPid?: number;
  /** `AWS_CALL_RECORD_FILE`: where every AWS call of the handlers is recorded (local/aws-call-recorder.ts). */
  awsCallRecordFile?: string;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number >= 0, got "${raw}"`);
  return value;
}

function accounts(raw: string | undefined): { email: string; password: string }[] {
  if (!raw) return [];
  return raw.split(',').map((pair) => {
    const at = pair.indexOf(':');
    if (at <= 0 || at === pair.length - 1)
      throw new Error('LOCAL_IDP_ACCOUNTS must be email:password pairs, comma-separated');
    return { email: pair.slice(0, at).trim(), password: pair.slice(at + 1) };
  });
}

/**
 * 0, as the stack insists: the authorizer's only identity source is the caller's address (lib/routes.ts),
 * so a cached result would serve one caller's Allow to every other caller on the same address.
 */
function authorizerCacheTtl(env: NodeJS.ProcessEnv): number {
  const ttl = int(env, 'AUTHORIZER_CACHE_TTL_SECONDS', 0);
  if (ttl !== 0) {
    throw new Error(
      'AUTHORIZER_CACHE_TTL_SECONDS must be 0: the authorizer takes a key or a session cookie, so its cache could only be keyed on the caller address',
    );
  }
  return ttl;
}

function optionalSeconds(env: NodeJS.ProcessEnv, name: string): number | undefined {
  return env[name] ? int(env, name, 0) : undefined;
}

function apiStage(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(raw))
    throw new Error(`API_STAGE must be a stage name (letters, digits, - and _), got "${raw}"`);
  return raw;
}

/** PORT_BASE: the first of four consecutive ports (API, mock provider, OpenID provider, DynamoDB Local). */
function portBase(env: NodeJS.ProcessEnv): number | undefined {
  if (!env.PORT_BASE) return undefined;
  const base = int(env, 'PORT_BASE', 0);
  if (base < 1024 || base > 65532)
    throw new Error(`PORT_BASE must be a port from 1024 to 65532, got "${env.PORT_BASE}"`);
  return base;
}

function offset(base: number | undefined, by: number): number | undefined {
  return base === undefined ? undefined : base + by;
}

/** The default key plan, with the same names and limits as the stack's context keys. */
function keyRatePlan(env: NodeJS.ProcessEnv): RatePlan {
  const dailyQuota = int(env, 'KEY_DAILY_QUOTA', 0);
  const plan: RatePlan = {
    ratePerSecond: int(env, 'KEY_RATE_LIMIT', DEFAULT_RATE_PLAN.ratePerSecond),
    burst: int(env, 'KEY_BURST_LIMIT', DEFAULT_RATE_PLAN.burst),
    ...(dailyQuota > 0 ? { dailyQuota } : {}),
  };
  const problems = ratePlanProblems(plan);
  const variable = {
    ratePerSecond: 'KEY_RATE_LIMIT',
    burst: 'KEY_BURST_LIMIT',
    dailyQuota: 'KEY_DAILY_QUOTA',
  } as const;
  for (const [field, problem] of Object.entries(problems)) {
    throw new Error(`${variable[field as keyof RatePlan]} ${problem}`);
  }
  return plan;
}

/** The schedule as the worker will read it, checked now so a bad value stops `npm start` at once. */
function checkedRetryDelays(text: string): string {
  parseRetryDelays(text);
  return text;
}

function checkedOrigins(text: string, setting: string): string {
  insecureOriginsFrom(text, setting);
  return text;
}

/** `{ [key]: check(text) }` when the setting is given, `{}` when it is not. */
function optional<K extends string>(key: K, text: string | undefined, check: (text: string) => string) {
  return text ? ({ [key]: check(text) } as { [P in K]: string }) : {};
}

export function localSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): LocalSettings {
  // Read by the webhook worker from the environment the stack runs in; checked now so a bad value stops the start.
  readEnv(WEBHOOK_MAX_OPEN_DELIVERIES, env);
  // Read by the webhook endpoint routes; checked now for the same reason.
  readEnv(WEBHOOK_MAX_ENDPOINTS, env);
  return {
    host: '127.0.0.1',
    // PORT_BASE moves every port at once (base, +1, +2, +3); a port set by name still wins.
    port: int(env, 'PORT', portBase(env) ?? 3000),
    dynamodbPort: int(env, 'DYNAMODB_PORT', offset(portBase(env), 3) ?? 8000),
    ...mockPorts(env),
    ...(env.MOCK_PROVIDER_CREATE_RATE_LIMIT
      ? {
          mockProviderCreateRateLimit: parseCreateRateLimit(
            env.MOCK_PROVIDER_CREATE_RATE_LIMIT,
            'MOCK_PROVIDER_CREATE_RATE_LIMIT',
          ),
        }
      : {}),
    ...providerCapacityFrom(env),
    ...(env.MOCK_PROVIDER_MAX_IN_FLIGHT
      ? { mockProviderMaxInFlight: parseMaxInFlight(env.MOCK_PROVIDER_MAX_IN_FLIGHT, 'MOCK_PROVIDER_MAX_IN_FLIGHT') }
      : {}),
    idpAccounts: accounts(env.LOCAL_IDP_ACCOUNTS),
    staticDir: env.DASHBOARD_DIR || 'dashboard/dist',
    sessionIdleSeconds: optionalSeconds(env, SESSION_IDLE_SECONDS.name),
    sessionAbsoluteSeconds: optionalSeconds(env, SESSION_ABSOLUTE_SECONDS.name),
    tableName: env[TABLE_NAME.name] || DEFAULT_TABLE_NAME,
    dataDir: env.DATA_DIR || '.data',
    providerRefreshIntervalSeconds: int(env, PROVIDER_REFRESH_INTERVAL_SECONDS.name, 30),
    authorizerCacheTtlSeconds: authorizerCacheTtl(env),
    maxPendingSeconds: int(env, MAX_PENDING_SECONDS.name, 1800),
    sweeperIntervalSeconds: int(env, 'SWEEPER_INTERVAL_SECONDS', 10),
    sweeperIdleMaxSeconds: int(env, 'SWEEPER_IDLE_MAX_SECONDS', 60),
    dispatchDriver: dispatchDriver(env.DISPATCH_DRIVER),
    dynamodbEndpoint: env[DYNAMODB_ENDPOINT.name] || undefined,
    apiStage: apiStage(env.API_STAGE),
    keyRatePlan: keyRatePlan(env),
    ratePlanCacheSeconds: int(env, 'RATE_PLAN_CACHE_SECONDS', 5),
    maxActiveKeys: maxActiveKeysFromEnv(env),
    maxQueuedTasksPerAccount: maxQueuedTasksFromEnv(env),
    maxOpenUploads: readEnv(MAX_OPEN_UPLOADS, env) ?? DEFAULT_MAX_OPEN_UPLOADS,
    providerProfile: env[PROVIDER_PROFILE.name] || DEFAULT_PROFILE_NAME,
    ...localUpstreamSettings(env, env[PROVIDER_PROFILE.name] || DEFAULT_PROFILE_NAME),
    ...optional('webhookRetryDelays', env[WEBHOOK_RETRY_DELAYS_SECONDS.name], checkedRetryDelays),
    ...optional('webhookInsecureOrigins', env[WEBHOOK_INSECURE_ORIGINS.name], (text) =>
      checkedOrigins(text, WEBHOOK_INSECURE_ORIGINS.name),
    ),
    ...exitWithPid(env),
    ...(env.AWS_CALL_RECORD_FILE ? { awsCallRecordFile: env.AWS_CALL_RECORD_FILE } : {}),
  };
}

/**
 * The mock provider's port and the OpenID provider's: with `MOCK_UPSTREAMS=N` the mocks take N
 * consecutive ports from `MOCK_PROVIDER_PORT`, and the OpenID provider's default moves past them (one set
 * by name among them is refused).
 */
function mockPorts(env: NodeJS.ProcessEnv): { mockProviderPort: number; oidcProviderPort: number } {
  const mockProviderPort = int(env, 'MOCK_PROVIDER_PORT', offset(portBase(env), 1) ?? 3001);
  const mocks = /^\d+$/.test(env.MOCK_UPSTREAMS ?? '') ? Number(env.MOCK_UPSTREAMS) : 1;
  const defaultOidc = offset(portBase(env), 2) ?? 3002;
  const among = (port: number) => port >= mockProviderPort && port < mockProviderPort + mocks;
  const oidcProviderPort = int(env, 'OIDC_PROVIDER_PORT', among(defaultOidc) ? mockProviderPort + mocks : defaultOidc);
  if (among(oidcProviderPort)) {
    throw new Error(
      `OIDC_PROVIDER_PORT ${oidcProviderPort} is among the ${mocks} mock upstreams' ports from MOCK_PROVIDER_PORT ${mockProviderPort}`,
    );
  }
  return { mockProviderPort, oidcProviderPort };
}

/** `DISPATCH_DRIVER`: `loop` (default) or `deployed`. */
function dispatchDriver(raw: string | undefined): 'loop' | 'deployed' {
  if (!raw || raw === 'loop') return 'loop';
  if (raw === 'deployed') return 'deployed';
  throw new Error(`DISPATCH_DRIVER must be loop or deployed, got "${raw}"`);
}

/** `EXIT_WITH_PID`: a process id, from 1 (0 would name this process's group, never a process). */
function exitWithPid(env: NodeJS.ProcessEnv): { exitWithPid?: number } {
  const raw = env.EXIT_WITH_PID;
  if (!raw) return {};
  const pid = Number(raw);
  if (!/^[1-9][0-9]*$/.test(raw) || !Number.isSafeInteger(pid)) {
    throw new Error(`EXIT_WITH_PID must be a process id (a whole number from 1), got "${raw}"`);
  }
  return { exitWithPid: pid };
}

/**
 * `PROVIDER_CREATE_RATE_LIMIT` (in its text form) and `PROVIDER_MAX_IN_FLIGHT`, checked now: a malformed
 * value stops the start naming it, and so does a pair whose capacity item could outgrow DynamoDB's item
 * size (the same check as at synth).
 */
function providerCapacityFrom(env: NodeJS.ProcessEnv): {
  providerCreateRateLimit?: string;
  providerMaxInFlight?: number;
} {
  const text = readEnv(PROVIDER_CREATE_RATE_LIMIT, env);
  const capText = env[PROVIDER_MAX_IN_FLIGHT.name];
  const createRateLimit = text === undefined ? undefined : parseCreateRateLimit(text, PROVIDER_CREATE_RATE_LIMIT.name);
  const maxInFlight = capText ? parseMaxInFlight(capText, PROVIDER_MAX_IN_FLIGHT.name) : undefined;
  const capacity = {
    ...(createRateLimit === undefined ? {} : { createRateLimit }),
    ...(maxInFlight === undefined ? {} : { maxInFlight }),
  };
  checkCapacityItemFits(capacity, {
    createRateLimit: PROVIDER_CREATE_RATE_LIMIT.name,
    maxInFlight: PROVIDER_MAX_IN_FLIGHT.name,
  });
  return {
    ...(createRateLimit === undefined ? {} : { providerCreateRateLimit: formatCreateRateLimit(createRateLimit) }),
    ...(maxInFlight === undefined ? {} : { providerMaxInFlight: maxInFlight }),
  };
}
