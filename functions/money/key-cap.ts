/**
 * The account's cap on active keys, kept by its active-key count (store/key-count.ts): an older account's
 * keys counted once, an ended key retired from the count, and the room for one more key checked before
 * anything else is done for it. Each write is one transaction composed from its contributors (the key's
 * listing, the count) and read by the declared precedence (money/findings.ts `KEY_COUNT_PRECEDENCE`):
 * only the listing carries a condition, and its failure means another writer got there first.
 */
import { KeyLimitError } from '../core/errors';
import type { StoreContext } from '../store/client';
import * as conditions from '../store/condition-fragments';
import { and, keyCountConditions, update } from '../store/conditions';
import { type KeyCount, listingStates, markKeyCountInitialized, readKeyCount } from '../store/key-count';
import { transact } from '../store/transaction';
import { KEY_COUNT_PRECEDENCE, type KeyEndFinding } from './findings';
import { activeKeyCount, keyListing } from './key-contributors';
import { type ComposedTransaction, compose, decide } from './transaction';

/**
 * What a failed count write (a key counted, a key retired) means: false when the listing's condition
 * failed (counted, retired or revoked by another writer first, or not ended yet: nothing written,
 * nothing to do). Rethrows anything else.
 */
export function keyCountAnswer(error: unknown, transaction: ComposedTransaction<KeyEndFinding>): false {
  if (decide(transaction.findings(error) ?? [], KEY_COUNT_PRECEDENCE)) return false;
  throw error;
}

/** Sends `transaction` (the runner retries transient failures): true written, false lost on the listing. */
async function countWrite(ctx: StoreContext, transaction: ComposedTransaction<KeyEndFinding>): Promise<boolean> {
  try {
    await transact(ctx, transaction.items);
    return true;
  } catch (error) {
    return keyCountAnswer(error, transaction);
  }
}

/**
 * The transaction that counts an older active key: its listing marked `counted` (while it is not, and
 * the key is active at `nowSeconds`) and the count up by one.
 */
export function keyCounting(
  ctx: StoreContext,
  key: { userId: string; keyId: string },
  nowSeconds: number,
): ComposedTransaction<KeyEndFinding> {
  return compose<KeyEndFinding>([
    keyListing(ctx, {
      ...key,
      change: update({ set: { counted: true } }),
      condition: and(
        conditions.itemExists(),
        keyCountConditions.notCounted(),
        keyCountConditions.keyActiveAt(nowSeconds),
      ),
    }),
    activeKeyCount(ctx, { userId: key.userId, delta: 1 }),
  ]);
}

/**
 * The transaction that retires an ended key: its listing loses `counted` (while it has it, and the key
 * has ended by `nowSeconds`) and the count goes down by one.
 */
export function keyRetirement(
  ctx: StoreContext,
  key: { userId: string; keyId: string },
  nowSeconds: number,
): ComposedTransaction<KeyEndFinding> {
  return compose<KeyEndFinding>([
    keyListing(ctx, {
      ...key,
      change: update({ remove: ['counted'] }),
      condition: and(keyCountConditions.counted(), keyCountConditions.keyEndedBy(nowSeconds)),
    }),
    activeKeyCount(ctx, { userId: key.userId, delta: -1 }),
  ]);
}

/**
 * Sets the count up for an account from before it: every active key not yet counted is counted (its
 * listing marked in the same transaction as the count's increment, so racing setups count each key
 * once), then the count is marked `initialized`.
 */
export async function ensureKeyCount(ctx: StoreContext, userId: string, now: Date): Promise<KeyCount> {
  const current = await readKeyCount(ctx, userId);
  if (current.initialized) return current;
  const nowSeconds = Math.floor(now.getTime() / 1000);
  for (const listing of await listingStates(ctx, userId)) {
    if (listing.counted || listing.revokedAt !== undefined) continue;
    if (listing.expiresAt !== undefined && listing.expiresAt <= nowSeconds) continue;
    await countWrite(ctx, keyCounting(ctx, { userId, keyId: listing.keyId }, nowSeconds));
  }
  await markKeyCountInitialized(ctx, userId);
  return readKeyCount(ctx, userId);
}

/**
 * Takes every counted key that has ended by `now` (in practice: reached its expiry) out of the count,
 * each in a transaction with its listing; returns the ids retired here.
 */
export async function retireEndedKeys(ctx: StoreContext, userId: string, now: Date): Promise<string[]> {
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const retired: string[] = [];
  for (const listing of await listingStates(ctx, userId)) {
    if (!listing.counted) continue;
    const ended =
      listing.revokedAt !== undefined || (listing.expiresAt !== undefined && listing.expiresAt <= nowSeconds);
    if (!ended) continue;
    if (await retireKey(ctx, { userId, keyId: listing.keyId }, now)) retired.push(listing.keyId);
  }
  return retired;
}

/** Takes one ended key out of the count; false when it was not in it (or has not ended). */
export async function retireKey(
  ctx: StoreContext,
  key: { userId: string; keyId: string },
  now: Date,
): Promise<boolean> {
  return countWrite(ctx, keyRetirement(ctx, key, Math.floor(now.getTime() / 1000)));
}

/**
 * Checks, before anything else is done for a new key (API Gateway's control plane is called next), that
 * the account has room for it: keys that ended since are retired first. The transaction that writes the
 * key checks again, exactly (`keyCountConditions.roomFor`). Throws KeyLimitError.
 */
export async function assertRoomForKey(ctx: StoreContext, userId: string, limit: number, now: Date): Promise<void> {
  const count = await ensureKeyCount(ctx, userId, now);
  if (count.activeKeys < limit) return;
  if ((await retireEndedKeys(ctx, userId, now)).length === 0) throw new KeyLimitError(limit);
  if ((await readKeyCount(ctx, userId)).activeKeys >= limit) throw new KeyLimitError(limit);
}
