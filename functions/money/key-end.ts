/**
 * A key's end: its revocation, and its rotation (a new key, the old one ending now or after a grace).
 * Each is one transaction composed from its contributors (the new key's items, the old key's item, its
 * listing, the account's active-key count, the audit entry) and answered by its declared precedence
 * (money/findings.ts). The end is marked on the key-end guards every accept checks (store/balance.ts
 * `markKeyEnd`), so no accept with an ended key commits, even behind an Allow the authorizer still caches.
 */
import { epochSeconds, generateApiKey, hashApiKey, isKeyExpired, keyPrefix } from '../core/api-key';
import { KeyLimitError, UsageError } from '../core/errors';
import type { ApiKeyRecord } from '../store/api-key-records';
import { withOptional } from '../store/api-key-records';
import {
  ApiKeyNotFoundError,
  ApiKeyStateError,
  type BeforeCommit,
  getApiKeyByHash,
  getKeyRef,
  type IssuedApiKey,
  type KeyAction,
  withKey,
} from '../store/api-keys';
import { markKeyEnd } from '../store/balance';
import type { StoreContext } from '../store/client';
import * as conditions from '../store/condition-fragments';
import { and, keyCountConditions, update } from '../store/conditions';
import { busy } from '../store/errors';
import { isKeyCounted } from '../store/key-count';
import { transact } from '../store/transaction';
import { type KeyEndFinding, REVOKE_PRECEDENCE, ROTATE_PRECEDENCE } from './findings';
import { assertRoomForKey, ensureKeyCount } from './key-cap';
import { activeKeyCount, auditEntry, endedKey, keyListing, newKey } from './key-contributors';
import { type ComposedTransaction, compose, decide } from './transaction';

/** A key revoked. */
export interface RevokedApiKey {
  keyId: string;
  userId: string;
  /** Epoch seconds of the revocation (the earlier one when the key was already revoked). */
  revokedAt: number;
  alreadyRevoked: boolean;
}

/** A key rotated. */
export interface RotatedApiKey {
  /** The new key (plaintext shown once). */
  issued: IssuedApiKey;
  /** The old key's end: `revokedAt` when the grace was 0, else its new `expiresAt`. */
  previous: { keyId: string; expiresAt?: number; revokedAt?: number };
}

/**
 * What a failed revocation means, by the revocation's precedence: the key changed (revoked meanwhile or
 * gone: read it), or only its listing moved (a retirement: try again). Rethrows anything else.
 */
export function revokeAnswer(
  error: unknown,
  transaction: ComposedTransaction<KeyEndFinding>,
): (typeof REVOKE_PRECEDENCE)[number] {
  const decided = decide(transaction.findings(error) ?? [], REVOKE_PRECEDENCE);
  if (!decided) throw error;
  return decided;
}

/**
 * What a failed rotation means, by the rotation's precedence: the account at its key limit
 * (`KeyLimitError`, 409 naming it), else the old key changed while rotating it (`ApiKeyStateError`).
 * Returns the error unchanged when no condition of a contributor failed.
 */
export function rotateAnswer(
  error: unknown,
  transaction: ComposedTransaction<KeyEndFinding>,
  input: { keyId: string; limit: number | undefined },
): unknown {
  const decided = decide(transaction.findings(error) ?? [], ROTATE_PRECEDENCE);
  if (decided === 'key-limit' && input.limit !== undefined) return new KeyLimitError(input.limit);
  if (decided !== undefined) {
    return new ApiKeyStateError(`API key ${input.keyId} changed while rotating it (revoked or rotated); try again`);
  }
  return error;
}

/**
 * Revokes a key at once: the authorizer refuses it on its next store lookup, and every accept with it
 * is refused from now on, even behind an Allow the authorizer cache still holds (the end is marked on
 * the key-end guards, which every accept checks). Revoking a revoked key changes nothing and reports
 * the original revocation time. Unknown key id: ApiKeyNotFoundError.
 */
export async function revokeApiKey(ctx: StoreContext, input: KeyAction): Promise<RevokedApiKey> {
  const ref = await getKeyRef(ctx, input.keyId, input.ownerId);
  const now = input.now ?? new Date();
  const revokedAt = epochSeconds(now);
  const audit = input.audit && withKey(input.audit, ref.keyId);
  // The guards first: from the moment the key item says `revokedAt`, every accept with the key already
  // fails (an accept that races the marking either commits before the revocation is recorded, or fails).
  await markKeyEnd(ctx, { userId: ref.userId, keyId: ref.keyId, endSeconds: revokedAt });
  // The listing's `counted` is read first: revoking a counted key takes it out of the account's
  // active-key count in the same transaction. A retirement racing in between fails the listing's
  // condition, and the revocation is tried again on what it left.
  for (let attempt = 1; ; attempt++) {
    const counted = await isKeyCounted(ctx, ref.userId, ref.keyId);
    const transaction = compose<KeyEndFinding>([
      endedKey(ctx, {
        keyHash: ref.keyHash,
        change: update({ set: { revokedAt } }),
        condition: and(conditions.itemExists(), conditions.notRevoked()),
      }),
      keyListing(ctx, {
        userId: ref.userId,
        keyId: ref.keyId,
        change: update({ set: { revokedAt }, remove: counted ? ['counted'] : [] }),
        condition: and(
          conditions.itemExists(),
          counted ? keyCountConditions.counted() : keyCountConditions.notCounted(),
        ),
      }),
      ...(counted ? [activeKeyCount(ctx, { userId: ref.userId, delta: -1 })] : []),
      auditEntry<KeyEndFinding>(ctx, { userId: ref.userId, audit, now }),
    ]);
    try {
      await transact(ctx, transaction.items);
      return { keyId: ref.keyId, userId: ref.userId, revokedAt, alreadyRevoked: false };
    } catch (error) {
      revokeAnswer(error, transaction);
      // The key item or only its listing: the key as it is now tells which.
      const current = await getApiKeyByHash(ctx, ref.keyHash);
      if (current === undefined) throw new ApiKeyNotFoundError(ref.keyId);
      if (current.revokedAt !== undefined) {
        // Revoked earlier: that end stands (an earlier end always wins on the guards).
        await markKeyEnd(ctx, { userId: ref.userId, keyId: ref.keyId, endSeconds: current.revokedAt });
        return { keyId: ref.keyId, userId: ref.userId, revokedAt: current.revokedAt, alreadyRevoked: true };
      }
      // Only the listing's count state moved on (a retirement): read it again.
      if (attempt >= 3) throw busy(error);
    }
  }
}

/**
 * Replaces a key with a new one for the same user, name, allowlist and expiry, in one transaction.
 * The old key ends at `now + graceSeconds` (never later than its own expiry), or is revoked at once when
 * `graceSeconds` is 0; accepts honour that end exactly, as for a revocation. Only the newest key of a
 * chain can be rotated; a revoked or expired key cannot (ApiKeyStateError). The new plaintext key is in
 * the result, once.
 */
export async function rotateApiKey(
  ctx: StoreContext,
  input: KeyAction & { graceSeconds: number; beforeCommit?: BeforeCommit; maxActiveKeys?: number },
): Promise<RotatedApiKey> {
  if (!Number.isSafeInteger(input.graceSeconds) || input.graceSeconds < 0) {
    throw new UsageError('graceSeconds must be a non-negative integer');
  }
  const now = input.now ?? new Date();
  const nowSeconds = epochSeconds(now);
  const ref = await getKeyRef(ctx, input.keyId, input.ownerId);
  const old = await getApiKeyByHash(ctx, ref.keyHash);
  if (!old) throw new ApiKeyNotFoundError(input.keyId);
  if (old.revokedAt !== undefined) throw new ApiKeyStateError(`API key ${old.keyId} is revoked`);
  if (old.replacedBy !== undefined) {
    throw new ApiKeyStateError(`API key ${old.keyId} was already rotated; rotate ${old.replacedBy} instead`);
  }
  if (isKeyExpired(old.expiresAt, now)) {
    throw new ApiKeyStateError(`API key ${old.keyId} has expired`);
  }

  const { apiKey, keyId } = generateApiKey();
  const record = withOptional<ApiKeyRecord>(
    { keyId, userId: old.userId, name: old.name, allowedCidrs: old.allowedCidrs, createdAt: now.toISOString() },
    // The budget and its counter go with the key: the replacement (and the old key, during its grace)
    // spend into the same counter (`budgetKeyId`), so rotating never resets what was spent.
    {
      expiresAt: old.expiresAt,
      rotatedFrom: old.keyId,
      spendLimit: old.spendLimit,
      spendLimitVersion: old.spendLimitVersion,
    },
  );
  const prefix = keyPrefix(apiKey);

  const previous: RotatedApiKey['previous'] =
    input.graceSeconds === 0
      ? { keyId: old.keyId, revokedAt: nowSeconds }
      : {
          keyId: old.keyId,
          expiresAt: Math.min(old.expiresAt ?? Number.POSITIVE_INFINITY, nowSeconds + input.graceSeconds),
        };
  const endField = previous.revokedAt !== undefined ? 'revokedAt' : 'expiresAt';
  const endValue = previous.revokedAt ?? previous.expiresAt;

  // The account's active-key count: the new key is in it; the old one leaves it now only when it ends
  // now (no grace), else when it is retired after its end. So a rotation with grace needs a free place.
  const limit = input.maxActiveKeys;
  if (limit !== undefined) await ensureKeyCount(ctx, old.userId, now);
  const oldCounted = await isKeyCounted(ctx, old.userId, old.keyId);
  const oldLeaves = previous.revokedAt !== undefined && oldCounted;
  const delta = oldLeaves ? 0 : 1;
  if (limit !== undefined && delta > 0) await assertRoomForKey(ctx, old.userId, limit, now);
  await input.beforeCommit?.({ keyId, userId: old.userId });
  // Without grace the old key ends now, as a revocation does: guards first (see revokeApiKey). With grace
  // its end is in the future, so the guards can follow the rotation.
  if (previous.revokedAt !== undefined) {
    await markKeyEnd(ctx, { userId: old.userId, keyId: old.keyId, endSeconds: previous.revokedAt });
  }
  const transaction = compose<KeyEndFinding>([
    newKey(ctx, { record, keyHash: hashApiKey(apiKey), prefix }),
    // The same conditions as the checks above, so two racing rotations cannot both win.
    endedKey(ctx, {
      keyHash: ref.keyHash,
      change: update({ set: { [endField]: endValue, replacedBy: keyId } }),
      condition: and(conditions.itemExists(), conditions.notRevoked(), conditions.keyNotReplaced()),
    }),
    keyListing(ctx, {
      userId: ref.userId,
      keyId: ref.keyId,
      change: update({ set: { [endField]: endValue, replacedBy: keyId }, remove: oldLeaves ? ['counted'] : [] }),
      condition: and(
        conditions.itemExists(),
        keyCountConditions.notRevoked(),
        oldCounted ? keyCountConditions.counted() : keyCountConditions.notCounted(),
      ),
    }),
    ...(delta > 0
      ? [activeKeyCount(ctx, { userId: old.userId, delta, ...(limit === undefined ? {} : { limit }) })]
      : []),
    auditEntry<KeyEndFinding>(ctx, {
      userId: ref.userId,
      audit: input.audit && {
        ...withKey(input.audit, old.keyId),
        details: { ...input.audit.details, newKeyId: keyId, graceSeconds: input.graceSeconds },
      },
      now,
    }),
  ]);
  try {
    await transact(ctx, transaction.items);
  } catch (error) {
    throw rotateAnswer(error, transaction, { keyId: old.keyId, limit });
  }
  if (previous.expiresAt !== undefined) {
    await markKeyEnd(ctx, { userId: old.userId, keyId: old.keyId, endSeconds: previous.expiresAt });
  }
  return { issued: { ...record, apiKey, prefix }, previous };
}
