/**
 * Command-line parsing and validation of the operator CLI. Everything is checked here, before any
 * store call, so a bad invocation changes nothing.
 */
import { parseArgs } from 'node:util';
import { isKeyIdFormat } from '../../functions/core/api-key';
import { UsageError } from '../../functions/core/errors';
import {
  allowlistRule,
  DEFAULT_GRACE_SECONDS,
  expiryRule,
  graceRule,
  keyNameRule,
  MAX_ALLOWED_CIDRS,
  MAX_GRACE_SECONDS,
} from '../../functions/core/key-rules';
import { type RatePlan, ratePlanProblems } from '../../functions/core/rate-plan';
import { normalizeEmail } from '../../functions/core/session';

export { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS };
/** Largest single grant: far above any real grant, so a slipped finger cannot mint millions. */
export const MAX_GRANT_AMOUNT = 1_000_000_000;

export type Command =
  | { kind: 'help' }
  | { kind: 'credits grant'; userId: string; amount: number }
  | { kind: 'credits show'; userId: string }
  | { kind: 'keys create'; userId: string; name: string; allowedCidrs: string[]; expiresAt?: number }
  | { kind: 'keys list'; userId: string }
  | { kind: 'keys revoke'; keyId: string }
  | { kind: 'keys rotate'; keyId: string; graceSeconds: number }
  | { kind: 'audit'; userId?: string }
  | { kind: 'accounts invite'; email: string; userId?: string }
  | { kind: 'accounts revoke-sessions'; userId: string }
  | { kind: 'limits set'; userId: string; plan: RatePlan }
  | { kind: 'limits show'; userId: string }
  | { kind: 'limits reset'; userId: string };

export interface Invocation {
  command: Command;
  /** Talk to the deployed table (`TABLE_NAME`, normal AWS credentials) instead of the local stack. */
  aws: boolean;
}

const OPTIONS = {
  user: { type: 'string' },
  amount: { type: 'string' },
  name: { type: 'string' },
  'allow-ip': { type: 'string', multiple: true },
  'expires-at': { type: 'string' },
  'key-id': { type: 'string' },
  'grace-seconds': { type: 'string' },
  email: { type: 'string' },
  rate: { type: 'string' },
  burst: { type: 'string' },
  quota: { type: 'string' },
  aws: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type OptionName = keyof typeof OPTIONS;

/** Which options each command takes (besides the global `--aws` and `--help`), and which it requires. */
const COMMANDS: Record<Exclude<Command['kind'], 'help'>, { allowed: OptionName[]; required: OptionName[] }> = {
  'credits grant': { allowed: ['user', 'amount'], required: ['user', 'amount'] },
  'credits show': { allowed: ['user'], required: ['user'] },
  'keys create': { allowed: ['user', 'name', 'allow-ip', 'expires-at'], required: ['user', 'name'] },
  'keys list': { allowed: ['user'], required: ['user'] },
  'keys revoke': { allowed: ['key-id'], required: ['key-id'] },
  'keys rotate': { allowed: ['key-id', 'grace-seconds'], required: ['key-id'] },
  audit: { allowed: ['user'], required: [] },
  'accounts invite': { allowed: ['email', 'user'], required: ['email'] },
  'accounts revoke-sessions': { allowed: ['user'], required: ['user'] },
  'limits set': { allowed: ['user', 'rate', 'burst', 'quota'], required: ['user', 'rate', 'burst'] },
  'limits show': { allowed: ['user'], required: ['user'] },
  'limits reset': { allowed: ['user'], required: ['user'] },
};

export const HELP_LINES = [
  'Usage: npm run --silent admin -- <command> [options] [--aws]',
  '',
  'Commands:',
  '  credits grant --user U --amount N      add N credits (integer 1..1000000000); prints { userId, balance }',
  '  credits show --user U                  prints { userId, balance }',
  '  keys create --user U --name N [--allow-ip CIDR]... [--expires-at ISO]',
  '                                         issue a key; prints { keyId, apiKey, ... }: the only time the key is shown',
  '                                         --allow-ip: IPv4/IPv6 address or CIDR, repeatable (none = any address)',
  '                                         --expires-at: ISO 8601 date-time with zone, in the future (2027-01-31T00:00:00Z)',
  "  keys list --user U                     a user's keys (prefix, status, dates; never the key)",
  '  keys revoke --key-id K                 refuse the key from now on',
  `  keys rotate --key-id K [--grace-seconds N]  issue a replacement key (same user, name, allowlist, expiry);`,
  `                                         the old key keeps working for N seconds (default ${DEFAULT_GRACE_SECONDS},`,
  `                                         at most ${MAX_GRACE_SECONDS}); 0 revokes it at once (use 0 for a leaked key)`,
  '  audit [--user U]                       check balance = sum of ledger and balance >= 0; exit 1 on any failure',
  '  accounts invite --email E [--user U]   let E sign in (closed beta) as user U (default: a new id); creates the',
  '                                         account; with --aws also the Cognito user (USER_POOL_ID), who gets an e-mail',
  '  accounts revoke-sessions --user U      sign the user out everywhere at once (API keys keep working)',
  '  limits set --user U --rate R --burst B [--quota Q]',
  '                                         every key of U gets R requests/s steady, B at once, Q a UTC day (each',
  '                                         key its own bucket); with --aws USAGE_PLAN_ID, REST_API_ID, STAGE_NAME',
  "  limits show --user U                   the user's limits: its own, or the default plan (own: false)",
  '  limits reset --user U                  back to the default plan',
  '',
  'Target: the local stack by default (DynamoDB Local at http://127.0.0.1:$DYNAMODB_PORT, default 8000;',
  "table $TABLE_NAME, default 'generation-service'). --aws: the table named by TABLE_NAME (required)",
  'with the normal AWS credential chain and region.',
  'Output: one JSON object on stdout; errors as { "error": ... } on stderr, exit 2 for usage errors, 1 otherwise.',
];

const USER_ID = /^[\x21-\x7e]{1,128}$/;
const AMOUNT = /^[1-9][0-9]{0,9}$/;
const SECONDS = /^(0|[1-9][0-9]{0,7})$/;
const WHOLE = /^[1-9][0-9]{0,9}$/;

/** A whole number option of `limits set`; the plan's own rules (ranges) are checked by `assertRatePlan`. */
function whole(name: 'rate' | 'burst' | 'quota', value: string): number {
  if (!WHOLE.test(value))
    throw new UsageError(`--${name} must be a whole number of at least 1, got ${JSON.stringify(value)}`);
  return Number(value);
}

function ratePlan(rate: string, burst: string, quota: string | undefined): RatePlan {
  const plan: RatePlan = { ratePerSecond: whole('rate', rate), burst: whole('burst', burst) };
  if (quota !== undefined) plan.dailyQuota = whole('quota', quota);
  const flag = { ratePerSecond: '--rate', burst: '--burst', dailyQuota: '--quota' } as const;
  const problems = Object.entries(ratePlanProblems(plan)).map(
    ([field, problem]) => `${flag[field as keyof RatePlan]} ${problem}`,
  );
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return plan;
}

function userId(value: string): string {
  if (!USER_ID.test(value)) {
    throw new UsageError('--user must be 1 to 128 printable characters without spaces');
  }
  return value;
}

function keyName(value: string): string {
  const result = keyNameRule(value);
  if (!result.ok) throw new UsageError(`--name ${result.message}`);
  return result.value;
}

function amount(value: string): number {
  const n = AMOUNT.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= MAX_GRANT_AMOUNT)) {
    throw new UsageError(`--amount must be a whole number from 1 to ${MAX_GRANT_AMOUNT}, got ${JSON.stringify(value)}`);
  }
  return n;
}

function graceSeconds(value: string | undefined): number {
  if (value === undefined) return DEFAULT_GRACE_SECONDS;
  const result = graceRule(SECONDS.test(value) ? Number(value) : Number.NaN);
  if (!result.ok) {
    throw new UsageError(
      `--grace-seconds must be a whole number from 0 to ${MAX_GRACE_SECONDS}, got ${JSON.stringify(value)}`,
    );
  }
  return result.value;
}

function keyId(value: string): string {
  if (!isKeyIdFormat(value))
    throw new UsageError(`--key-id must look like key_xxxxxxxxxxxx, got ${JSON.stringify(value)}`);
  return value;
}

function allowedCidrs(values: string[]): string[] {
  const result = allowlistRule(values);
  if (result.ok) return result.value;
  if (result.index === undefined) throw new UsageError(`at most ${MAX_ALLOWED_CIDRS} --allow-ip entries`);
  throw new UsageError(`--allow-ip ${JSON.stringify(values[result.index])} ${result.message}`);
}

/**
 * Epoch seconds of a strict ISO 8601 date-time with a zone (`Z` or `+hh:mm`), rounded down so the key
 * never outlives the instant asked for. Must be in the future.
 */
export function expiresAt(value: string, now: Date): number {
  const result = expiryRule(value, now);
  if (!result.ok) throw new UsageError(`--expires-at ${result.message}`);
  return result.value;
}

function parseError(error: unknown): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  return new UsageError(message.replace(/\s*\n\s*/g, ' '));
}

/** Parses and validates the arguments (after `npm run admin --`). Throws UsageError on anything wrong. */
export function parseInvocation(argv: string[], now: Date): Invocation {
  const { values, positionals, tokens } = (() => {
    try {
      return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true, tokens: true });
    } catch (error) {
      throw parseError(error);
    }
  })();
  const aws = values.aws === true;
  if (values.help) return { command: { kind: 'help' }, aws };

  const kind = positionals.length === 1 ? positionals[0] : positionals.slice(0, 2).join(' ');
  if (positionals.length === 0) throw new UsageError('no command given; run with --help');
  if (!kind || !Object.hasOwn(COMMANDS, kind) || positionals.length > (kind === 'audit' ? 1 : 2)) {
    throw new UsageError(`unknown command: ${positionals.join(' ')}; run with --help`);
  }
  const spec = COMMANDS[kind as keyof typeof COMMANDS];

  const seen = new Map<string, number>();
  for (const token of tokens) {
    if (token.kind === 'option') seen.set(token.name, (seen.get(token.name) ?? 0) + 1);
  }
  for (const [name, count] of seen) {
    if (name === 'aws' || name === 'help') continue;
    if (!spec.allowed.includes(name as OptionName)) throw new UsageError(`--${name} is not an option of ${kind}`);
    if (count > 1 && name !== 'allow-ip') throw new UsageError(`--${name} given more than once`);
  }
  for (const name of spec.required) {
    if (!seen.has(name)) throw new UsageError(`${kind} requires --${name}`);
  }

  const v = values;
  const str = (name: 'user' | 'amount' | 'name' | 'expires-at' | 'key-id' | 'grace-seconds' | 'email'): string =>
    v[name] ?? '';
  let command: Command;
  switch (kind) {
    case 'credits grant':
      command = { kind, userId: userId(str('user')), amount: amount(str('amount')) };
      break;
    case 'credits show':
    case 'keys list':
      command = { kind, userId: userId(str('user')) };
      break;
    case 'keys create': {
      const created: Command = {
        kind,
        userId: userId(str('user')),
        name: keyName(str('name')),
        allowedCidrs: allowedCidrs(v['allow-ip'] ?? []),
      };
      if (v['expires-at'] !== undefined) created.expiresAt = expiresAt(v['expires-at'], now);
      command = created;
      break;
    }
    case 'keys revoke':
      command = { kind, keyId: keyId(str('key-id')) };
      break;
    case 'keys rotate':
      command = { kind, keyId: keyId(str('key-id')), graceSeconds: graceSeconds(v['grace-seconds']) };
      break;
    case 'accounts invite': {
      const email = normalizeEmail(str('email'));
      if (email === undefined)
        throw new UsageError(`--email must be an e-mail address, got ${JSON.stringify(str('email'))}`);
      command = v.user === undefined ? { kind, email } : { kind, email, userId: userId(v.user) };
      break;
    }
    case 'accounts revoke-sessions':
    case 'limits show':
    case 'limits reset':
      command = { kind, userId: userId(str('user')) };
      break;
    case 'limits set':
      command = { kind, userId: userId(str('user')), plan: ratePlan(v.rate ?? '', v.burst ?? '', v.quota) };
      break;
    default:
      command = v.user === undefined ? { kind: 'audit' } : { kind: 'audit', userId: userId(v.user) };
  }
  return { command, aws };
}
