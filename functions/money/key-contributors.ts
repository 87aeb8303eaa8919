/**
 * The contributors of the key transactions (money/key-issue.ts, money/key-end.ts, money/key-cap.ts,
 * money/key-limit.ts, money/account-limit.ts):
 * the key's items, its listing, the account's active-key count, the audit entry and the limit items,
 * each built by store/ with its named conditions, each reading what a failure of its own condition means.
 */
import type { ApiKeyRecord } from '../store/api-key-records';
import { keyItemUpdate, newKeyItems } from '../store/api-keys';
import { type AuditInput, auditPut } from '../store/audit';
import type { StoreContext } from '../store/client';
import type { Expr } from '../store/conditions';
import { keyCountUpdate, listingUpdate } from '../store/key-count';
import { type KeyLimitChange, keyLimitUpdate } from '../store/key-spend-limit';
import type { KeyEndFinding, LimitFinding } from './findings';
import { type Contributor, type Finding, failedCondition } from './transaction';

/** A contributor whose failure, if any of its items' conditions failed, means `finding`. */
function conditioned<F extends Finding>(name: string, items: Contributor<F>['items'], finding: F): Contributor<F> {
  return { name, items, read: (reasons) => (failedCondition(reasons) ? finding : undefined) };
}

/** A new key's three items (authorizer item, listing, key id), none of which may exist yet. */
export function newKey(
  ctx: StoreContext,
  input: { record: ApiKeyRecord; keyHash: string; prefix: string },
): Contributor<KeyEndFinding> {
  return conditioned('new key', newKeyItems(ctx, input.record, input.keyHash, input.prefix), { kind: 'key-taken' });
}

/**
 * The old key's end on its authorizer item (`change`), on `condition` (it exists, is not revoked, and for
 * a rotation not replaced). Failed, the key changed since it was read.
 */
export function endedKey(
  ctx: StoreContext,
  input: { keyHash: string; change: Expr; condition: Expr },
): Contributor<KeyEndFinding> {
  return conditioned('key', [keyItemUpdate(ctx, input.keyHash, input.change, input.condition)], {
    kind: 'key-changed',
  });
}

/** The key's listing changed with it, on `condition` (the count state as read). Failed: the listing moved. */
export function keyListing(
  ctx: StoreContext,
  input: { userId: string; keyId: string; change: Expr; condition: Expr },
): Contributor<KeyEndFinding> {
  return conditioned('key listing', [listingUpdate(ctx, input, input.change, input.condition)], {
    kind: 'listing-moved',
  });
}

/**
 * The account's active-key count moved by `delta`; a key added under `limit` is conditioned on room for
 * it (store/key-count.ts). Failed with a limit: the account holds `limit` active keys already.
 */
export function activeKeyCount(
  ctx: StoreContext,
  input: { userId: string; delta: number; limit?: number },
): Contributor<KeyEndFinding> {
  const item = keyCountUpdate(ctx, input.userId, input.delta, input.limit);
  return input.delta > 0 && input.limit !== undefined
    ? conditioned('active-key count', [item], { kind: 'key-limit' })
    : { name: 'active-key count', items: [item] };
}

/** The audit entry of the change (its key is new: no condition of its own that can fail in practice). */
export function auditEntry<F extends Finding>(
  ctx: StoreContext,
  input: { userId: string; audit: AuditInput | undefined; now: Date },
): Contributor<F> {
  return { name: 'audit entry', items: input.audit ? [auditPut(ctx, input.userId, input.audit, input.now)] : [] };
}

/**
 * A key's items (authorizer item and listing) take `spendLimit` (none: removed) as version `version`, on
 * `keyCondition` (the authorizer item's) and `listingCondition`. Failed: the key changed, or its listing
 * is gone; with `newer` as the finding of both, a newer version is there already.
 */
export function limitedKey(
  ctx: StoreContext,
  input: KeyLimitChange & { newer?: boolean },
): Array<Contributor<LimitFinding>> {
  const [keyItem, listingItem] = keyLimitUpdate(ctx, input);
  return [
    conditioned('key', [keyItem], input.newer ? { kind: 'newer-limit' } : { kind: 'key-changed' }),
    conditioned('key listing', [listingItem], input.newer ? { kind: 'newer-limit' } : { kind: 'listing-missing' }),
  ];
}
