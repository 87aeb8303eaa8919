/**
 * Deployment configuration read from CDK context (`cdk.json` "context", or `-c key=value` on the
 * command line). Every key is optional; the defaults below are what `cdk.json` ships with. Values given
 * with `-c` arrive as strings, so numbers and booleans are parsed and checked here, and a bad value
 * stops synthesis with a message instead of deploying something surprising. Each key's type, range and
 * meaning are its spec (lib/config-keys.ts); the readers and checks are lib/config-values.ts.
 */

import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';
import { DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT } from '../functions/core/queue-bound';
import { DEFAULT_RATE_PLAN } from '../functions/core/rate-plan';
import { DEFAULT_MAX_OPEN_UPLOADS } from '../functions/core/uploads';
import {
  CONFIG_KEY_SPECS,
  type ConfigKeyOfType,
  type ContextKeySpec,
  ENVIRONMENTS,
  type Environment,
  LOG_LEVELS,
  RETENTION_VALUES,
  type ServiceConfig,
} from './config-keys';
import { bool, ConfigError, hostList, int, isLogLevel, isPlaceholderUrl, originList, str } from './config-values';
import { ProfileSettingError, type ResolvedProfile, resolveProfileSetting } from './provider-profile';

export { ENVIRONMENTS, type Environment, type ServiceConfig } from './config-keys';
export { ConfigError } from './config-values';

/**
 * The defaults, for a key set neither with `-c`, nor in `cdk.json`, nor by the environment preset
 * (`env`). docs/guides/configuration.md (`npm run docs:config`) lists every key with its default,
 * per-environment value and limits.
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
  maxOpenUploads: DEFAULT_MAX_OPEN_UPLOADS,
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
export function readConfig(node: Node): ServiceConfig {
  const environment = environmentOf(node.tryGetContext('env'));
  const preset: Partial<ServiceConfig> = environment ? ENVIRONMENT_PRESETS[environment] : {};
  // An explicit key (-c or cdk.json) wins over the environment's preset, which wins over the default.
  const raw = (key: keyof ServiceConfig): unknown => node.tryGetContext(key) ?? preset[key];
  // Each key's type, range and emptiness are its spec's (lib/config-keys.ts), the reference's source too.
  const text = (key: ConfigKeyOfType<'string'>): string => {
    const spec: ContextKeySpec = CONFIG_KEY_SPECS[key];
    return str(raw(key), key, DEFAULT_CONFIG[key], spec.type === 'string' && spec.allowEmpty === true);
  };
  const flag = (key: ConfigKeyOfType<'boolean'>): boolean => bool(raw(key), key, DEFAULT_CONFIG[key]);
  const integer = (key: ConfigKeyOfType<'integer'>): number => {
    const { min, max } = CONFIG_KEY_SPECS[key];
    return int(raw(key), key, DEFAULT_CONFIG[key], min, max);
  };
  const localstack = flag('localstack');
  const logRetentionDays = integer('logRetentionDays');
  if (!RETENTION_VALUES.has(logRetentionDays)) {
    throw new ConfigError(`logRetentionDays must be one of ${[...RETENTION_VALUES].join(', ')}`);
  }
  const logLevel = str(raw('logLevel'), 'logLevel', DEFAULT_CONFIG.logLevel).toUpperCase();
  if (!isLogLevel(logLevel)) throw new ConfigError(`logLevel must be one of ${LOG_LEVELS.join(', ')}`);
  const providerBaseUrl = text('providerBaseUrl');
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
    stackName: text('stackName'),
    stageName: text('stageName'),
    localstack,
    providerBaseUrl: providerBaseUrl.replace(/\/+$/, ''),
    providerProfile: text('providerProfile'),
    providerSecretName: text('providerSecretName'),
    providerRefreshIntervalSeconds: integer('providerRefreshIntervalSeconds'),
    authorizerCacheTtlSeconds: integer('authorizerCacheTtlSeconds'),
    maxPendingSeconds: integer('maxPendingSeconds'),
    mediaUrlTtlSeconds: integer('mediaUrlTtlSeconds'),
    mediaSourceHosts: hostList(text('mediaSourceHosts')),
    logRetentionDays,
    resultRetentionDays: integer('resultRetentionDays'),
    uploadMaxBytes: integer('uploadMaxBytes'),
    uploadExpiryHours: integer('uploadExpiryHours'),
    maxOpenUploads: integer('maxOpenUploads'),
    uploadCorsOrigins: originList(text('uploadCorsOrigins')),
    // A LocalStack deployment is disposable by definition: nothing is retained there.
    retainData: localstack ? false : flag('retainData'),
    throttlingRateLimit: integer('throttlingRateLimit'),
    throttlingBurstLimit: integer('throttlingBurstLimit'),
    keyRateLimit: integer('keyRateLimit'),
    keyBurstLimit: integer('keyBurstLimit'),
    keyDailyQuota: integer('keyDailyQuota'),
    maxActiveKeys: integer('maxActiveKeys'),
    maxQueuedTasksPerAccount: integer('maxQueuedTasksPerAccount'),
    wafRequestsPerIpPerMinute: integer('wafRequestsPerIpPerMinute'),
    tracing: flag('tracing'),
    logLevel,
    alarmEmail: text('alarmEmail'),
    timeoutAlarmThreshold: integer('timeoutAlarmThreshold'),
    providerErrorAlarmThreshold: integer('providerErrorAlarmThreshold'),
    apiGatewayCloudWatchRole: flag('apiGatewayCloudWatchRole'),
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
