/**
 * The environment contract: every variable a function reads, with its parser (what it means is in
 * environment-catalog.ts, `ENVIRONMENT_DOCS`). Functions
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
/** The meaning of a variable is its entry in ENVIRONMENT_DOCS, not a string here: it would cost every bundle bytes. */
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
// arguments) lets esbuild drop the variables a bundle does not use. What each variable means is its
// entry in `ENVIRONMENT_DOCS` (environment-catalog.ts), the one place it is written: a string here
// would cost every bundle bytes, and a TSDoc comment could not feed the configuration reference
// (docs/guides/configuration.md). A constant without an entry there does not compile.

export const TABLE_NAME = /* @__PURE__ */ variable('TABLE_NAME', 'stack', text);

export const DYNAMODB_ENDPOINT = /* @__PURE__ */ variable('DYNAMODB_ENDPOINT', 'local', url);

export const LOG_LEVEL = /* @__PURE__ */ variable('LOG_LEVEL', 'stack', oneOf(['debug', 'info', 'warn', 'error']));

export const METRICS = /* @__PURE__ */ variable('METRICS', 'local', oneOf(['on', 'off']));

export const PUBLIC_ORIGIN = /* @__PURE__ */ variable('PUBLIC_ORIGIN', 'stack-when-configured', url);

/** The origin browsers see the service at, without trailing slashes; undefined when not configured. */
export function publicOrigin(env: Env = process.env): string | undefined {
  return readEnv(PUBLIC_ORIGIN, env)?.replace(/\/+$/, '');
}

export const AWS_REGION = /* @__PURE__ */ variable('AWS_REGION', 'lambda', text);

export const AWS_DEFAULT_REGION = /* @__PURE__ */ variable('AWS_DEFAULT_REGION', 'lambda', text);

export const AWS_ACCESS_KEY_ID = /* @__PURE__ */ variable('AWS_ACCESS_KEY_ID', 'lambda', text);

export const AWS_SECRET_ACCESS_KEY = /* @__PURE__ */ variable('AWS_SECRET_ACCESS_KEY', 'lambda', text);

export const AWS_SESSION_TOKEN = /* @__PURE__ */ variable('AWS_SESSION_TOKEN', 'lambda', text);

export const AWS_ENDPOINT_URL = /* @__PURE__ */ variable('AWS_ENDPOINT_URL', 'lambda', url);

export const AWS_ENDPOINT_URL_S3 = /* @__PURE__ */ variable('AWS_ENDPOINT_URL_S3', 'lambda', url);

export const AWS_ENDPOINT_URL_SECRETS_MANAGER = /* @__PURE__ */ variable(
  'AWS_ENDPOINT_URL_SECRETS_MANAGER',
  'lambda',
  url,
);

export const AWS_ENDPOINT_URL_SQS = /* @__PURE__ */ variable('AWS_ENDPOINT_URL_SQS', 'lambda', url);

export const AWS_LAMBDA_RUNTIME_API = /* @__PURE__ */ variable('AWS_LAMBDA_RUNTIME_API', 'lambda', text);

export const _X_AMZN_TRACE_ID = /* @__PURE__ */ variable('_X_AMZN_TRACE_ID', 'lambda', text);

export const PROVIDER_BASE_URL = /* @__PURE__ */ variable('PROVIDER_BASE_URL', 'stack', url);

export const PROVIDER_SECRET_ARN = /* @__PURE__ */ variable('PROVIDER_SECRET_ARN', 'stack', text);

export const PROVIDER_API_KEY = /* @__PURE__ */ variable('PROVIDER_API_KEY', 'local', text);

export const PROVIDER_TIMEOUT_MS = /* @__PURE__ */ variable('PROVIDER_TIMEOUT_MS', 'default', integer(1));

export const PROVIDER_MAX_SEND_ATTEMPTS = /* @__PURE__ */ variable(
  'PROVIDER_MAX_SEND_ATTEMPTS',
  'default',
  integer(1, 100),
);

export const PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS = /* @__PURE__ */ variable(
  'PROVIDER_UNKNOWN_OUTCOME_LIMIT_SECONDS',
  'default',
  integer(1, 86_400),
);

export const PROVIDER_REFRESH_INTERVAL_SECONDS = /* @__PURE__ */ variable(
  'PROVIDER_REFRESH_INTERVAL_SECONDS',
  'stack',
  decimal(0),
);

export const MAX_PENDING_SECONDS = /* @__PURE__ */ variable('MAX_PENDING_SECONDS', 'stack', decimal(0));

export const PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS = /* @__PURE__ */ variable(
  'PROVIDER_CALLBACK_MIN_INTERVAL_SECONDS',
  'default',
  decimal(0),
);

export const PROVIDER_CALLBACK_BASE_URL = /* @__PURE__ */ variable(
  'PROVIDER_CALLBACK_BASE_URL',
  'stack-when-configured',
  url,
);

export const PROVIDER_CREATE_RATE_LIMIT = /* @__PURE__ */ variable(
  'PROVIDER_CREATE_RATE_LIMIT',
  'stack-when-configured',
  text,
);

export const PROVIDER_MAX_IN_FLIGHT = /* @__PURE__ */ variable(
  'PROVIDER_MAX_IN_FLIGHT',
  'stack-when-configured',
  integer(1, 1_000_000),
);

export const PROVIDER_MAX_RETRY_AFTER_SECONDS = /* @__PURE__ */ variable(
  'PROVIDER_MAX_RETRY_AFTER_SECONDS',
  'stack-when-configured',
  integer(1, 86_400),
);

export const PROVIDER_MAX_REFUSALS_PER_TASK = /* @__PURE__ */ variable(
  'PROVIDER_MAX_REFUSALS_PER_TASK',
  'default',
  integer(1, 100),
);

export const PROVIDER_UPSTREAMS = /* @__PURE__ */ variable('PROVIDER_UPSTREAMS', 'stack-when-configured', text);

export const PROVIDER_MIN_BACKOFF_MS = /* @__PURE__ */ variable(
  'PROVIDER_MIN_BACKOFF_MS',
  'default',
  integer(10, 60_000),
);

export const PROVIDER_COOL_OFF_MS = /* @__PURE__ */ variable('PROVIDER_COOL_OFF_MS', 'default', integer(10, 60_000));

export const MAX_QUEUED_TASKS_PER_ACCOUNT = /* @__PURE__ */ variable(
  'MAX_QUEUED_TASKS_PER_ACCOUNT',
  'stack',
  integer(1, 10_000),
);

export const DISPATCH_WAKE_QUEUE_URL = /* @__PURE__ */ variable('DISPATCH_WAKE_QUEUE_URL', 'stack', url);

export const PROVIDER_CALLBACK_SECRET_ARN = /* @__PURE__ */ variable('PROVIDER_CALLBACK_SECRET_ARN', 'stack', text);

export const PROVIDER_CALLBACK_SECRET = /* @__PURE__ */ variable('PROVIDER_CALLBACK_SECRET', 'local', text);

export const MEDIA_BUCKET = /* @__PURE__ */ variable('MEDIA_BUCKET', 'stack', text);

export const MEDIA_URL_TTL_SECONDS = /* @__PURE__ */ variable(
  'MEDIA_URL_TTL_SECONDS',
  'stack-when-configured',
  integer(1),
);

export const MEDIA_COPY_TIMEOUT_MS = /* @__PURE__ */ variable('MEDIA_COPY_TIMEOUT_MS', 'default', integer(1));

export const MEDIA_COPY_STALE_SECONDS = /* @__PURE__ */ variable('MEDIA_COPY_STALE_SECONDS', 'default', decimal(0));

export const MEDIA_DIR = /* @__PURE__ */ variable('MEDIA_DIR', 'local', text);

export const MEDIA_BASE_URL = /* @__PURE__ */ variable('MEDIA_BASE_URL', 'local', url);

export const MEDIA_SOURCE_HOSTS = /* @__PURE__ */ variable('MEDIA_SOURCE_HOSTS', 'stack-when-configured', list);

export const MEDIA_SOURCE_INSECURE_ORIGINS = /* @__PURE__ */ variable('MEDIA_SOURCE_INSECURE_ORIGINS', 'local', text);

export const RESULT_RETENTION_DAYS = /* @__PURE__ */ variable('RESULT_RETENTION_DAYS', 'stack', integer(1));

export const UPLOADS_BUCKET = /* @__PURE__ */ variable('UPLOADS_BUCKET', 'stack', text);

export const UPLOADS_S3_ENDPOINT = /* @__PURE__ */ variable('UPLOADS_S3_ENDPOINT', 'local', url);

export const UPLOAD_MAX_BYTES = /* @__PURE__ */ variable('UPLOAD_MAX_BYTES', 'stack', integer(1));

export const UPLOAD_TTL_SECONDS = /* @__PURE__ */ variable('UPLOAD_TTL_SECONDS', 'stack', integer(1));

export const MAX_OPEN_UPLOADS = /* @__PURE__ */ variable('MAX_OPEN_UPLOADS', 'stack', integer(1, 100_000));

export const PROVIDER_PROFILE = /* @__PURE__ */ variable('PROVIDER_PROFILE', 'build', text);

export const PROVIDER_PROFILE_JSON = /* @__PURE__ */ variable('PROVIDER_PROFILE_JSON', 'build', text);

export const PROVIDER_READS = /* @__PURE__ */ variable('PROVIDER_READS', 'build', oneOf(['on', 'off']));

export const INLINE_AUTHORIZER = /* @__PURE__ */ variable('INLINE_AUTHORIZER', 'build', flag);

export const WEBHOOK_INSECURE_ORIGINS = /* @__PURE__ */ variable('WEBHOOK_INSECURE_ORIGINS', 'build', text);

export const WEBHOOK_SECRETS_KEY_ARN = /* @__PURE__ */ variable('WEBHOOK_SECRETS_KEY_ARN', 'stack', text);

export const WEBHOOK_SECRETS_KEY = /* @__PURE__ */ variable('WEBHOOK_SECRETS_KEY', 'local', text);

export const WEBHOOK_RETRY_DELAYS_SECONDS = /* @__PURE__ */ variable('WEBHOOK_RETRY_DELAYS_SECONDS', 'default', text);

export const WEBHOOK_MAX_OPEN_DELIVERIES = /* @__PURE__ */ variable(
  'WEBHOOK_MAX_OPEN_DELIVERIES',
  'default',
  integer(1, 100_000),
);

export const WEBHOOK_MAX_ENDPOINTS = /* @__PURE__ */ variable('WEBHOOK_MAX_ENDPOINTS', 'default', integer(1, 100));

export const USAGE_PLAN_NAME = /* @__PURE__ */ variable('USAGE_PLAN_NAME', 'stack-when-configured', text);

export const MAX_ACTIVE_KEYS = /* @__PURE__ */ variable('MAX_ACTIVE_KEYS', 'stack', integer(1, 1000));

export const USAGE_PLAN_ID = /* @__PURE__ */ variable('USAGE_PLAN_ID', 'local', text);

export const REST_API_ID = /* @__PURE__ */ variable('REST_API_ID', 'local', text);

export const STAGE_NAME = /* @__PURE__ */ variable('STAGE_NAME', 'local', text);

export const ORIGIN_VERIFY_SECRET_ARN = /* @__PURE__ */ variable(
  'ORIGIN_VERIFY_SECRET_ARN',
  'stack-when-configured',
  text,
);

export const SESSION_IDLE_SECONDS = /* @__PURE__ */ variable('SESSION_IDLE_SECONDS', 'default', integer(1));

export const SESSION_ABSOLUTE_SECONDS = /* @__PURE__ */ variable('SESSION_ABSOLUTE_SECONDS', 'default', integer(1));

export const OIDC_ISSUER = /* @__PURE__ */ variable('OIDC_ISSUER', 'stack-when-configured', url);

export const OIDC_CLIENT_ID = /* @__PURE__ */ variable('OIDC_CLIENT_ID', 'stack-when-configured', text);

export const OIDC_CLIENT_SECRET_ARN = /* @__PURE__ */ variable('OIDC_CLIENT_SECRET_ARN', 'stack-when-configured', text);

export const OIDC_CLIENT_SECRET = /* @__PURE__ */ variable('OIDC_CLIENT_SECRET', 'local', text);
