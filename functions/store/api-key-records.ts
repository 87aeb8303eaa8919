/**
 * How API key items are read and named: the record and listing shapes, the attribute names of their
 * expressions, and the conversions from stored items (store/api-keys.ts writes them).
 */
import { normalizeCidr } from '../core/cidr';
import { UsageError } from '../core/errors';
import { isSpendPeriod } from '../core/spend-limit';
import type { KeySpendLimit } from '../core/task';

/** The authorizer's view of a key (the `APIKEY#<hash>` item). Times in epoch seconds except `createdAt`. */
export interface ApiKeyRecord {
  keyId: string;
  userId: string;
  name: string;
  /** Canonical CIDRs (`10.0.0.0/8`, `2001:db8::/32`, single addresses as /32 or /128); empty = any. */
  allowedCidrs: string[];
  /** ISO 8601 creation time. */
  createdAt: string;
  /** Epoch seconds; the key is refused from this second on. Absent: never expires. */
  expiresAt?: number;
  /** Epoch seconds; present means revoked. */
  revokedAt?: number;
  /** Key id of the key that replaced this one by rotation. */
  replacedBy?: string;
  /** Key id of the key this one replaced by rotation. */
  rotatedFrom?: string;
  /** Epoch seconds of the last request made with the key (recorded at most once a minute). */
  lastUsedAt?: number;
  /** The key's budget (docs/api/spend-limits-and-usage.md#spend-limits); absent: no limit. */
  spendLimit?: KeySpendLimit;
  /** Grows with every change of `spendLimit` (store/spend.ts); absent: never changed. */
  spendLimitVersion?: number;
}

/** One row of a user's key listing: everything but the key and its hash. */
export interface ApiKeyListing extends Omit<ApiKeyRecord, 'userId'> {
  /** The displayable start of the key, e.g. `gsk_live_AbC123`. */
  prefix: string;
}

/** Attribute names used in expressions (`name` is a DynamoDB reserved word; the rest for uniformity). */
export const NAMES = {
  '#pk': 'PK',
  '#sk': 'SK',
  '#keyId': 'keyId',
  '#userId': 'userId',
  '#name': 'name',
  '#allowedCidrs': 'allowedCidrs',
  '#createdAt': 'createdAt',
  '#expiresAt': 'expiresAt',
  '#revokedAt': 'revokedAt',
  '#replacedBy': 'replacedBy',
  '#rotatedFrom': 'rotatedFrom',
  '#prefix': 'prefix',
  '#keyHash': 'keyHash',
  '#lastUsedAt': 'lastUsedAt',
  '#spendLimit': 'spendLimit',
  '#spendLimitVersion': 'spendLimitVersion',
} as const;

type Names = Partial<Record<keyof typeof NAMES, string>>;

/** Only the names an expression uses: DynamoDB rejects unused ExpressionAttributeNames. */
export function names(...used: (keyof typeof NAMES)[]): Names {
  const out: Names = {};
  for (const key of used) out[key] = NAMES[key];
  return out;
}

export const RECORD_ATTRIBUTES = [
  '#keyId',
  '#userId',
  '#name',
  '#allowedCidrs',
  '#createdAt',
  '#expiresAt',
  '#revokedAt',
  '#replacedBy',
  '#rotatedFrom',
  '#lastUsedAt',
  '#spendLimit',
  '#spendLimitVersion',
] as const;

export const LISTING_ATTRIBUTES = [
  '#keyId',
  '#name',
  '#prefix',
  '#allowedCidrs',
  '#createdAt',
  '#expiresAt',
  '#revokedAt',
  '#replacedBy',
  '#rotatedFrom',
  '#lastUsedAt',
  '#spendLimit',
  '#spendLimitVersion',
] as const;

export type Item = Record<string, unknown>;

export function str(item: Item, field: string): string {
  const value = item[field];
  if (typeof value !== 'string') throw new Error(`API key item: ${field} is not a string`);
  return value;
}

function optStr(item: Item, field: string): string | undefined {
  const value = item[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new Error(`API key item: ${field} is not a string`);
  return value;
}

function optNum(item: Item, field: string): number | undefined {
  const value = item[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') throw new Error(`API key item: ${field} is not a number`);
  return value;
}

function strList(item: Item, field: string): string[] {
  const value = item[field];
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) {
    throw new Error(`API key item: ${field} is not a list of strings`);
  }
  return value;
}

/** Optional fields are left out rather than set to undefined, so records compare and print cleanly. */
export function withOptional<T extends object>(base: T, optional: Partial<T>): T {
  const out = { ...base };
  for (const key of Object.keys(optional) as (keyof T)[]) {
    const value = optional[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The optional fields a key's record and its listing share: when it ends and what replaced what. */
function lifecycleFields(item: Item) {
  return {
    expiresAt: optNum(item, 'expiresAt'),
    revokedAt: optNum(item, 'revokedAt'),
    replacedBy: optStr(item, 'replacedBy'),
    rotatedFrom: optStr(item, 'rotatedFrom'),
    lastUsedAt: optNum(item, 'lastUsedAt'),
    spendLimit: optSpendLimit(item),
    spendLimitVersion: optNum(item, 'spendLimitVersion'),
  };
}

function optSpendLimit(item: Item): KeySpendLimit | undefined {
  const value = item.spendLimit;
  if (value === undefined) return undefined;
  const limit = value as Partial<KeySpendLimit>;
  if (typeof limit.credits !== 'number' || !isSpendPeriod(limit.period) || typeof limit.budgetKeyId !== 'string') {
    throw new Error('API key item: spendLimit is malformed');
  }
  return { credits: limit.credits, period: limit.period, budgetKeyId: limit.budgetKeyId };
}

export function toRecord(item: Item): ApiKeyRecord {
  return withOptional<ApiKeyRecord>(
    {
      keyId: str(item, 'keyId'),
      userId: str(item, 'userId'),
      name: str(item, 'name'),
      allowedCidrs: strList(item, 'allowedCidrs'),
      createdAt: str(item, 'createdAt'),
    },
    lifecycleFields(item),
  );
}

export function toListing(item: Item): ApiKeyListing {
  return withOptional<ApiKeyListing>(
    {
      keyId: str(item, 'keyId'),
      name: str(item, 'name'),
      prefix: str(item, 'prefix'),
      allowedCidrs: strList(item, 'allowedCidrs'),
      createdAt: str(item, 'createdAt'),
    },
    lifecycleFields(item),
  );
}

/** Canonical allowlist; throws UsageError naming the first malformed entry. */
export function canonicalCidrs(cidrs: readonly string[]): string[] {
  const out: string[] = [];
  for (const text of cidrs) {
    const canonical = normalizeCidr(text);
    if (canonical === undefined) throw new UsageError(`not an IPv4/IPv6 address or CIDR block: ${text}`);
    if (!out.includes(canonical)) out.push(canonical);
  }
  return out;
}
