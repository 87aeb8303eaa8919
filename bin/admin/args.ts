/**
 * Command-line parsing and validation of the operator CLI. Everything is checked here, before any
 * store call, so a bad invocation changes nothing.
 */
import { parseArgs } from 'node:util';
import { lowBalanceThresholdProblem, MAX_LOW_BALANCE_THRESHOLD } from '../../functions/core/account-events';
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
import { type SpendLimitInput, spendLimitProblem } from '../../functions/core/spend-limit';

export { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS };
/** Largest single grant: far above any real grant, so a slipped finger cannot mint millions. */
export const MAX_GRANT_AMOUNT = 1_000_000_000;

export type Command =
  | { kind: 'help'; topic?: Exclude<Command['kind'], 'help' | 'version'> }
  | { kind: 'version' }
  | { kind: 'credits grant'; userId: string; amount: number }
  | { kind: 'credits show'; userId: string }
  | { kind: 'credits usage'; userId: string; from?: string; to?: string; groupBy?: string }
  | { kind: 'credits limit'; userId: string; credits?: number | null }
  | {
      kind: 'keys create';
      userId: string;
      name: string;
      allowedCidrs: string[];
      expiresAt?: number;
      spendLimit?: SpendLimitInput;
    }
  | { kind: 'keys list'; userId: string }
  | { kind: 'keys limit'; keyId: string; spendLimit: SpendLimitInput | null }
  | { kind: 'keys revoke'; keyId: string }
  | { kind: 'keys rotate'; keyId: string; graceSeconds: number }
  | { kind: 'audit'; userId?: string }
  | { kind: 'accounts invite'; email: string; userId?: string }
  | { kind: 'accounts revoke-sessions'; userId: string }
  | { kind: 'accounts close'; userId: string }
  | { kind: 'limits set'; userId: string; plan: RatePlan }
  | { kind: 'limits show'; userId: string }
  | { kind: 'limits reset'; userId: string }
  | { kind: 'webhooks set'; userId: string; url: string }
  | { kind: 'webhooks show'; userId: string }
  | { kind: 'webhooks clear'; userId: string }
  | { kind: 'webhooks secret'; userId: string }
  | { kind: 'webhooks deliveries'; userId: string; taskId: string }
  | { kind: 'webhooks events'; userId: string }
  | { kind: 'alerts set'; userId: string; lowBalanceThreshold: number }
  | { kind: 'alerts show'; userId: string }
  | { kind: 'alerts clear'; userId: string }
  | { kind: 'upstreams show' };

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
  'spend-limit': { type: 'string' },
  per: { type: 'string' },
  none: { type: 'boolean' },
  'grace-seconds': { type: 'string' },
  email: { type: 'string' },
  rate: { type: 'string' },
  burst: { type: 'string' },
  quota: { type: 'string' },
  url: { type: 'string' },
  task: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  'group-by': { type: 'string' },
  'low-balance': { type: 'string' },
  confirm: { type: 'boolean' },
  aws: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

type OptionName = keyof typeof OPTIONS;

/** Which options each command takes (besides the global `--aws` and `--help`), and which it requires. */
const COMMANDS: Record<
  Exclude<Command['kind'], 'help' | 'version'>,
  { allowed: OptionName[]; required: OptionName[] }
> = {
  'credits grant': { allowed: ['user', 'amount'], required: ['user', 'amount'] },
  'credits show': { allowed: ['user'], required: ['user'] },
  'credits usage': { allowed: ['user', 'from', 'to', 'group-by'], required: ['user'] },
  'credits limit': { allowed: ['user', 'spend-limit', 'per', 'none'], required: ['user'] },
  'keys create': {
    allowed: ['user', 'name', 'allow-ip', 'expires-at', 'spend-limit', 'per'],
    required: ['user', 'name'],
  },
  'keys list': { allowed: ['user'], required: ['user'] },
  'keys limit': { allowed: ['key-id', 'spend-limit', 'per', 'none'], required: ['key-id'] },
  'keys revoke': { allowed: ['key-id'], required: ['key-id'] },
  'keys rotate': { allowed: ['key-id', 'grace-seconds'], required: ['key-id'] },
  audit: { allowed: ['user'], required: [] },
  'accounts invite': { allowed: ['email', 'user'], required: ['email'] },
  'accounts revoke-sessions': { allowed: ['user'], required: ['user'] },
  'accounts close': { allowed: ['user', 'confirm'], required: ['user'] },
  'limits set': { allowed: ['user', 'rate', 'burst', 'quota'], required: ['user', 'rate', 'burst'] },
  'limits show': { allowed: ['user'], required: ['user'] },
  'limits reset': { allowed: ['user'], required: ['user'] },
  'webhooks set': { allowed: ['user', 'url'], required: ['user', 'url'] },
  'webhooks show': { allowed: ['user'], required: ['user'] },
  'webhooks clear': { allowed: ['user'], required: ['user'] },
  'webhooks secret': { allowed: ['user'], required: ['user'] },
  'webhooks deliveries': { allowed: ['user', 'task'], required: ['user', 'task'] },
  'webhooks events': { allowed: ['user'], required: ['user'] },
  'alerts set': { allowed: ['user', 'low-balance'], required: ['user', 'low-balance'] },
  'alerts show': { allowed: ['user'], required: ['user'] },
  'alerts clear': { allowed: ['user'], required: ['user'] },
  'upstreams show': { allowed: [], required: [] },
};

type CommandKind = Exclude<Command['kind'], 'help' | 'version'>;

/** Each command's help: its synopsis and what it does (human-readable, printed by `--help`). */
const COMMAND_HELP: Record<CommandKind, { synopsis: string; about: string[] }> = {
  'credits grant': {
    synopsis: 'credits grant --user U --amount N',
    about: [
      `Add N credits (a whole number from 1 to ${MAX_GRANT_AMOUNT}) with a ledger entry.`,
      'Prints { userId, balance }.',
    ],
  },
  'credits show': {
    synopsis: 'credits show --user U',
    about: ['Print { userId, balance }. Exit 1 if the account does not exist (no credits, keys or invitation).'],
  },
  'credits usage': {
    synopsis: 'credits usage --user U [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--group-by day|key|model]',
    about: [
      "U's usage, as GET /api/ai/usage answers it: credits debited, refunded and net, and tasks by status.",
      'UTC days, both included (default: the last 30 days, by day; at most 366 days).',
    ],
  },
  'credits limit': {
    synopsis: 'credits limit --user U [--spend-limit N --per month | --none]',
    about: [
      "Show, set or remove (--none) U's account-wide monthly spend limit: at most N credits per UTC month",
      'over all its keys and the dashboard. Exact from the next accept on; a submit over it answers 402.',
      'Prints { userId, spendLimit: { credits, period, spent, resetsAt } | null }.',
    ],
  },
  'keys create': {
    synopsis: 'keys create --user U --name N [--allow-ip CIDR]... [--expires-at ISO] [--spend-limit N --per P]',
    about: [
      '--spend-limit N --per day|month|total: at most N credits per UTC day, UTC month, or in total.',
      'Issue a key. Prints { keyId, apiKey, ... }: the only time the key is shown.',
      '--allow-ip: an IPv4/IPv6 address or CIDR, repeatable (none: any address).',
      '--expires-at: an ISO 8601 date-time with zone, in the future (2027-01-31T00:00:00Z).',
      'With --aws also needs USAGE_PLAN_ID (the key is enrolled in its rate limit).',
    ],
  },
  'keys limit': {
    synopsis: 'keys limit --key-id K (--spend-limit N --per day|month|total | --none)',
    about: [
      "Set the key's spend limit: at most N credits per UTC day, UTC month, or in total (--none removes it).",
      'Enforced exactly in every accept from the next one on; a submit over it answers 402. Prints the key.',
    ],
  },
  'keys list': {
    synopsis: 'keys list --user U',
    about: ["A user's keys: id, name, prefix, status, dates (never the key)."],
  },
  'keys revoke': { synopsis: 'keys revoke --key-id K', about: ['Refuse the key from now on.'] },
  'keys rotate': {
    synopsis: 'keys rotate --key-id K [--grace-seconds N]',
    about: [
      'Issue a replacement key (same user, name, allowlist, expiry).',
      `The old key keeps working for N seconds (default ${DEFAULT_GRACE_SECONDS}, at most ${MAX_GRACE_SECONDS});`,
      '0 revokes it at once (use 0 for a leaked key).',
    ],
  },
  audit: {
    synopsis: 'audit [--user U]',
    about: ['Check that each balance equals the sum of its ledger and is not negative. Exit 1 on any failure.'],
  },
  'accounts invite': {
    synopsis: 'accounts invite --email E [--user U]',
    about: [
      'Let E sign in (closed beta) as user U (default: a new id); creates the account.',
      'With --aws also creates the Cognito user (USER_POOL_ID), who gets an e-mail.',
    ],
  },
  'accounts revoke-sessions': {
    synopsis: 'accounts revoke-sessions --user U',
    about: ['Sign the user out everywhere at once (API keys keep working).'],
  },
  'accounts close': {
    synopsis: 'accounts close --user U --confirm',
    about: [
      'Close U for good, as POST /api/account/close does: keys and sessions end at once (API Gateway keys given',
      'back), sign-in refused, queued tasks cancelled and refunded, ended tasks and uploads deleted with their files.',
      'The balance, ledger and audit log stay. Without --confirm nothing is done (exit 2). Run again to finish',
      'what is left (tasks still at the provider: complete is false until they end). Prints what this run did.',
      'With --aws also needs MEDIA_BUCKET and UPLOADS_BUCKET, and USAGE_PLAN_ID (stack outputs).',
    ],
  },
  'limits set': {
    synopsis: 'limits set --user U --rate R --burst B [--quota Q]',
    about: [
      'Every key of U gets R requests/s steady, B at once, Q per UTC day; each key has its own bucket.',
      'With --aws needs USAGE_PLAN_ID, REST_API_ID and STAGE_NAME (stack outputs).',
    ],
  },
  'limits show': {
    synopsis: 'limits show --user U',
    about: ["The user's limits: its own, or the default plan (own: false)."],
  },
  'limits reset': { synopsis: 'limits reset --user U', about: ['Back to the default plan.'] },
  'webhooks set': {
    synopsis: 'webhooks set --user U --url URL',
    about: [
      "Set U's default webhook endpoint, for tasks submitted without a webhookUrl.",
      'https with a public host name (the rule every webhookUrl and every delivery is judged by).',
    ],
  },
  'webhooks show': {
    synopsis: 'webhooks show --user U',
    about: ["U's default endpoint and whether it has a signing secret (never the secret)."],
  },
  'webhooks clear': {
    synopsis: 'webhooks clear --user U',
    about: ["Remove U's default endpoint (tasks' own webhookUrls still get deliveries; the secret stays)."],
  },
  'webhooks secret': {
    synopsis: 'webhooks secret --user U',
    about: [
      'Create or rotate U\'s signing secret. Prints { secret: "whsec_..." }: the only time it is shown.',
      'Every attempt from now on is signed with it, retries of earlier deliveries included.',
      'With --aws needs WEBHOOK_SECRETS_KEY_ARN (stack output WebhookSecretsKeyArn) and AWS_REGION.',
    ],
  },
  'webhooks deliveries': {
    synopsis: 'webhooks deliveries --user U --task T',
    about: [
      "Task T's webhook delivery (state, next attempt) and every attempt: time, status or error, duration.",
      'An account event is named by its id: --task evt_...',
    ],
  },
  'webhooks events': {
    synopsis: 'webhooks events --user U',
    about: [
      "U's account event deliveries (key.spend_limit.warning/reached, credits.low): id, type, state, data.",
      "Each one's attempts: webhooks deliveries --user U --task evt_...",
    ],
  },
  'alerts set': {
    synopsis: 'alerts set --user U --low-balance N',
    about: [
      `Send credits.low to U's default webhook endpoint when the balance falls below N credits (0 to ${MAX_LOW_BALANCE_THRESHOLD}),`,
      'once per crossing: again after the balance was seen at or above N (a grant re-arms it). Re-arms it now.',
    ],
  },
  'alerts show': {
    synopsis: 'alerts show --user U',
    about: ["U's { lowBalanceThreshold, lowBalanceSent }."],
  },
  'upstreams show': {
    synopsis: 'upstreams show',
    about: [
      'Each upstream the dispatcher has sent to: its state (in, out cooling off, probing), sends, refusals, failures, p50 create latency and tasks in flight (docs/guides/upstreams.md).',
      'Prints { upstreams: [...] }.',
    ],
  },
  'alerts clear': {
    synopsis: 'alerts clear --user U',
    about: ['No more credits.low for U.'],
  },
};

const TARGET_LINES = [
  'Target: the local stack by default, with the settings npm start uses: the DynamoDB Local it started',
  '(found in $DATA_DIR/local-stack.json while it runs, or for DATA_DIR=:memory: in a per-run record named by PORT;',
  'else DYNAMODB_ENDPOINT, or DYNAMODB_PORT, default 8000)',
  "and TABLE_NAME (default 'generation-service'). --aws: the table named by TABLE_NAME (required), with the",
  'normal AWS credential chain and region.',
  'A start running on the API port (PORT / PORT_BASE, default 3000) is followed even with DYNAMODB_PORT or',
  "DYNAMODB_ENDPOINT set, which must then name that start's DynamoDB: if they name another, the CLI stops",
  '(exit 2) rather than mix that start with another database; unset them, or give the PORT of the start you mean.',
  'Output: one JSON object on stdout; errors as { "error": ... } on stderr, exit 2 for usage errors, 1 otherwise.',
];

/** The help text: every command, or one command's in full. */
export function helpText(topic?: CommandKind): string {
  if (topic !== undefined) {
    const help = COMMAND_HELP[topic];
    return [
      `Usage: npm run --silent admin -- ${help.synopsis} [--aws]`,
      '',
      ...help.about,
      '',
      ...TARGET_LINES,
      '',
    ].join('\n');
  }
  const lines = Object.values(COMMAND_HELP).flatMap((help) => [`  ${help.synopsis}`, `      ${help.about[0] ?? ''}`]);
  return [
    'Usage: npm run --silent admin -- <command> [options] [--aws]',
    '       npm run --silent admin -- <command> --help   (one command in full)',
    '       npm run --silent admin -- --version',
    '',
    'Commands:',
    ...lines,
    '',
    ...TARGET_LINES,
    '',
  ].join('\n');
}

const USER_ID = /^[\x21-\x7e]{1,128}$/;
const TASK_ID = /^[\x21-\x7e]{1,256}$/;
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

/** Node's parseArgs messages, said in the CLI's words (they name Node's internals and `--x <value>`). */
function parseError(error: unknown, argv: readonly string[]): UsageError {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const option = /'(--?[a-z-]+)/i.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    // `--amount -5`: the value starts with a dash, so parseArgs took it for another option.
    const next = argv[argv.indexOf(option) + 1];
    if (next?.startsWith('-') && next !== option) {
      return new UsageError(
        `${option} needs a value, and ${JSON.stringify(next)} is not one${/^-\d/.test(next) ? ' (it must be positive)' : ''}; run with --help`,
      );
    }
    return new UsageError(`${option} needs a value; run with --help`);
  }
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option)
    return new UsageError(`unknown option ${option}; run with --help`);
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return new UsageError(`unexpected argument; run with --help`);
  return new UsageError(message.replace(/\s*\n\s*/g, ' '));
}

/** Parses and validates the arguments (after `npm run admin --`). Throws UsageError on anything wrong. */
export function parseInvocation(argv: string[], now: Date): Invocation {
  const { values, positionals, tokens } = (() => {
    try {
      return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true, tokens: true });
    } catch (error) {
      throw parseError(error, argv);
    }
  })();
  const aws = values.aws === true;
  if (values.version) return { command: { kind: 'version' }, aws };
  const named = positionals.length === 1 ? positionals[0] : positionals.slice(0, 2).join(' ');
  if (values.help) {
    const asked = named === 'account close' ? 'accounts close' : named;
    const topic = asked !== undefined && Object.hasOwn(COMMANDS, asked) ? (asked as CommandKind) : undefined;
    return { command: topic ? { kind: 'help', topic } : { kind: 'help' }, aws };
  }

  // `account close` as the issue names it; the command group is `accounts`.
  const kind = named === 'account close' ? 'accounts close' : named;
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
    if (name === 'aws' || name === 'help' || name === 'version') continue;
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
    case 'credits usage':
      // The range and grouping are judged by the rule the API uses (functions/lifecycle/usage.ts).
      command = {
        kind,
        userId: userId(str('user')),
        ...(v.from === undefined ? {} : { from: v.from }),
        ...(v.to === undefined ? {} : { to: v.to }),
        ...(v['group-by'] === undefined ? {} : { groupBy: v['group-by'] }),
      };
      break;
    case 'credits limit': {
      if (v.none && (v['spend-limit'] !== undefined || v.per !== undefined)) {
        throw new UsageError('--none removes the limit: give it alone, without --spend-limit or --per');
      }
      const limit = v.none ? null : spendLimitOption(v['spend-limit'], v.per);
      if (limit && limit.period !== 'month')
        throw new UsageError('--per must be month: the account-wide limit is monthly');
      command =
        limit === undefined
          ? { kind, userId: userId(str('user')) }
          : { kind, userId: userId(str('user')), credits: limit === null ? null : limit.credits };
      break;
    }
    case 'keys create': {
      const created: Command = {
        kind,
        userId: userId(str('user')),
        name: keyName(str('name')),
        allowedCidrs: allowedCidrs(v['allow-ip'] ?? []),
      };
      if (v['expires-at'] !== undefined) created.expiresAt = expiresAt(v['expires-at'], now);
      const limit = spendLimitOption(v['spend-limit'], v.per);
      if (limit) created.spendLimit = limit;
      command = created;
      break;
    }
    case 'keys limit': {
      if (v.none && (v['spend-limit'] !== undefined || v.per !== undefined)) {
        throw new UsageError('--none removes the limit: give it alone, without --spend-limit or --per');
      }
      const limit = v.none ? null : spendLimitOption(v['spend-limit'], v.per);
      if (limit === undefined) throw new UsageError('give --spend-limit N --per day|month|total, or --none');
      command = { kind, keyId: keyId(str('key-id')), spendLimit: limit };
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
    case 'accounts close':
      // Destructive and not undoable: the operator says so, as the API's owner types a confirmation.
      if (v.confirm !== true) {
        throw new UsageError(
          `accounts close deletes the account's tasks and uploads and ends its keys for good: add --confirm to do it`,
        );
      }
      command = { kind, userId: userId(str('user')) };
      break;
    case 'limits set':
      command = { kind, userId: userId(str('user')), plan: ratePlan(v.rate ?? '', v.burst ?? '', v.quota) };
      break;
    case 'webhooks set':
      // The URL's own rule runs in the command (functions/lifecycle/webhook-settings.ts), with the target's policy.
      command = { kind, userId: userId(str('user')), url: v.url ?? '' };
      break;
    case 'webhooks show':
    case 'webhooks clear':
    case 'webhooks secret':
    case 'webhooks events':
    case 'alerts show':
    case 'alerts clear':
      command = { kind, userId: userId(str('user')) };
      break;
    case 'alerts set': {
      const text = v['low-balance'] ?? '';
      const threshold = /^\d+$/.test(text) ? Number(text) : Number.NaN;
      const problem = lowBalanceThresholdProblem(threshold);
      if (problem) throw new UsageError(`--low-balance ${problem.replace(/, or null$/, '')}`);
      command = { kind, userId: userId(str('user')), lowBalanceThreshold: threshold };
      break;
    }
    case 'upstreams show':
      command = { kind };
      break;
    case 'webhooks deliveries': {
      const task = v.task ?? '';
      if (!TASK_ID.test(task)) throw new UsageError('--task must be a task id (printable characters, no spaces)');
      command = { kind, userId: userId(str('user')), taskId: task };
      break;
    }
    default:
      command = v.user === undefined ? { kind: 'audit' } : { kind: 'audit', userId: userId(v.user) };
  }
  return { command, aws };
}

/** `--spend-limit N --per P` as a limit (both or neither), or undefined when neither is given. */
function spendLimitOption(credits: string | undefined, per: string | undefined): SpendLimitInput | undefined {
  if (credits === undefined && per === undefined) return undefined;
  if (credits === undefined || per === undefined) throw new UsageError('--spend-limit and --per go together');
  const limit = { credits: /^\d+$/.test(credits) ? Number(credits) : Number.NaN, period: per };
  const problem = spendLimitProblem(limit);
  if (problem) {
    throw new UsageError(
      problem.startsWith('period')
        ? '--per must be day, month or total'
        : `--spend-limit ${problem.replace(/^credits /, '')}`,
    );
  }
  return limit as SpendLimitInput;
}
