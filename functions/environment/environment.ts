/**
 * The environment contract: every variable a function reads, with its parser and what it means. Functions
 * read the environment only through `readEnv` here (a unit test rejects `process.env` anywhere else in
 * functions/, test/unit/environment-contract.test.ts); the CDK stack sets variables by these names
 * (lib/), the local stack and the test harness build theirs with `environmentOf`, and the infra test
 * (test/infra/environment.test.ts) proves the stack sets every variable each deployed bundle reads.
 *
 * This module sits at the ground of functions/ with core: it imports nothing, so every layer may use it.
 *
 * Each variable is an exported constant of its own, not a member of one table: esbuild drops the
 * constants a bundle never imports, so the names left in a bundle are exactly the variables it reads,
 * which is what the infra test looks for. The list of them all is `environment-catalog.ts`, which no
 * function imports.
 */

/** An environment as the process holds it; `process.env` is one. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Who gives a variable its value in a deployment:
 * - `stack`: the CDK stack, for every function whose bundle reads it (test/infra checks this);
 * - `stack-when-configured`: the stack sets it only under some configuration; the code copes without;
 * - `default`: the stack never sets it, the code's default applies; the local stack and tests tune it;
 * - `local`: only the local stack and the tests; the stack must never set it;
 * - `lambda`: the Lambda runtime (or LocalStack's), never the stack;
 * - `build`: fixed in the bundle by esbuild's `define` (lib/bundle-options.ts); read at run time
 *   elsewhere. Its read sites spell `process.env.<NAME>` literally, the one form `define` replaces (a
 *   function call here would keep the code the define is meant to drop: esbuild does not inline calls).
 */
export type SetBy = 'stack' | 'stack-when-configured' | 'default' | 'local' | 'lambda' | 'build';

/** One variable of the contract: its name, how its text becomes a value, and back. */
export interface EnvVar<T> {
  readonly name: string;
  readonly setBy: SetBy;
  /** @throws Error saying what is wrong with `text` (the caller adds the variable's name) */
  readonly parse: (text: string) => T;
  /** The text that parses to `value` (what `environmentOf` writes). */
  readonly format: (value: T) => string;
}

interface Parser<T> {
  parse: (text: string) => T;
  format: (value: T) => string;
}

/** Any non-empty text. */
const text: Parser<string> = { parse: (value) => value, format: (value) => value };

/** An integer within bounds (inclusive). */
/* @__NO_SIDE_EFFECTS__ */
function integer(min: number, max: number = Number.MAX_SAFE_INTEGER): Parser<number> {
  return {
    parse: (value) => {
      const parsed = Number(value);
      if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
        throw new Error(`must be a whole number from ${min} to ${max}`);
      }
      return parsed;
    },
    format: String,
  };
}

/** A finite number, fractions allowed (seconds), at least `min`. */
/* @__NO_SIDE_EFFECTS__ */
function decimal(min: number): Parser<number> {
  return {
    parse: (value) => {
      const parsed = Number(value);
      if (value.trim() === '' || !Number.isFinite(parsed) || parsed < min) {
        throw new Error(`must be a number of at least ${min}`);
      }
      return parsed;
    },
    format: String,
  };
}

/** An absolute http(s) URL, kept as written. */
const url: Parser<string> = {
  parse: (value) => {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new Error('must be an absolute URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('must be an http(s) URL');
    return value;
  },
  format: (value) => value,
};

/** One of a few words; letter case ignored, the value is the listed spelling. */
/* @__NO_SIDE_EFFECTS__ */
function oneOf<const T extends string>(values: readonly T[]): Parser<T> {
  return {
    parse: (value) => {
      const found = values.find((candidate) => candidate === value.trim().toLowerCase());
      if (found === undefined) throw new Error(`must be one of ${values.join(', ')}`);
      return found;
    },
    format: (value) => value,
  };
}

/** `true` or `false`. */
const flag: Parser<boolean> = {
  parse: (value) => {
    if (value === 'true') return true;
    if (value === 'false') return false;
    throw new Error('must be true or false');
  },
  format: String,
};

/** Comma-separated entries, blanks dropped. */
const list: Parser<readonly string[]> = {
  parse: (value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0),
  format: (value) => value.join(','),
};

/* @__NO_SIDE_EFFECTS__ */
/** The meaning of a variable is its constant's TSDoc, not a string: it would cost every bundle bytes. */
function variable<T>(name: string, setBy: SetBy, parser: Parser<T>): EnvVar<T> {
  return { name, setBy, parse: parser.parse, format: parser.format };
}

/**
 * The variable's value, or `undefined` when it is unset or empty (an empty value means unset, as
 * CloudFormation cannot set an empty one reliably and shells do `X= command`).
 * @throws Error naming the variable when its text does not parse
 */
export function readEnv<T>(variable: EnvVar<T>, env: Env = process.env): T | undefined {
  const value = env[variable.name];
  if (value === undefined || value === '') return undefined;
  try {
    return variable.parse(value);
  } catch (error) {
    throw new Error(`${variable.name} ${(error as Error).message}, got "${value}"`);
  }
}

/** One variable with the value to give it; `undefined` leaves it unset. */
export interface EnvSetting {
  readonly name: string;
  readonly text: string | undefined;
}

/**
 * A typed setting for `environmentOf`. The text is parsed back at once, so a value the functions would
 * refuse fails here, where it was written, not in a handler later.
 * @throws Error naming the variable when `value` is outside what its parser accepts
 */
export function setting<T>(variable: EnvVar<T>, value: T | undefined): EnvSetting {
  if (value === undefined) return { name: variable.name, text: undefined };
  const text = variable.format(value);
  readEnv(variable, { [variable.name]: text });
  return { name: variable.name, text };
}

/** The environment (name to text) of typed settings, for the local stack and the test harness. */
export function environmentOf(...settings: readonly EnvSetting[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { name, text } of settings) {
    if (text !== undefined) env[name] = text;
  }
  return env;
}

// --- the variables --------------------------------------------------------------------------------
// `/* @__PURE__ */` (and `@__NO_SIDE_EFFECTS__` on the parser factories, whose calls are the
// arguments) lets esbuild drop the variables a bundle does not use.

/** The DynamoDB table of the service (single-table design). */
export const TABLE_NAME = /* @__PURE__ */ variable('TABLE_NAME', 'stack', text);

/** Where DynamoDB is when it is not AWS's (DynamoDB Local); unset deployed. */
export const DYNAMODB_ENDPOINT = /* @__PURE__ */ variable('DYNAMODB_ENDPOINT', 'local', url);

/** Handler log level: debug, info, warn or error (letter case ignored). */
export const LOG_LEVEL = /* @__PURE__ */ variable('LOG_LEVEL', 'stack', oneOf(['debug', 'info', 'warn', 'error']));

/** `off` silences the embedded-metric-format lines (local runs and tests); unset deployed. */
export const METRICS = /* @__PURE__ */ variable('METRICS', 'local', oneOf(['on', 'off']));

/** The origin browsers see the service at (the dashboard, CSRF checks, sign-in redirects). */
export const PUBLIC_ORIGIN = /* @__PURE__ */ variable('PUBLIC_ORIGIN', 'stack-when-configured', url);

/** The origin browsers see the service at, without trailing slashes; undefined when not configured. */
export function publicOrigin(env: Env = process.env): string | undefined {
  return readEnv(PUBLIC_ORIGIN, env)?.replace(/\/+$/, '');
}

/** The region the function runs in (Lambda sets it; `local` on this machine). */
export const AWS_REGION = /* @__PURE__ */ variable('AWS_REGION', 'lambda', text);

/** The region, as older tools name it; read when AWS_REGION is unset. */
export const AWS_DEFAULT_REGION = /* @__PURE__ */ variable('AWS_DEFAULT_REGION', 'lambda', text);

/** The execution role's access key id (Lambda sets it). */
export const AWS_ACCESS_KEY_ID = /* @__PURE__ */ variable('AWS_ACCESS_KEY_ID', 'lambda', text);

/** The execution role's secret access key (Lambda sets it). */
export const AWS_SECRET_ACCESS_KEY = /* @__PURE__ */ variable('AWS_SECRET_ACCESS_KEY', 'lambda', text);

/** The execution role's session token (Lambda sets it; absent with long-term keys). */
export const AWS_SESSION_TOKEN = /* @__PURE__ */ variable('AWS_SESSION_TOKEN', 'lambda', text);

/** Endpoint of every AWS service (LocalStack's Lambda sets it); unset in AWS. */
export const AWS_ENDPOINT_URL = /* @__PURE__ */ variable('AWS_ENDPOINT_URL', 'lambda', url);

/** Endpoint of S3 only (LocalStack); wins over AWS_ENDPOINT_URL. */
export const AWS_ENDPOINT_URL_S3 = /* @__PURE__ */ variable('AWS_ENDPOINT_URL_S3', 'lambda', url);

/** Endpoint of Secrets Manager only (LocalStack); wins over AWS_ENDPOINT_URL. */
export const AWS_ENDPOINT_URL_SECRETS_MANAGER = /* @__PURE__ */ variable(
  'AWS_ENDPOINT_URL_SECRETS_MANAGER',
  'lambda',
  url,
);

/** Endpoint of SQS only (LocalStack); wins over AWS_ENDPOINT_URL. */
export const AWS_ENDPOINT_URL_SQS = /* @__PURE__ */ variable('AWS_ENDPOINT_URL_SQS', 'lambda', url);

/** The Lambda runtime API's host:port; result and webhook downloads may never go there. */
export const AWS_LAMBDA_RUNTIME_API = /* @__PURE__ */ variable('AWS_LAMBDA_RUNTIME_API', 'lambda', text);

/** The X-Ray trace header of the invocation (Lambda sets it); logs carry its Root id. */
export const _X_AMZN_TRACE_ID = /* @__PURE__ */ variable('_X_AMZN_TRACE_ID', 'lambda', text);

/** The upstream provider's API base URL (functions that talk to the provider). */
export const PROVIDER_BASE_URL = /* @__PURE__ */ variable('PROVIDER_BASE_URL', 'stack', url);

/** The Secrets Manager secret holding the provider API key (deployed). */
export const PROVIDER_SECRET_ARN = /* @__PURE__ */ variable('PROVIDER_SECRET_ARN', 'stack', text);

/** The provider API key itself (local stack and tests; deployed it comes from PROVIDER_SECRET_ARN). */
export const PROVIDER_API_KEY = /* @__PURE__ */ variable('PROVIDER_API_KEY', 'local', text);

/** Milliseconds a provider request may take (default 5000). */
export const PROVIDER_TIMEOUT_MS = /* @__PURE__ */ variable('PROVIDER_TIMEOUT_MS', 'default', integer(1));

/** How many times a task is sent to the provider before it fails (default in core/lifecycle.ts). */
export const PROVIDER_MAX_SEND_ATTEMPTS = /* @__PURE__ */ variable(
  'PROVIDER_MAX_SEND_ATTEMPTS',
  'default',
  integer(1, 100),
);

/** Minimum seconds between provider queries for one task. */
export const PROVIDER_REFRESH_INTERVAL_SECONDS = /* @__PURE__ */ variable(
  'PROVIDER_REFRESH_INTERVAL_SECONDS',
  'stack',
  decimal(0),
);

/** Age in seconds at which a pending task fails with TIMEOUT. */
export const MAX_PENDING_SECONDS = /* @__PURE__ */ variable('MAX_PENDING_SECONDS', 'stack', decimal(0));

/** Minimum seconds between callback-triggered provider reads of one task (default 1). */
export const PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS = /* @__PURE__ */ variable(
  'PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS',
  'default',
  decimal(0),
);

/** The public origin the provider calls back to; unset (LocalStack mode), tasks go without a callback. */
export const PROVIDER_CALLBACK_BASE_URL = /* @__PURE__ */ variable(
  'PROVIDER_CALLBACK_BASE_URL',
  'stack-when-configured',
  url,
);

/** The upstream's create rate the dispatcher keeps to, `<requests>/<seconds>` (core/provider-capacity.ts). */
export const PROVIDER_CREATE_RATE_LIMIT = /* @__PURE__ */ variable(
  'PROVIDER_CREATE_RATE_LIMIT',
  'stack-when-configured',
  text,
);

/** The upstream's cap on our tasks in flight (sent, not finished): the dispatcher and every finisher. */
export const PROVIDER_MAX_IN_FLIGHT = /* @__PURE__ */ variable(
  'PROVIDER_MAX_IN_FLIGHT',
  'stack-when-configured',
  integer(1, 1_000_000),
);

/** Tasks one account may have queued for the provider (default 1000, core/queue-bound.ts); then 429 Queue full. */
export const MAX_QUEUED_TASKS_PER_ACCOUNT = /* @__PURE__ */ variable(
  'MAX_QUEUED_TASKS_PER_ACCOUNT',
  'stack',
  integer(1, 10_000),
);

/** The dispatcher's SQS queue of delayed wake-ups (deployed); unset locally, where a loop waits instead. */
export const DISPATCH_WAKE_QUEUE_URL = /* @__PURE__ */ variable('DISPATCH_WAKE_QUEUE_URL', 'stack', url);

/** The Secrets Manager secret that signs provider callback URLs (deployed). */
export const PROVIDER_CALLBACK_SECRET_ARN = /* @__PURE__ */ variable('PROVIDER_CALLBACK_SECRET_ARN', 'stack', text);

/** The callback signing secret itself (local stack and tests). */
export const PROVIDER_CALLBACK_SECRET = /* @__PURE__ */ variable('PROVIDER_CALLBACK_SECRET', 'local', text);

/** The S3 bucket results are copied into (deployed). */
export const MEDIA_BUCKET = /* @__PURE__ */ variable('MEDIA_BUCKET', 'stack', text);

/** Lifetime in seconds of the signed result URLs (default one hour). */
export const MEDIA_URL_TTL_SECONDS = /* @__PURE__ */ variable(
  'MEDIA_URL_TTL_SECONDS',
  'stack-when-configured',
  integer(1),
);

/** Milliseconds one result copy may take (defaults differ: API functions and the media worker). */
export const MEDIA_COPY_TIMEOUT_MS = /* @__PURE__ */ variable('MEDIA_COPY_TIMEOUT_MS', 'default', integer(1));

/** Seconds after which the sweeper copies results the media worker has not (default 300). */
export const MEDIA_COPY_STALE_SECONDS = /* @__PURE__ */ variable('MEDIA_COPY_STALE_SECONDS', 'default', decimal(0));

/** The directory results are stored in when there is no bucket (local stack and tests). */
export const MEDIA_DIR = /* @__PURE__ */ variable('MEDIA_DIR', 'local', text);

/** The address MEDIA_DIR is served at; result URLs start with it (local stack and tests). */
export const MEDIA_BASE_URL = /* @__PURE__ */ variable('MEDIA_BASE_URL', 'local', url);

/** Host names results may be downloaded from, comma-separated (unset: any public host). */
export const MEDIA_SOURCE_HOSTS = /* @__PURE__ */ variable('MEDIA_SOURCE_HOSTS', 'stack-when-configured', list);

/** Exact origins results may be downloaded from over plain http (the local mock provider); never deployed. */
export const MEDIA_SOURCE_INSECURE_ORIGINS = /* @__PURE__ */ variable('MEDIA_SOURCE_INSECURE_ORIGINS', 'local', text);

/** Days the media bucket keeps results (its lifecycle rule), so tasks can say until when. */
export const RESULT_RETENTION_DAYS = /* @__PURE__ */ variable('RESULT_RETENTION_DAYS', 'stack', integer(1));

/** The bucket callers' uploads go to (the media bucket's `uploads/` prefix deployed; the local stand-in). */
export const UPLOADS_BUCKET = /* @__PURE__ */ variable('UPLOADS_BUCKET', 'stack', text);

/** Where the uploads bucket is when it is not AWS's S3: the local gateway's S3 stand-in; unset deployed. */
export const UPLOADS_S3_ENDPOINT = /* @__PURE__ */ variable('UPLOADS_S3_ENDPOINT', 'local', url);

/** The largest upload in bytes (the stack's `uploadMaxBytes`; default 20 MB, core/uploads.ts). */
export const UPLOAD_MAX_BYTES = /* @__PURE__ */ variable('UPLOAD_MAX_BYTES', 'stack', integer(1));

/** Seconds an upload's record and reference live (the stack's `uploadExpiryHours`; default 24 hours). */
export const UPLOAD_TTL_SECONDS = /* @__PURE__ */ variable('UPLOAD_TTL_SECONDS', 'stack', integer(1));

/** The provider profile: mock, kie (a custom one comes as PROVIDER_PROFILE_JSON). */
export const PROVIDER_PROFILE = /* @__PURE__ */ variable('PROVIDER_PROFILE', 'build', text);

/** A custom provider profile as JSON (fixed in the bundle: too large for the environment). */
export const PROVIDER_PROFILE_JSON = /* @__PURE__ */ variable('PROVIDER_PROFILE_JSON', 'build', text);

/** `off`: the function only creates provider tasks, and the bundle drops the state-reading code. */
export const PROVIDER_READS = /* @__PURE__ */ variable('PROVIDER_READS', 'build', oneOf(['on', 'off']));

/** `true`: handlers check credentials themselves (LocalStack, which runs no Lambda authorizer). */
export const INLINE_AUTHORIZER = /* @__PURE__ */ variable('INLINE_AUTHORIZER', 'build', flag);

/** Exact origins webhooks may go to over plain http (a local receiver); fixed empty in every bundle. */
export const WEBHOOK_INSECURE_ORIGINS = /* @__PURE__ */ variable('WEBHOOK_INSECURE_ORIGINS', 'build', text);

/** The Secrets Manager secret whose key seals accounts' webhook secrets (deployed). */
export const WEBHOOK_SECRETS_KEY_ARN = /* @__PURE__ */ variable('WEBHOOK_SECRETS_KEY_ARN', 'stack', text);

/** The webhook sealing key itself (local stack, the CLI and tests). */
export const WEBHOOK_SECRETS_KEY = /* @__PURE__ */ variable('WEBHOOK_SECRETS_KEY', 'local', text);

/** Seconds between webhook attempts, comma-separated (default: the deployed schedule). */
export const WEBHOOK_RETRY_DELAYS_SECONDS = /* @__PURE__ */ variable('WEBHOOK_RETRY_DELAYS_SECONDS', 'default', text);

/** Open webhook deliveries one account may have at once (default 100); past it a delivery fails unsent. */
export const WEBHOOK_MAX_OPEN_DELIVERIES = /* @__PURE__ */ variable(
  'WEBHOOK_MAX_OPEN_DELIVERIES',
  'default',
  integer(1, 100_000),
);

/** The name of the deployment's default usage plan (key creation enrolls keys in it). */
export const USAGE_PLAN_NAME = /* @__PURE__ */ variable('USAGE_PLAN_NAME', 'stack-when-configured', text);

/** The most active API keys one account may hold (the stack's `maxActiveKeys`; default 20, store/key-count.ts). */
export const MAX_ACTIVE_KEYS = /* @__PURE__ */ variable('MAX_ACTIVE_KEYS', 'stack', integer(1, 1000));

/** The default usage plan's id (the operator CLI, from the stack output). */
export const USAGE_PLAN_ID = /* @__PURE__ */ variable('USAGE_PLAN_ID', 'local', text);

/** The REST API's id, for per-account usage plans (the operator CLI). */
export const REST_API_ID = /* @__PURE__ */ variable('REST_API_ID', 'local', text);

/** The REST API's stage, for per-account usage plans (the operator CLI). */
export const STAGE_NAME = /* @__PURE__ */ variable('STAGE_NAME', 'local', text);

/** The secret CloudFront sends as a header, proving a viewer address came through it. */
export const ORIGIN_VERIFY_SECRET_ARN = /* @__PURE__ */ variable(
  'ORIGIN_VERIFY_SECRET_ARN',
  'stack-when-configured',
  text,
);

/** Seconds a dashboard session lives without use (default in core/session.ts). */
export const SESSION_IDLE_SECONDS = /* @__PURE__ */ variable('SESSION_IDLE_SECONDS', 'default', integer(1));

/** Seconds a dashboard session lives at most (default in core/session.ts). */
export const SESSION_ABSOLUTE_SECONDS = /* @__PURE__ */ variable('SESSION_ABSOLUTE_SECONDS', 'default', integer(1));

/** The OpenID provider dashboard sign-in goes through (Cognito deployed). */
export const OIDC_ISSUER = /* @__PURE__ */ variable('OIDC_ISSUER', 'stack-when-configured', url);

/** The service's OpenID client id. */
export const OIDC_CLIENT_ID = /* @__PURE__ */ variable('OIDC_CLIENT_ID', 'stack-when-configured', text);

/** The Secrets Manager secret holding the OpenID client secret (deployed). */
export const OIDC_CLIENT_SECRET_ARN = /* @__PURE__ */ variable('OIDC_CLIENT_SECRET_ARN', 'stack-when-configured', text);

/** The OpenID client secret itself (local stack and tests). */
export const OIDC_CLIENT_SECRET = /* @__PURE__ */ variable('OIDC_CLIENT_SECRET', 'local', text);
