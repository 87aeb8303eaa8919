/**
 * How keys look to their owner and to operators: the one view `GET /api/keys`, the key handlers and the
 * CLI's `keys list` print. Presentation, so it lives above store/, which holds items and conditions.
 */
import { epochSeconds } from '../core/api-key';
import { spendPeriodOf } from '../core/spend-limit';
import type { KeySpendLimit } from '../core/task';
import { type ApiKeyListing, type IssuedApiKey, listApiKeys } from '../store/api-keys';
import type { StoreContext } from '../store/client';
import { readSpent, spendCounterOf } from '../store/spend';

/**
 * Every key of a user as `describeKey` shows it, with what each limited key has spent this period (one
 * GetItem per distinct counter: keys of one rotation chain share theirs).
 */
export async function describeKeys(ctx: StoreContext, userId: string, now: Date) {
  const listings = await listApiKeys(ctx, userId);
  const spentByCounter = new Map<string, Promise<number>>();
  const spentOf = (limit: KeySpendLimit) => {
    const counter = spendCounterOf(userId, limit, now).key.SK;
    let spent = spentByCounter.get(counter);
    if (!spent) {
      spent = readSpent(ctx, userId, limit, now);
      spentByCounter.set(counter, spent);
    }
    return spent;
  };
  return Promise.all(
    listings.map(async (key) => describeKey(key, now, key.spendLimit ? await spentOf(key.spendLimit) : 0)),
  );
}

/** Status of a key at `nowSeconds`. */
export function keyStatus(key: Pick<ApiKeyListing, 'revokedAt' | 'expiresAt'>, nowSeconds: number) {
  if (key.revokedAt !== undefined) return 'revoked' as const;
  if (key.expiresAt !== undefined && nowSeconds >= key.expiresAt) return 'expired' as const;
  return 'active' as const;
}

function iso(epoch: number | undefined): string | null {
  return epoch === undefined ? null : new Date(epoch * 1000).toISOString();
}

/**
 * A key as the owner and operators see it (times ISO 8601, `null` = never / not): the one view the
 * CLI's `keys list` and `GET /api/keys` both print.
 */
export function describeKey(key: ApiKeyListing, now: Date, spent = 0) {
  return {
    keyId: key.keyId,
    name: key.name,
    prefix: key.prefix,
    status: keyStatus(key, epochSeconds(now)),
    allowedCidrs: key.allowedCidrs,
    createdAt: key.createdAt,
    expiresAt: iso(key.expiresAt),
    revokedAt: iso(key.revokedAt),
    lastUsedAt: iso(key.lastUsedAt),
    replacedBy: key.replacedBy ?? null,
    rotatedFrom: key.rotatedFrom ?? null,
    spendLimit: describeSpendLimit(key.spendLimit, now, spent),
  };
}

/**
 * A key's budget as the owner sees it: the limit, what was spent in the current period (`spent`, read
 * by the caller from the counter, store/spend.ts `readSpent`) and when the period resets (null: never).
 */
export function describeSpendLimit(limit: KeySpendLimit | undefined, now: Date, spent = 0) {
  if (!limit) return null;
  const resetsAt = spendPeriodOf(limit.period, now).resetsAt;
  return { credits: limit.credits, period: limit.period, spent, resetsAt: resetsAt ? resetsAt.toISOString() : null };
}

/** What the owner sees of a newly issued key: the only time the plaintext key is shown. */
export function describeIssuedKey(issued: IssuedApiKey) {
  return {
    keyId: issued.keyId,
    apiKey: issued.apiKey,
    userId: issued.userId,
    name: issued.name,
    prefix: issued.prefix,
    allowedCidrs: issued.allowedCidrs,
    expiresAt: iso(issued.expiresAt),
    spendLimit: issued.spendLimit ? { credits: issued.spendLimit.credits, period: issued.spendLimit.period } : null,
  };
}
