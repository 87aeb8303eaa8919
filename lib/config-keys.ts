/**
 * The context keys of the stack (`cdk.json` "context", or `-c key=value`): the configuration's shape
 * (`ServiceConfig`) and, for each key, the values it takes and what it means (`CONFIG_KEY_SPECS`). The
 * specs are the one source of both: lib/config.ts checks values against them, and the configuration
 * reference (docs/guides/configuration.md, `npm run docs:config`) is generated from them.
 */
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { MAX_TEMPORARY_CREDENTIALS_URL_SECONDS } from '../functions/aws/signer';
import { MAX_QUEUED_TASKS_PER_ACCOUNT_LIMIT } from '../functions/core/queue-bound';
import { MAX_BURST, MAX_DAILY_QUOTA, MAX_RATE_PER_SECOND } from '../functions/core/rate-plan';

/** The log levels `logLevel` takes (every function's `LOG_LEVEL`). */
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;

/** The retentions CloudWatch Logs offers, in days (`logRetentionDays` must be one). */
export const RETENTION_VALUES = new Set<number>(
  Object.values(RetentionDays).filter((value): value is number => typeof value === 'number'),
);

/** The context keys the stack reads (besides `env`); each key's meaning is its `CONFIG_KEY_SPECS` entry. */
export interface ServiceConfig {
  stackName: string;
  stageName: string;
  localstack: boolean;
  providerBaseUrl: string;
  providerProfile: string;
  providerSecretName: string;
  providerRefreshIntervalSeconds: number;
  authorizerCacheTtlSeconds: number;
  maxPendingSeconds: number;
  mediaUrlTtlSeconds: number;
  mediaSourceHosts: string;
  logRetentionDays: RetentionDays;
  resultRetentionDays: number;
  uploadMaxBytes: number;
  uploadExpiryHours: number;
  maxOpenUploads: number;
  uploadCorsOrigins: string;
  retainData: boolean;
  throttlingRateLimit: number;
  throttlingBurstLimit: number;
  keyRateLimit: number;
  keyBurstLimit: number;
  keyDailyQuota: number;
  maxActiveKeys: number;
  maxQueuedTasksPerAccount: number;
  wafRequestsPerIpPerMinute: number;
  tracing: boolean;
  logLevel: (typeof LOG_LEVELS)[number];
  alarmEmail: string;
  timeoutAlarmThreshold: number;
  providerErrorAlarmThreshold: number;
  apiGatewayCloudWatchRole: boolean;
}

/**
 * What a context key takes, and what it means (`doc`, a sentence or more, for the reference). Integers
 * are checked against `min` and `max`; `values`, when given, says in words what the checks accept.
 */
export type ContextKeySpec =
  | { readonly type: 'string'; readonly allowEmpty?: boolean; readonly values?: string; readonly doc: string }
  | { readonly type: 'boolean'; readonly doc: string }
  | {
      readonly type: 'integer';
      readonly min: number;
      readonly max: number;
      readonly values?: string;
      readonly doc: string;
    }
  | { readonly type: 'choice'; readonly choices: readonly string[]; readonly doc: string };

/** Every key of `ServiceConfig`: its values and meaning. readConfig (lib/config.ts) checks by these. */
export const CONFIG_KEY_SPECS = {
  stackName: {
    type: 'string',
    doc: 'CloudFormation stack name, so several copies (dev, prod) can live in one account.',
  },
  stageName: {
    type: 'string',
    doc: 'API Gateway stage name; it is the first path segment of the API URL.',
  },
  localstack: {
    type: 'boolean',
    doc: "Deploy to LocalStack's free edition. Routes get no Lambda authorizer (LocalStack runs none) and the route functions authorize inline (`INLINE_AUTHORIZER=true`); the API Gateway CloudWatch role is skipped; data is never retained. Never set it for AWS.",
  },
  providerBaseUrl: {
    type: 'string',
    values: 'an http(s) URL, not the shipped `.invalid` placeholder',
    doc: "Base URL of the upstream generation provider's HTTP API (https in AWS).",
  },
  providerProfile: {
    type: 'string',
    values: '`kie`, `mock`, or the path of a JSON profile',
    doc: 'How the upstream names the models and shapes their input (docs/guides/provider.md): a shipped profile (`kie`, `mock` for the local mock provider) or the path of a JSON profile for another upstream (relative to the working directory). Validated at synth, so a bad profile stops it with a message naming the model and the field.',
  },
  providerSecretName: {
    type: 'string',
    allowEmpty: true,
    doc: 'Name of an existing Secrets Manager secret that holds the provider API key. Empty (the default): the stack creates the secret with a random placeholder value that the operator overwrites with `aws secretsmanager put-secret-value`. The key itself is never in code or context.',
  },
  providerRefreshIntervalSeconds: {
    type: 'integer',
    min: 1,
    max: 3600,
    doc: 'Minimum time between two provider queries for one task.',
  },
  authorizerCacheTtlSeconds: {
    type: 'integer',
    min: 0,
    max: 3600,
    doc: 'API Gateway authorizer result cache; must be 0 (off) while the only identity source is the caller address (see lib/event-lambdas.ts).',
  },
  maxPendingSeconds: {
    type: 'integer',
    min: 60,
    max: 86400,
    doc: 'Age at which a pending task fails with `TIMEOUT` and is refunded.',
  },
  mediaUrlTtlSeconds: {
    type: 'integer',
    min: 60,
    max: MAX_TEMPORARY_CREDENTIALS_URL_SECONDS,
    doc: "Lifetime of the signed result URLs returned by the API, 60 to 3600. The functions sign with their role's temporary credentials, and such a URL dies with the role session whatever its own expiry says, so longer lifetimes would be promises the URL may not keep.",
  },
  mediaSourceHosts: {
    type: 'string',
    allowEmpty: true,
    values: 'comma-separated host names or `*.domain`',
    doc: "Comma-separated host names the provider's result URLs may point at (`cdn.provider.example`, or `*.provider.example` for any subdomain). Empty (the default): any public host. Either way only https to public addresses is fetched (see docs/design/security.md).",
  },
  logRetentionDays: {
    type: 'integer',
    min: 1,
    max: 9999,
    values: `days, one of ${[...RETENTION_VALUES].join(', ')}`,
    doc: 'Retention of the Lambda and API access log groups (a CloudWatch value).',
  },
  resultRetentionDays: {
    type: 'integer',
    min: 1,
    max: 36500,
    doc: 'Result files in the media bucket expire after this many days.',
  },
  uploadMaxBytes: {
    type: 'integer',
    min: 1,
    max: 100 * 1024 * 1024,
    doc: 'The largest reference image a caller may upload (POST /api/ai/uploads).',
  },
  uploadExpiryHours: {
    type: 'integer',
    min: 1,
    max: 24 * 7,
    doc: "An upload's record and reference expire after this long; the bucket's lifecycle rule deletes its file after the same time rounded up to whole days (S3 expires by the day).",
  },
  maxOpenUploads: {
    type: 'integer',
    min: 1,
    max: 100_000,
    doc: 'The most open uploads (POST /api/ai/uploads, not yet expired) one account may hold; past it 429 (an account also needs a positive balance to upload).',
  },
  uploadCorsOrigins: {
    type: 'string',
    allowEmpty: true,
    values: 'comma-separated https origins (`https://host[:port]`)',
    doc: "Comma-separated origins (`https://app.example.com`) whose pages may POST uploads to the bucket from a browser (the dashboard's). Empty: no CORS rule (API clients need none).",
  },
  retainData: {
    type: 'boolean',
    doc: 'Keep the table, the bucket and the secret when the stack is deleted, and turn on DynamoDB deletion protection. True in production; false for throwaway stacks (and LocalStack).',
  },
  throttlingRateLimit: {
    type: 'integer',
    min: 1,
    max: 1_000_000,
    doc: 'Stage-wide steady-state request rate (requests per second), for everybody together (authenticated or not). Keep it well above what the busy accounts use together, or one flood pushes paying callers into 429s (docs/design/rate-limits.md).',
  },
  throttlingBurstLimit: {
    type: 'integer',
    min: 1,
    max: 1_000_000,
    doc: 'Stage-wide burst capacity (requests).',
  },
  keyRateLimit: {
    type: 'integer',
    min: 1,
    max: MAX_RATE_PER_SECOND,
    doc: "The default plan's steady rate per API key (whole requests per second).",
  },
  keyBurstLimit: {
    type: 'integer',
    min: 1,
    max: MAX_BURST,
    doc: "The default plan's burst per API key (requests at once).",
  },
  keyDailyQuota: {
    type: 'integer',
    min: 0,
    max: MAX_DAILY_QUOTA,
    doc: "The default plan's requests per API key and UTC day; 0 for no quota.",
  },
  maxActiveKeys: {
    type: 'integer',
    min: 1,
    max: 1000,
    doc: 'The most active API keys one account may hold (each has a rate bucket of its own).',
  },
  maxQueuedTasksPerAccount: {
    type: 'integer',
    min: 1,
    max: MAX_QUEUED_TASKS_PER_ACCOUNT_LIMIT,
    doc: "The most tasks one account may have queued for the provider; past it a submit answers 429 `Queue full` (docs/design/dispatching.md). 1 to 10000: each submit counts the account's queue entries up to this many.",
  },
  wafRequestsPerIpPerMinute: {
    type: 'integer',
    min: 0,
    max: 2_000_000_000,
    doc: 'The web ACL in front of the stage blocks (429) an address sending more than this many requests in a minute, before they count against the stage limit; 0 for no web ACL.',
  },
  tracing: {
    type: 'boolean',
    doc: 'AWS X-Ray active tracing on every function and on the API stage (costs per trace); the trace id then appears in every log line. Off by default.',
  },
  logLevel: {
    type: 'choice',
    choices: LOG_LEVELS,
    doc: '`LOG_LEVEL` of every function (DEBUG, INFO, WARN, ERROR).',
  },
  alarmEmail: {
    type: 'string',
    allowEmpty: true,
    values: 'an e-mail address, or empty',
    doc: 'When set, alarms notify an SNS topic with this e-mail subscribed.',
  },
  timeoutAlarmThreshold: {
    type: 'integer',
    min: 1,
    max: 1_000_000,
    doc: 'Tasks failed with `TIMEOUT` within 15 minutes that raise the alarm.',
  },
  providerErrorAlarmThreshold: {
    type: 'integer',
    min: 1,
    max: 1_000_000,
    doc: 'Provider call failures within 5 minutes that raise the alarm.',
  },
  apiGatewayCloudWatchRole: {
    type: 'boolean',
    doc: 'Create the account-wide (per region) role API Gateway needs to write access and execution logs. Set false when the account already has one configured, which is the case when another stack in this region manages it.',
  },
} as const satisfies Record<keyof ServiceConfig, ContextKeySpec>;

/** The keys whose spec has `type` T. */
export type ConfigKeyOfType<T extends ContextKeySpec['type']> = {
  [K in keyof typeof CONFIG_KEY_SPECS]: (typeof CONFIG_KEY_SPECS)[K]['type'] extends T ? K : never;
}[keyof typeof CONFIG_KEY_SPECS];

/** The environments `-c env=...` selects. */
export const ENVIRONMENTS = ['dev', 'prod'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** A context key read outside `ServiceConfig`, documented for the reference: its values, default and meaning. */
export interface OtherContextKey {
  readonly values: string;
  readonly default: string;
  readonly doc: string;
}

/**
 * The context keys read besides `ServiceConfig`'s: the environment preset (lib/config.ts) and the
 * provider capacity and backoff bound (lib/constructs/dispatch.ts `dispatchCapacityFromContext`).
 */
export const OTHER_CONTEXT_KEYS = {
  env: {
    values: `${ENVIRONMENTS.join(', ')}, or unset`,
    default: 'unset (cdk.json: prod)',
    doc: 'The environment preset: what it changes from the defaults is in the preset columns. A key given with `-c` or in cdk.json still wins over the preset.',
  },
  providerCreateRateLimit: {
    values: '`<requests>/<seconds>`, e.g. `20/10`',
    default: "the provider profile's declared capacity",
    doc: "The upstream's create rate the dispatcher keeps to (PROVIDER_CREATE_RATE_LIMIT of the dispatcher). Checked at synth, with providerMaxInFlight: refused when the dispatcher's capacity item could pass 300 KB (about 56 bytes per request, 128 per task in flight; docs/design/dispatching.md#scale).",
  },
  providerMaxInFlight: {
    values: 'a whole number from 1',
    default: "the provider profile's declared capacity (none: no cap)",
    doc: "The upstream's cap on the service's tasks in flight (sent, not finished), kept by the dispatcher and every function that finishes tasks (PROVIDER_MAX_IN_FLIGHT). Checked at synth, with providerCreateRateLimit (the capacity item's 300 KB bound).",
  },
  providerMaxRetryAfterSeconds: {
    values: 'a whole number from 1 to 86400',
    default: '60 (the code default)',
    doc: 'The longest upstream `Retry-After` the dispatcher honours (PROVIDER_MAX_RETRY_AFTER_SECONDS of the dispatcher): a longer one (a maintenance page asking for an hour) is cut to it and logged. Checked at synth.',
  },
  upstreams: {
    values: 'a JSON list, or the path of a JSON file holding one',
    default: 'unset: one upstream (providerBaseUrl, providerProfile, the provider secret and capacity)',
    doc: 'More than one upstream (docs/guides/upstreams.md): each `{ name, profile, baseUrl, createRateLimit?, maxInFlight?, models?, priority?, secretArn? }`, tried in priority order for the models it serves. Each gets its own key secret (a new one unless `secretArn` names one) and an alarm when out for more than 3 minutes; the functions that call the provider get the list (PROVIDER_UPSTREAMS). Checked at synth: every problem names the upstream and the field.',
  },
} as const satisfies Record<string, OtherContextKey>;
