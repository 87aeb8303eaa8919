/**
 * The rules for what a customer or an operator may ask of a key: its name, allowlist, expiry and
 * rotation grace. The operator CLI (bin/admin) and the key management API (functions/keys-*) both
 * validate with these, so the two front doors accept and refuse exactly the same things.
 *
 * Each rule returns the canonical value or a message without the field's name; each front door says
 * which field (`--name` on the command line, `name` in a 400 body).
 */
import { normalizeCidr } from './cidr';

export type RuleResult<T> = { ok: true; value: T } | { ok: false; message: string };

/** Grace period of a rotation when none is given: time to roll the new key out to clients. */
export const DEFAULT_GRACE_SECONDS = 3600;
/** The longest grace a rotation may give the old key (30 days). */
export const MAX_GRACE_SECONDS = 30 * 24 * 3600;
/** Most allowlist entries one key may carry. */
export const MAX_ALLOWED_CIDRS = 50;
const MAX_NAME_LENGTH = 100;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|([+-])(\d{2}):(\d{2}))$/;

const ok = <T>(value: T): RuleResult<T> => ({ ok: true, value });
const fail = <T>(message: string): RuleResult<T> => ({ ok: false, message });

/** 1 to 100 characters, no control characters, no surrounding spaces. */
export function keyNameRule(value: string): RuleResult<string> {
  if (value.length === 0 || value.length > MAX_NAME_LENGTH || CONTROL.test(value) || value.trim() !== value) {
    return fail(`must be 1 to ${MAX_NAME_LENGTH} characters, without control characters or surrounding spaces`);
  }
  return ok(value);
}

/** The message of an allowlist entry that is not an address or CIDR block. */
export const CIDR_MESSAGE = 'is not an IPv4/IPv6 address or CIDR block (host bits must be zero, e.g. 10.0.0.0/8)';

/**
 * Canonical allowlist (duplicates dropped). On failure `index` names the first bad entry, or is
 * undefined when the list as a whole is too long.
 */
export function allowlistRule(values: readonly string[]): RuleResult<string[]> & { index?: number } {
  if (values.length > MAX_ALLOWED_CIDRS) return fail(`at most ${MAX_ALLOWED_CIDRS} entries`);
  const out: string[] = [];
  for (const [index, value] of values.entries()) {
    const canonical = normalizeCidr(value);
    if (canonical === undefined) return { ...fail<string[]>(CIDR_MESSAGE), index };
    if (!out.includes(canonical)) out.push(canonical);
  }
  return ok(out);
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Epoch seconds of a strict ISO 8601 date-time with a zone (`Z` or `+hh:mm`), rounded down so the key
 * never outlives the instant asked for. Must be in the future.
 */
export function expiryRule(value: string, now: Date): RuleResult<number> {
  const bad = () =>
    fail<number>(
      `must be an ISO 8601 date-time with a time zone, e.g. 2027-01-31T00:00:00Z, got ${JSON.stringify(value)}`,
    );
  const m = ISO_DATE_TIME.exec(value);
  if (!m) return bad();
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const second = Number(m[6] ?? '0');
  const millis = Math.floor(Number(`0${m[7] ?? ''}`) * 1000);
  const offsetSign = m[9] === '-' ? -1 : 1;
  const offsetMinutes = m[8] === 'Z' ? 0 : offsetSign * (Number(m[10]) * 60 + Number(m[11]));
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    Number(m[10] ?? 0) > 23 ||
    Number(m[11] ?? 0) > 59
  ) {
    return bad();
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
  const seconds = Math.floor(ms / 1000);
  if (seconds <= Math.floor(now.getTime() / 1000)) return fail(`${value} is not in the future`);
  return ok(seconds);
}

/** A whole number of seconds from 0 to 30 days. */
export function graceRule(value: number): RuleResult<number> {
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_GRACE_SECONDS) {
    return fail(`must be a whole number from 0 to ${MAX_GRACE_SECONDS}, got ${JSON.stringify(value)}`);
  }
  return ok(value);
}
