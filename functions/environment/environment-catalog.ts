/**
 * Every variable of the environment contract, for the tests, the local stack and the infra check, and
 * what each one means (`ENVIRONMENT_DOCS`, the source of the configuration reference,
 * docs/guides/configuration.md). No function imports this module: it would put every name and meaning
 * into every bundle, and the infra test reads the names left in a bundle as the variables that bundle
 * reads.
 */

import type { EnvVar, SetBy } from './environment';
import * as contract from './environment';

/** A variable of any value type (`format` left out: it takes a value of the variable's own type). */
export type AnyEnvVar = Omit<EnvVar<unknown>, 'format'>;

function isEnvVar(value: unknown): value is AnyEnvVar {
  return typeof value === 'object' && value !== null && 'name' in value && 'setBy' in value && 'parse' in value;
}

/** The contract's variables, in the order the module declares them. */
export const ENVIRONMENT: readonly AnyEnvVar[] = (Object.values(contract) as unknown[]).filter(isEnvVar);

/** The contract's variable of this name, if any. */
export function envVarNamed(name: string): AnyEnvVar | undefined {
  return ENVIRONMENT.find((variable) => variable.name === name);
}

/** The names of the contract's exports that are variables (each constant is named as its variable). */
export type ContractVariable = {
  [K in keyof typeof contract]: (typeof contract)[K] extends { readonly name: string; readonly setBy: SetBy }
    ? K
    : never;
}[keyof typeof contract];

/**
 * What each variable of the contract means, by name: the one place it is written (environment.ts keeps
 * the strings out of the bundles). Typed by the contract's exports, so a new variable without its
 * meaning here does not compile.
 */
export const ENVIRONMENT_DOCS: Readonly<Record<ContractVariable, string>> = {
  TABLE_NAME: 'The DynamoDB table of the service (single-table design).',
  DYNAMODB_ENDPOINT: "Where DynamoDB is when it is not AWS's (DynamoDB Local); unset deployed.",
  LOG_LEVEL: 'Handler log level: debug, info, warn or error (letter case ignored).',
  METRICS: '`off` silences the embedded-metric-format lines (local runs and tests); unset deployed.',
  PUBLIC_ORIGIN: 'The origin browsers see the service at (the dashboard, CSRF checks, sign-in redirects).',
  AWS_REGION: 'The region the function runs in (Lambda sets it; `local` on this machine).',
  AWS_DEFAULT_REGION: 'The region, as older tools name it; read when AWS_REGION is unset.',
  AWS_ACCESS_KEY_ID: "The execution role's access key id (Lambda sets it).",
  AWS_SECRET_ACCESS_KEY: "The execution role's secret access key (Lambda sets it).",
  AWS_SESSION_TOKEN: "The execution role's session token (Lambda sets it; absent with long-term keys).",
  AWS_ENDPOINT_URL: "Endpoint of every AWS service (LocalStack's Lambda sets it); unset in AWS.",
  AWS_ENDPOINT_URL_S3: 'Endpoint of S3 only (LocalStack); wins over AWS_ENDPOINT_URL.',
  AWS_ENDPOINT_URL_SECRETS_MANAGER: 'Endpoint of Secrets Manager only (LocalStack); wins over AWS_ENDPOINT_URL.',
  AWS_ENDPOINT_URL_SQS: 'Endpoint of SQS only (LocalStack); wins over AWS_ENDPOINT_URL.',
  AWS_LAMBDA_RUNTIME_API: "The Lambda runtime API's host:port; result and webhook downloads may never go there.",
  _X_AMZN_TRACE_ID: 'The X-Ray trace header of the invocation (Lambda sets it); logs carry its Root id.',
  PROVIDER_BASE_URL: "The upstream provider's API base URL (functions that talk to the provider).",
  PROVIDER_SECRET_ARN: 'The Secrets Manager secret holding the provider API key (deployed).',
  PROVIDER_API_KEY: 'The provider API key itself (local stack and tests; deployed it comes from PROVIDER_SECRET_ARN).',
  PROVIDER_TIMEOUT_MS: 'Milliseconds a provider request may take (default 5000).',
  PROVIDER_MAX_SEND_ATTEMPTS:
    'How many times a task is sent to the provider before it fails (default in core/lifecycle.ts).',
  PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS:
    "Seconds a task whose create's answer was lost waits for the upstream's callback before it fails PROVIDER_UNAVAILABLE, refunded (default 600, core/lifecycle.ts).",
  PROVIDER_REFRESH_INTERVAL_SECONDS: 'Minimum seconds between provider queries for one task.',
  MAX_PENDING_SECONDS: 'Age in seconds at which a pending task fails with TIMEOUT.',
  PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS:
    'Minimum seconds between callback-triggered provider reads of one task (default 1).',
  PROVIDER_CALLBACK_BASE_URL:
    'The public origin the provider calls back to; unset (LocalStack mode), tasks go without a callback.',
  PROVIDER_CREATE_RATE_LIMIT:
    "The upstream's create rate the dispatcher keeps to, `<requests>/<seconds>` (core/provider-capacity.ts).",
  PROVIDER_MAX_IN_FLIGHT:
    "The upstream's cap on our tasks in flight (sent, not finished): the dispatcher and every finisher.",
  PROVIDER_MAX_RETRY_AFTER_SECONDS:
    'The longest upstream `Retry-After` the dispatcher honours (default 60, core/retry-after.ts); a longer one is cut to it and logged.',
  PROVIDER_MAX_REFUSALS_PER_TASK:
    'Capacity refusals (503) of one task before it fails PROVIDER_UNAVAILABLE, refunded (default 5, lifecycle/dispatch.ts).',
  PROVIDER_UPSTREAMS:
    'The upstreams, a JSON list (core/upstreams.ts: name, profile, baseUrl, key, capacity, models, priority); unset: one upstream from PROVIDER_BASE_URL and the capacity settings (docs/guides/upstreams.md).',
  PROVIDER_MIN_BACKOFF_MS:
    "The dispatcher's shortest backoff in milliseconds, 10 to 60000 (default 1000, lifecycle/dispatch.ts): every dispatcher pauses this long after a failed send, and a refusal without `Retry-After` backs off this long first, doubling while refusals repeat.",
  PROVIDER_COOL_OFF_MS:
    'The first cool-off in milliseconds of an upstream of a list whose send failed, 10 to 60000 (default 5000, lifecycle/dispatch.ts), doubled while failures repeat (at most 60 s); then one send probes it.',
  MAX_QUEUED_TASKS_PER_ACCOUNT:
    'Tasks one account may have queued for the provider (default 1000, core/queue-bound.ts); then 429 Queue full.',
  DISPATCH_WAKE_QUEUE_URL:
    "The dispatcher's SQS queue of delayed wake-ups (deployed; the sweeper sends there too); locally the deployed driver's queue, unset with the loop.",
  PROVIDER_CALLBACK_SECRET_ARN: 'The Secrets Manager secret that signs provider callback URLs (deployed).',
  PROVIDER_CALLBACK_SECRET: 'The callback signing secret itself (local stack and tests).',
  MEDIA_BUCKET: 'The S3 bucket results are copied into (deployed).',
  MEDIA_URL_TTL_SECONDS: 'Lifetime in seconds of the signed result URLs (default one hour).',
  MEDIA_COPY_TIMEOUT_MS: 'Milliseconds one result copy may take (defaults differ: API functions and the media worker).',
  MEDIA_COPY_STALE_SECONDS: 'Seconds after which the sweeper copies results the media worker has not (default 300).',
  MEDIA_DIR: 'The directory results are stored in when there is no bucket (local stack and tests).',
  MEDIA_BASE_URL: 'The address MEDIA_DIR is served at; result URLs start with it (local stack and tests).',
  MEDIA_SOURCE_HOSTS: 'Host names results may be downloaded from, comma-separated (unset: any public host).',
  MEDIA_SOURCE_INSECURE_ORIGINS:
    'Exact origins results may be downloaded from over plain http (the local mock provider); never deployed.',
  RESULT_RETENTION_DAYS: 'Days the media bucket keeps results (its lifecycle rule), so tasks can say until when.',
  UPLOADS_BUCKET:
    "The bucket callers' uploads go to (the media bucket's `uploads/` prefix deployed; the local stand-in).",
  UPLOADS_S3_ENDPOINT:
    "Where the uploads bucket is when it is not AWS's S3: the local gateway's S3 stand-in; unset deployed.",
  UPLOAD_MAX_BYTES: "The largest upload in bytes (the stack's `uploadMaxBytes`; default 20 MB, core/uploads.ts).",
  UPLOAD_TTL_SECONDS:
    "Seconds an upload's record and reference live (the stack's `uploadExpiryHours`; default 24 hours).",
  MAX_OPEN_UPLOADS:
    "The most open uploads (made by POST /api/ai/uploads, not yet expired) one account may hold (the stack's `maxOpenUploads`; default 100, store/upload-quota.ts).",
  PROVIDER_PROFILE: 'The provider profile: mock, kie (a custom one comes as PROVIDER_PROFILE_JSON).',
  PROVIDER_PROFILE_JSON: 'A custom provider profile as JSON (fixed in the bundle: too large for the environment).',
  PROVIDER_READS: '`off`: the function only creates provider tasks, and the bundle drops the state-reading code.',
  INLINE_AUTHORIZER: '`true`: handlers check credentials themselves (LocalStack, which runs no Lambda authorizer).',
  WEBHOOK_INSECURE_ORIGINS:
    'Exact origins webhooks may go to over plain http (a local receiver); fixed empty in every bundle.',
  WEBHOOK_SECRETS_KEY_ARN: "The Secrets Manager secret whose key seals accounts' webhook secrets (deployed).",
  WEBHOOK_SECRETS_KEY: 'The webhook sealing key itself (local stack, the CLI and tests).',
  WEBHOOK_RETRY_DELAYS_SECONDS: 'Seconds between webhook attempts, comma-separated (default: the deployed schedule).',
  WEBHOOK_MAX_OPEN_DELIVERIES:
    'Open webhook deliveries one account may have at once (default 100); past it a delivery fails unsent.',
  WEBHOOK_MAX_ENDPOINTS: 'Webhook endpoints one account may create (POST /api/webhooks; default 10).',
  USAGE_PLAN_NAME: "The name of the deployment's default usage plan (key creation enrolls keys in it).",
  MAX_ACTIVE_KEYS:
    "The most active API keys one account may hold (the stack's `maxActiveKeys`; default 20, store/key-count.ts).",
  USAGE_PLAN_ID: "The default usage plan's id (the operator CLI, from the stack output).",
  REST_API_ID: "The REST API's id, for per-account usage plans (the operator CLI).",
  STAGE_NAME: "The REST API's stage, for per-account usage plans (the operator CLI).",
  ORIGIN_VERIFY_SECRET_ARN: 'The secret CloudFront sends as a header, proving a viewer address came through it.',
  SESSION_IDLE_SECONDS: 'Seconds a dashboard session lives without use (default in core/session.ts).',
  SESSION_ABSOLUTE_SECONDS: 'Seconds a dashboard session lives at most (default in core/session.ts).',
  OIDC_ISSUER: 'The OpenID provider dashboard sign-in goes through (Cognito deployed).',
  OIDC_CLIENT_ID: "The service's OpenID client id.",
  OIDC_CLIENT_SECRET_ARN: 'The Secrets Manager secret holding the OpenID client secret (deployed).',
  OIDC_CLIENT_SECRET: 'The OpenID client secret itself (local stack and tests).',
};

/** The meaning of the contract's variable of this name (`undefined` for a name outside the contract). */
export function envVarDoc(name: string): string | undefined {
  return (ENVIRONMENT_DOCS as Readonly<Record<string, string>>)[name];
}

/** Who gives a variable its value in a deployment, as the configuration reference says it (see `SetBy`). */
export const SET_BY_DOCS: Readonly<Record<SetBy, string>> = {
  stack: 'the stack, for every function whose bundle reads it',
  'stack-when-configured': 'the stack, when the deployment is configured for it',
  default: "nobody deployed: the code's default applies (the local stack and tests tune it)",
  local: 'the local stack, the operator CLI and the tests only; never deployed',
  lambda: 'the Lambda runtime (or LocalStack), never the stack',
  build: 'fixed in the bundle at build time (esbuild `define`)',
};
