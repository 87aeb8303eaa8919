/**
 * A key's spend limit change, composed from its contributors (the key's item, its listing, the audit
 * entry) and answered by the declared precedence (money/findings.ts). The limit belongs to the budget,
 * which is the rotation chain's: every key of a chain spends into one counter (`budgetKeyId`), and a
 * change of the limit applies to every key of the chain at once, the keys still in their rotation grace
 * included. Otherwise tightening the new key's limit after a leak would leave the leaked key spending on
 * the old terms until its grace ends.
 */
import { isKeyExpired } from '../core/api-key';
import type { SpendLimitInput } from '../core/spend-limit';
import type { KeySpendLimit } from '../core/task';
import {
  ApiKeyNotFoundError,
  type ApiKeyRecord,
  ApiKeyStateError,
  getApiKeyByHash,
  getApiKeyById,
  getKeyRef,
  type KeyAction,
  withKey,
} from '../store/api-keys';
import type { StoreContext } from '../store/client';
import * as conditions from '../store/condition-fragments';
import { and } from '../store/conditions';
import type { LimitedKey } from '../store/key-spend-limit';
import { rebalanceSpendCounters, stampLimitVersion } from '../store/spend';
import { transact } from '../store/transaction';
import { KEY_LIMIT_PRECEDENCE, type LimitFinding, NEWER_LIMIT_PRECEDENCE } from './findings';
import { auditEntry, limitedKey } from './key-contributors';
import { type ComposedTransaction, compose, decide } from './transaction';

/** How far back a chain is followed: far more rotations than any grace can overlap. */
const MAX_CHAIN = 50;

/**
 * What a failed change of the newest key's limit means: the key changed meanwhile (revoked, rotated or
 * limited) or its listing is gone, both `ApiKeyStateError` (try again). Rethrows anything else.
 */
export function keyLimitAnswer(error: unknown, transaction: ComposedTransaction<LimitFinding>, keyId: string): never {
  if (decide(transaction.findings(error) ?? [], KEY_LIMIT_PRECEDENCE)) {
    throw new ApiKeyStateError(`API key ${keyId} changed meanwhile (revoked, rotated or limited); try again`);
  }
  throw error;
}

/** What a failed follow means: true when a newer version is there already (it stands). Rethrows anything else. */
export function newerLimitStands(error: unknown, transaction: ComposedTransaction<LimitFinding>): true {
  if (decide(transaction.findings(error) ?? [], NEWER_LIMIT_PRECEDENCE)) return true;
  throw error;
}

/**
 * Sets (or, with `null`, removes) the spend limit of a key's budget. Only the newest key of a rotation
 * chain can be asked (ApiKeyStateError for an older one); the change reaches every key of the chain that
 * is still in its grace:
 *
 * 1. each key in grace has a new limit version stamped on its key-end guards, so from then on none of
 *    its accepts holding the old terms can commit (each answers busy, 503, until step 3);
 * 2. the newest key changes as before (its guards stamped, the counter shards rebalanced to the new
 *    shares, its items written);
 * 3. each key in grace takes what the newest key now holds, with the version stamped in step 1. This
 *    runs whether step 2 succeeded or not, so a failed change leaves the chain on its former limit,
 *    never a key blocked by a stamp its item does not carry.
 */
export async function setSpendLimit(
  ctx: StoreContext,
  input: KeyAction & { spendLimit: SpendLimitInput | null },
): Promise<ApiKeyRecord> {
  const now = input.now ?? new Date();
  const ref = await getKeyRef(ctx, input.keyId, input.ownerId);
  const newest = await getApiKeyByHash(ctx, ref.keyHash);
  if (!newest) throw new ApiKeyNotFoundError(input.keyId);
  // A change that will be refused stamps nothing on the older keys.
  if (newest.revokedAt !== undefined || newest.replacedBy !== undefined) {
    return setNewestKeyLimit(ctx, input, now);
  }
  const stamped: Array<{ key: ApiKeyRecord; version: number }> = [];
  for (const key of await keysInGrace(ctx, newest, now)) {
    const version = (key.spendLimitVersion ?? 0) + 1;
    await stampLimitVersion(ctx, { userId: ref.userId, keyId: key.keyId, version, now });
    stamped.push({ key, version });
  }
  try {
    return await setNewestKeyLimit(ctx, input, now);
  } finally {
    if (stamped.length > 0) {
      const current = await getApiKeyByHash(ctx, ref.keyHash);
      for (const { key, version } of stamped) await followNewest(ctx, key, version, current?.spendLimit);
    }
  }
}

/** The older keys of `newest`'s chain that can still be used at `now` (in their rotation grace). */
async function keysInGrace(ctx: StoreContext, newest: ApiKeyRecord, now: Date): Promise<ApiKeyRecord[]> {
  const live: ApiKeyRecord[] = [];
  let from = newest.rotatedFrom;
  for (let step = 0; from !== undefined && step < MAX_CHAIN; step++) {
    const key = await getApiKeyById(ctx, from);
    if (!key) break;
    if (key.revokedAt === undefined && !isKeyExpired(key.expiresAt, now)) live.push(key);
    from = key.rotatedFrom;
  }
  return live;
}

/**
 * A key in grace takes the chain's limit (or none) with the version stamped on its guards. A newer
 * version already written stays (a later change of the chain wrote it).
 */
async function followNewest(
  ctx: StoreContext,
  key: ApiKeyRecord,
  version: number,
  spendLimit: KeySpendLimit | undefined,
): Promise<void> {
  const ref = await getKeyRef(ctx, key.keyId);
  const notNewer = and(conditions.itemExists(), conditions.spendLimitVersionAtMost(version));
  const transaction = compose(
    limitedKey(ctx, {
      key: ref,
      spendLimit,
      version,
      keyCondition: notNewer,
      listingCondition: notNewer,
      newer: true,
    }),
  );
  try {
    await transact(ctx, transaction.items);
  } catch (error) {
    newerLimitStands(error, transaction);
  }
}

/**
 * The newest key's part of `setSpendLimit`. The new version is stamped on the key's key-end guards
 * before the key items take the new limit, so no accept holding the old limit can commit after the
 * change is recorded (store/spend.ts).
 */
async function setNewestKeyLimit(
  ctx: StoreContext,
  input: KeyAction & { spendLimit: SpendLimitInput | null },
  now: Date,
): Promise<ApiKeyRecord> {
  const ref: LimitedKey = await getKeyRef(ctx, input.keyId, input.ownerId);
  const old = await getApiKeyByHash(ctx, ref.keyHash);
  if (!old) throw new ApiKeyNotFoundError(input.keyId);
  if (old.revokedAt !== undefined) throw new ApiKeyStateError(`API key ${old.keyId} is revoked`);
  if (old.replacedBy !== undefined) {
    throw new ApiKeyStateError(`API key ${old.keyId} was rotated; change the limit of ${old.replacedBy} instead`);
  }
  const version = (old.spendLimitVersion ?? 0) + 1;
  const spendLimit: KeySpendLimit | undefined = input.spendLimit
    ? {
        credits: input.spendLimit.credits,
        period: input.spendLimit.period,
        budgetKeyId: old.spendLimit?.budgetKeyId ?? old.keyId,
      }
    : undefined;
  await stampLimitVersion(ctx, { userId: ref.userId, keyId: ref.keyId, version, now });
  // No accept of the key commits from here until the key takes the new limit: the counter shards are
  // brought within the new limit's shares first (a lowered limit shrinks them; store/spend.ts).
  if (spendLimit) await rebalanceSpendCounters(ctx, { userId: ref.userId, limit: spendLimit, now });
  const audit = input.audit && {
    ...withKey(input.audit, ref.keyId),
    details: {
      ...input.audit.details,
      spendLimit: input.spendLimit ? `${input.spendLimit.credits}/${input.spendLimit.period}` : 'none',
    },
  };
  const transaction = compose<LimitFinding>([
    ...limitedKey(ctx, {
      key: ref,
      spendLimit,
      version,
      // Still the key read above: not revoked, not rotated, its limit version unchanged.
      keyCondition: and(
        conditions.itemExists(),
        conditions.notRevoked(),
        conditions.keyNotReplaced(),
        conditions.spendLimitVersionIs(old.spendLimitVersion),
      ),
      listingCondition: conditions.itemExists(),
    }),
    auditEntry(ctx, { userId: ref.userId, audit, now }),
  ]);
  try {
    await transact(ctx, transaction.items);
  } catch (error) {
    keyLimitAnswer(error, transaction, old.keyId);
  }
  const { spendLimit: _previous, ...rest } = old;
  return { ...rest, ...(spendLimit ? { spendLimit } : {}), spendLimitVersion: version };
}
