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
 * - `build`: fixed in the bundle by esbuild's `define` (lib/generation-function.ts); read at run time
 *   elsewhere. Its read sites spell `process.env.<NAME>` literally, the one form `define` replaces (a
 *   function call here would keep the code the define is meant to drop: esbuild does not inline calls).
 */
export type SetBy = 'stack' | 'stack-when-configured' | 'default' | 'local' | 'lambda' | 'build';

/** One variable of the contract: its name, how its text becomes a value, and back. */
export interface EnvVar<T> {
  readonly name: string;
  readonly setBy: SetBy;
  /** What the variable means (the constant's TSDoc says the same to readers of the code). */
  readonly doc: string;
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

function variable<T>(name: string, setBy: SetBy, parser: Parser<T>, doc: string): EnvVar<T> {
  return { name, setBy, doc, parse: parser.parse, format: parser.format };
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

/** A typed setting for `environmentOf`. */
export function setting<T>(variable: EnvVar<T>, value: T | undefined): EnvSetting {
  return { name: variable.name, text: value === undefined ? undefined : variable.format(value) };
}

/**
 * The environment (name to text) of typed settings, for the local stack and the test harness. Each
 * value is parsed back, so a setting the functions would refuse fails here, where it was written.
 * @throws Error naming the variable when a value is outside what its parser accepts
 */
export function environmentOf(...settings: readonly EnvSetting[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { name, text } of settings) {
    if (text !== undefined) env[name] = text;
  }
  return env;
}

// --- the variables --------------------------------------------------------------------------------
// Grouped by what reads them. `/* @__PURE__ */` lets esbuild drop the ones a bundle does not use.

/** The DynamoDB table of the service (single-table design). */
export const TABLE_NAME = /* @__PURE__ */ variable(
  'TABLE_NAME',
  'stack',
  text,
  'The DynamoDB table of the service (single-table design).',
);

/** Where DynamoDB is when it is not AWS's (DynamoDB Local); unset deployed. */
export const DYNAMODB_ENDPOINT = /* @__PURE__ */ variable(
  'DYNAMODB_ENDPOINT',
  'local',
  url,
  "Where DynamoDB is when it is not AWS's (DynamoDB Local); unset deployed.",
);

/** Handler log level: debug, info, warn or error (anything else reads as info). */
export const LOG_LEVEL = /* @__PURE__ */ variable(
  'LOG_LEVEL',
  'stack',
  text,
  'Handler log level: debug, info, warn or error (anything else reads as info).',
);

/** `off` silences the embedded-metric-format lines (local runs and tests); unset deployed. */
export const METRICS = /* @__PURE__ */ variable(
  'METRICS',
  'local',
  oneOf(['on', 'off']),
  '`off` silences the embedded-metric-format lines (local runs and tests); unset deployed.',
);

/** The origin browsers see the service at (the dashboard, CSRF checks, sign-in redirects). */
export const PUBLIC_ORIGIN = /* @__PURE__ */ variable(
  'PUBLIC_ORIGIN',
  'stack-when-configured',
  url,
  'The origin browsers see the service at (the dashboard, CSRF checks, sign-in redirects).',
);

/** The origin browsers see the service at, without trailing slashes; undefined when not configured. */
export function publicOrigin(env: Env = process.env): string | undefined {
  return readEnv(PUBLIC_ORIGIN, env)?.replace(/\/+$/, '');
}
