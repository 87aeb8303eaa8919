/**
 * Deployment configuration read from CDK context (`cdk.json` "context", or `-c key=value` on the
 * command line). Every key is optional; the defaults below are what `cdk.json` ships with. Values given
 * with `-c` arrive as strings, so numbers and booleans are parsed and checked here, and a bad value
 * stops synthesis with a message instead of deploying something surprising.
 */

import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';
import { MAX_TEMPORARY_CREDENTIALS_URL_SECONDS } from '../functions/aws/signer';

import {
  DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT,
  MAX_QUEUED_TASKS_PER_ACCOUNT_LIMIT,
} from '../functions/core/queue-bound';
import { DEFAULT_RATE_PLAN, MAX_BURST, MAX_DAILY_QUOTA, MAX_RATE_PER_SECOND } from '../functions/core/rate-plan';
import { ProfileSettingError, type ResolvedProfile, resolveProfileSetting } from './provider-profile';

/** The context keys the stack reads, with their meaning. */
export interface ServiceConfig {
  /** `stackName`: CloudFormation stack name, so several copies (dev, prod) can live in one account. */
  stackName: string;
  /** `stageName`: API Gateway stage name; it is the first path segment of the API URL. */
  stageName: string;
  /**
   * `localstack`: deploy to LocalStack's free edition. Routes get no Lambda authorizer (LocalStack runs
   * none) and the route functions authorize inline (`INLINE_AUTHORIZER=true`); the API Gateway
   * CloudWatch role is skipped; data is never retained. Never set it for AWS.
   */
  localstack: boolean;
  /** `providerBaseUrl`: base URL of the upstream generation provider's HTTP API (https in AWS). */
  providerBaseUrl: string;
  /**
   * `providerProfile`: how the upstream names the models and shapes their input (docs/guides/provider.md): a shipped
   * profile (`kie`, `mock` for the local mock provider) or the path of a JSON
   * profile for another upstream (relative to the working directory). Validated here, so a bad profile
   * stops synth with a message naming the model and the field.
   */
  providerProfile: string;
  /**
   * `providerSecretName`: name of an existing Secrets Manager secret that holds the provider API key.
   * Empty (the default): the stack creates the secret with a random placeholder value that the
   * operator overwrites with `aws secretsmanager put-secret-value`. The key itself is never in code or
   * context.
   */
  providerSecretName: string;
  /** `providerRefreshIntervalSeconds`: minimum time between two provider queries for one task. */
  providerRefreshIntervalSeconds: number;
  /** `authorizerCacheTtlSeconds`: API Gateway authorizer result cache; must be 0 (off) while the only identity source is the caller address (see lib/routes.ts). */
  authorizerCacheTtlSeconds: number;
  /** `maxPendingSeconds`: age at which a pending task fails with `TIMEOUT` and is refunded. */
  maxPendingSeconds: number;
  /**
   * `mediaUrlTtlSeconds`: lifetime of the signed result URLs returned by the API, 60 to 3600. The
   * functions sign with their role's temporary credentials, and such a URL dies with the role session
   * whatever its own expiry says, so longer lifetimes would be promises the URL may not keep.
   */
  mediaUrlTtlSeconds: number;
  /**
   * `mediaSourceHosts`: comma-separated host names the provider's result URLs may point at
   * (`cdn.provider.example`, or `*.provider.example` for any subdomain). Empty (the default): any
   * public host. Either way only https to public addresses is fetched (see docs/design/security.md).
   */
  mediaSourceHosts: string;
  /** `logRetentionDays`: retention of the Lambda and API access log groups (a CloudWatch value). */
  logRetentionDays: RetentionDays;
  /** `resultRetentionDays`: result files in the media bucket expire after this many days. */
  resultRetentionDays: number;
  /** `uploadMaxBytes`: the largest reference image a caller may upload (POST /api/ai/uploads). */
  uploadMaxBytes: number;
  /**
   * `uploadExpiryHours`: an upload's record and reference expire after this long; the bucket's lifecycle
   * rule deletes its file after the same time rounded up to whole days (S3 expires by the day).
   */
  uploadExpiryHours: number;
  /**
   * `uploadCorsOrigins`: comma-separated origins (`https://app.example.com`) whose pages may POST uploads
   * to the bucket from a browser (the dashboard's). Empty: no CORS rule (API clients need none).
   */
  uploadCorsOrigins: string;
  /**
   * `retainData`: keep the table, the bucket and the secret when the stack is deleted, and turn on
   * DynamoDB deletion protection. True in production; false for throwaway stacks (and LocalStack).
   */
  retainData: boolean;
  /**
   * `throttlingRateLimit`: stage-wide steady-state request rate (requests per second), for everybody
   * together (authenticated or not). Keep it well above what the busy accounts use together, or one
   * flood pushes paying callers into 429s (docs/design/rate-limits.md).
   */
  throttlingRateLimit: number;
  /** `throttlingBurstLimit`: stage-wide burst capacity (requests). */
  throttlingBurstLimit: number;
  /** `keyRateLimit`: the default plan's steady rate per API key (whole requests per second). */
  keyRateLimit: number;
  /** `keyBurstLimit`: the default plan's burst per API key (requests at once). */
  keyBurstLimit: number;
  /** `keyDailyQuota`: the default plan's requests per API key and UTC day; 0 for no quota. */
  keyDailyQuota: number;
  /** `maxActiveKeys`: the most active API keys one account may hold (each has a rate bucket of its own). */
  maxActiveKeys: number;
  /**
   * `maxQueuedTasksPerAccount`: the most tasks one account may have queued for the provider; past it a
   * submit answers 429 `Queue full` (docs/design/dispatching.md). 1 to 10000: each submit counts
   * the account's queue entries up to this many.
   */
  maxQueuedTasksPerAccount: number;
  /**
   * `wafRequestsPerIpPerMinute`: the web ACL in front of the stage blocks (429) an address sending more
   * than this many requests in a minute, before they count against the stage limit; 0 for no web ACL.
   */
  wafRequestsPerIpPerMinute: number;
  /**
   * `tracing`: AWS X-Ray active tracing on every function and on the API stage (costs per trace); the
   * trace id then appears in every log line. Off by default.
   */
  tracing: boolean;
  /** `logLevel`: `LOG_LEVEL` of every function (DEBUG, INFO, WARN, ERROR). */
  logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** `alarmEmail`: when set, alarms notify an SNS topic with this e-mail subscribed. */
  alarmEmail: string;
  /** `timeoutAlarmThreshold`: tasks failed with `TIMEOUT` within 15 minutes that raise the alarm. */
  timeoutAlarmThreshold: number;
  /** `providerErrorAlarmThreshold`: provider call failures within 5 minutes that raise the alarm. */
  providerErrorAlarmThreshold: number;
  /**
   * `apiGatewayCloudWatchRole`: create the account-wide (per region) role API Gateway needs to write
   * access and execution logs. Set false when the account already has one configured, which is the
   * case when another stack in this region manages it.
   */
  apiGatewayCloudWatchRole: boolean;
}

/**
 * The defaults, for a key set neither with `-c`, nor in `cdk.json`, nor by the environment preset
 * (`env`). docs/guides/configuration.md lists every key with its default, per-environment value and limits.
 */
export const DEFAULT_CONFIG: Readonly<ServiceConfig> = {
  stackName: 'GenerationService',
  stageName: 'prod',
  localstack: false,
  providerBaseUrl: 'https://provider.example.invalid',
  providerProfile: 'kie',
  providerSecretName: '',
  providerRefreshIntervalSeconds: 30,
  authorizerCacheTtlSeconds: 0,
  maxPendingSeconds: 1800,
  mediaUrlTtlSeconds: 3600,
  mediaSourceHosts: '',
  logRetentionDays: RetentionDays.ONE_MONTH,
  resultRetentionDays: 30,
  uploadMaxBytes: 20 * 1024 * 1024,
  uploadExpiryHours: 24,
  uploadCorsOrigins: '',
  retainData: true,
  throttlingRateLimit: 1000,
  throttlingBurstLimit: 2000,
  keyRateLimit: DEFAULT_RATE_PLAN.ratePerSecond,
  keyBurstLimit: DEFAULT_RATE_PLAN.burst,
  keyDailyQuota: 0,
  maxActiveKeys: 20,
  maxQueuedTasksPerAccount: DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT,
  // Twice a key's full default rate from one address, so the web ACL never limits a paying caller first.
  wafRequestsPerIpPerMinute: 12_000,
  tracing: false,
  logLevel: 'INFO',
  alarmEmail: '',
  timeoutAlarmThreshold: 3,
  providerErrorAlarmThreshold: 10,
  apiGatewayCloudWatchRole: true,
};

/** The context keys the stack understands (besides `env`); anything else in `cdk.json` is a CDK feature flag. */
export const CONFIG_KEYS = Object.keys(DEFAULT_CONFIG) as readonly (keyof ServiceConfig)[];

/** The environments `-c env=...` selects. */
export const ENVIRONMENTS = ['dev', 'prod'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/**
 * What each environment changes from the defaults; a key given with `-c` or in `cdk.json` still wins.
 * dev: a throwaway copy (nothing retained, short retention, DEBUG logs, lower limits, no web ACL, alarms
 * that do not page on a developer's experiments); prod: the defaults with three months of logs. Tracing
 * stays a choice in both (`-c tracing=true`): X-Ray is paid per trace.
 */
export const ENVIRONMENT_PRESETS: Readonly<Record<Environment, Partial<ServiceConfig>>> = {
  dev: {
    stackName: 'GenerationService-dev',
    stageName: 'dev',
    retainData: false,
    logRetentionDays: RetentionDays.ONE_WEEK,
    resultRetentionDays: 7,
    logLevel: 'DEBUG',
    throttlingRateLimit: 100,
    throttlingBurstLimit: 200,
    keyRateLimit: 20,
    keyBurstLimit: 40,
    wafRequestsPerIpPerMinute: 0,
    timeoutAlarmThreshold: 20,
    providerErrorAlarmThreshold: 50,
  },
  prod: {
    logRetentionDays: RetentionDays.THREE_MONTHS,
  },
};

/** `env`: a name of ENVIRONMENTS, or nothing (the defaults alone). */
function environmentOf(value: unknown): Environment | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string' && (ENVIRONMENTS as readonly string[]).includes(value)) return value as Environment;
  throw new ConfigError(`env must be one of ${ENVIRONMENTS.join(', ')} (or unset for the defaults alone)`);
}

const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
const RETENTION_VALUES = new Set<number>(
  Object.values(RetentionDays).filter((value): value is number => typeof value === 'number'),
);

/** Thrown when a context value is missing its expected type or range. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * The profile `providerProfile` names (see lib/provider-profile.ts).
 * @throws ConfigError naming the model and field of every problem
 */
export function resolveProviderProfile(value: string): ResolvedProfile {
  try {
    return resolveProfileSetting(value, process.cwd(), 'providerProfile');
  } catch (error) {
    if (error instanceof ProfileSettingError) throw new ConfigError(error.message);
    throw error;
  }
}

/**
 * Reads and validates the configuration from a construct's context (the app's context in practice).
 * @throws ConfigError when a value has the wrong type or is out of range
 */
/** The shipped placeholder (a `.invalid` host, RFC 2606): a deployment with it would refund every task. */
function isPlaceholderUrl(url: string): boolean {
  try {
    return new URL(url).hostname.endsWith('.invalid');
  } catch {
    return false;
  }
}

export function readConfig(node: Node): ServiceConfig {
  const environment = environmentOf(node.tryGetContext('env'));
  const preset: Partial<ServiceConfig> = environment ? ENVIRONMENT_PRESETS[environment] : {};
  // An explicit key (-c or cdk.json) wins over the environment's preset, which wins over the default.
  const raw = (key: keyof ServiceConfig): unknown => node.tryGetContext(key) ?? preset[key];
  const localstack = bool(raw('localstack'), 'localstack', DEFAULT_CONFIG.localstack);
  const logRetentionDays = int(raw('logRetentionDays'), 'logRetentionDays', DEFAULT_CONFIG.logRetentionDays, 1, 9999);
  if (!RETENTION_VALUES.has(logRetentionDays)) {
    throw new ConfigError(`logRetentionDays must be one of ${[...RETENTION_VALUES].join(', ')}`);
  }
  const logLevel = str(raw('logLevel'), 'logLevel', DEFAULT_CONFIG.logLevel).toUpperCase();
  if (!isLogLevel(logLevel)) throw new ConfigError(`logLevel must be one of ${LOG_LEVELS.join(', ')}`);
  const providerBaseUrl = str(raw('providerBaseUrl'), 'providerBaseUrl', DEFAULT_CONFIG.providerBaseUrl);
  if (!/^https?:\/\/[^\s/]+/.test(providerBaseUrl)) {
    throw new ConfigError('providerBaseUrl must be an http(s) URL');
  }
  if (isPlaceholderUrl(providerBaseUrl)) {
    throw new ConfigError(
      `providerBaseUrl is still the placeholder ${providerBaseUrl}: set your provider's API URL, e.g. ` +
        '`npx cdk deploy -c providerBaseUrl=https://api.provider.example` or "providerBaseUrl" in cdk.json "context"',
    );
  }
  const config: ServiceConfig = {
    stackName: str(raw('stackName'), 'stackName', DEFAULT_CONFIG.stackName),
    stageName: str(raw('stageName'), 'stageName', DEFAULT_CONFIG.stageName),
    localstack,
    providerBaseUrl: providerBaseUrl.replace(/\/+$/, ''),
    providerProfile: str(raw('providerProfile'), 'providerProfile', DEFAULT_CONFIG.providerProfile),
    providerSecretName: str(raw('providerSecretName'), 'providerSecretName', DEFAULT_CONFIG.providerSecretName, true),
    providerRefreshIntervalSeconds: int(
      raw('providerRefreshIntervalSeconds'),
      'providerRefreshIntervalSeconds',
      DEFAULT_CONFIG.providerRefreshIntervalSeconds,
      1,
      3600,
    ),
    authorizerCacheTtlSeconds: int(
      raw('authorizerCacheTtlSeconds'),
      'authorizerCacheTtlSeconds',
      DEFAULT_CONFIG.authorizerCacheTtlSeconds,
      0,
      3600,
    ),
    maxPendingSeconds: int(raw('maxPendingSeconds'), 'maxPendingSeconds', DEFAULT_CONFIG.maxPendingSeconds, 60, 86400),
    mediaUrlTtlSeconds: int(
      raw('mediaUrlTtlSeconds'),
      'mediaUrlTtlSeconds',
      DEFAULT_CONFIG.mediaUrlTtlSeconds,
      60,
      MAX_TEMPORARY_CREDENTIALS_URL_SECONDS,
    ),
    mediaSourceHosts: hostList(str(raw('mediaSourceHosts'), 'mediaSourceHosts', DEFAULT_CONFIG.mediaSourceHosts, true)),
    logRetentionDays,
    resultRetentionDays: int(
      raw('resultRetentionDays'),
      'resultRetentionDays',
      DEFAULT_CONFIG.resultRetentionDays,
      1,
      36500,
    ),
    uploadMaxBytes: int(raw('uploadMaxBytes'), 'uploadMaxBytes', DEFAULT_CONFIG.uploadMaxBytes, 1, 100 * 1024 * 1024),
    uploadExpiryHours: int(raw('uploadExpiryHours'), 'uploadExpiryHours', DEFAULT_CONFIG.uploadExpiryHours, 1, 24 * 7),
    uploadCorsOrigins: originList(
      str(raw('uploadCorsOrigins'), 'uploadCorsOrigins', DEFAULT_CONFIG.uploadCorsOrigins, true),
    ),
    // A LocalStack deployment is disposable by definition: nothing is retained there.
    retainData: localstack ? false : bool(raw('retainData'), 'retainData', DEFAULT_CONFIG.retainData),
    throttlingRateLimit: int(
      raw('throttlingRateLimit'),
      'throttlingRateLimit',
      DEFAULT_CONFIG.throttlingRateLimit,
      1,
      1_000_000,
    ),
    throttlingBurstLimit: int(
      raw('throttlingBurstLimit'),
      'throttlingBurstLimit',
      DEFAULT_CONFIG.throttlingBurstLimit,
      1,
      1_000_000,
    ),
    keyRateLimit: int(raw('keyRateLimit'), 'keyRateLimit', DEFAULT_CONFIG.keyRateLimit, 1, MAX_RATE_PER_SECOND),
    keyBurstLimit: int(raw('keyBurstLimit'), 'keyBurstLimit', DEFAULT_CONFIG.keyBurstLimit, 1, MAX_BURST),
    keyDailyQuota: int(raw('keyDailyQuota'), 'keyDailyQuota', DEFAULT_CONFIG.keyDailyQuota, 0, MAX_DAILY_QUOTA),
    maxActiveKeys: int(raw('maxActiveKeys'), 'maxActiveKeys', DEFAULT_CONFIG.maxActiveKeys, 1, 1000),
    maxQueuedTasksPerAccount: int(
      raw('maxQueuedTasksPerAccount'),
      'maxQueuedTasksPerAccount',
      DEFAULT_CONFIG.maxQueuedTasksPerAccount,
      1,
      MAX_QUEUED_TASKS_PER_ACCOUNT_LIMIT,
    ),
    wafRequestsPerIpPerMinute: int(
      raw('wafRequestsPerIpPerMinute'),
      'wafRequestsPerIpPerMinute',
      DEFAULT_CONFIG.wafRequestsPerIpPerMinute,
      0,
      2_000_000_000,
    ),
    tracing: bool(raw('tracing'), 'tracing', DEFAULT_CONFIG.tracing),
    logLevel,
    alarmEmail: str(raw('alarmEmail'), 'alarmEmail', DEFAULT_CONFIG.alarmEmail, true),
    timeoutAlarmThreshold: int(
      raw('timeoutAlarmThreshold'),
      'timeoutAlarmThreshold',
      DEFAULT_CONFIG.timeoutAlarmThreshold,
      1,
      1_000_000,
    ),
    providerErrorAlarmThreshold: int(
      raw('providerErrorAlarmThreshold'),
      'providerErrorAlarmThreshold',
      DEFAULT_CONFIG.providerErrorAlarmThreshold,
      1,
      1_000_000,
    ),
    apiGatewayCloudWatchRole: bool(
      raw('apiGatewayCloudWatchRole'),
      'apiGatewayCloudWatchRole',
      DEFAULT_CONFIG.apiGatewayCloudWatchRole,
    ),
  };
  if (config.maxPendingSeconds <= config.providerRefreshIntervalSeconds) {
    throw new ConfigError('maxPendingSeconds must be greater than providerRefreshIntervalSeconds');
  }
  if (config.keyRateLimit > config.throttlingRateLimit || config.keyBurstLimit > config.throttlingBurstLimit) {
    throw new ConfigError(
      'keyRateLimit and keyBurstLimit must not exceed throttlingRateLimit and throttlingBurstLimit: one key could then fill the whole stage',
    );
  }
  if (config.wafRequestsPerIpPerMinute !== 0 && config.wafRequestsPerIpPerMinute < 10) {
    throw new ConfigError('wafRequestsPerIpPerMinute must be 0 (no web ACL) or at least 10 (the least AWS WAF allows)');
  }
  if (config.alarmEmail !== '' && !/^[^\s@]+@[^\s@]+$/.test(config.alarmEmail)) {
    throw new ConfigError('alarmEmail must be an e-mail address or empty');
  }
  resolveProviderProfile(config.providerProfile);
  return config;
}

const HOST_RULE = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A comma-separated list of host rules, normalised (lowercase, no spaces); refuses anything else. */
function originList(value: string): string {
  const origins = value
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '');
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (parsed?.protocol !== 'https:' || parsed.origin !== origin) {
      throw new ConfigError(`uploadCorsOrigins: "${origin}" is not an https origin (https://host[:port], no path)`);
    }
  }
  return origins.join(',');
}

function hostList(value: string): string {
  const hosts = value
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host.length > 0);
  for (const host of hosts) {
    if (!HOST_RULE.test(host)) {
      throw new ConfigError(`mediaSourceHosts: "${host}" is not a host name or *.domain`);
    }
  }
  return hosts.join(',');
}

function isLogLevel(value: string): value is ServiceConfig['logLevel'] {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

function str(value: unknown, key: string, fallback: string, allowEmpty = false): string {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string') throw new ConfigError(`${key} must be a string`);
  const trimmed = value.trim();
  if (trimmed === '' && !allowEmpty) throw new ConfigError(`${key} must not be empty`);
  return trimmed;
}

function bool(value: unknown, key: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'boolean') return value;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new ConfigError(`${key} must be true or false`);
}

function int(value: unknown, key: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === null) return fallback;
  const parsed = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof parsed !== 'number' || !Number.isInteger(parsed) || parsed < min || parsed > max) {
    throw new ConfigError(`${key} must be an integer from ${min} to ${max}`);
  }
  return parsed;
}
