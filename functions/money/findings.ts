/**
 * What the money transactions' failed conditions can mean (one finding per contributor), and the
 * declared precedence of each transaction: the one place that says which answer wins when several
 * contributors' conditions failed at once.
 */
import type { SpendScope } from '../store/errors';

/**
 * What a contributor to an accept found:
 * - `key-ended`: the key guard says the key has ended (401).
 * - `idempotency`: the Idempotency-Key was used before; `replayOf` the task when the request is the same
 *   (a replay), absent when it differs (409).
 * - `limit-changed`: the key guard carries a newer spend limit than the authorizer read (503, nothing written).
 * - `account-limit`: a debited shard carries another account spend limit than the accept assumed.
 * - `short`: a debited shard (`shard`) did not hold what was taken from it, or a spend allowance's counter
 *   shard (`scope`: whose budget) had less room than was taken from it.
 * - `task-taken`: the task id (or its ledger entry) exists already.
 * - `conflict`: another transaction held a debited shard (`shard`).
 */
export type AcceptFinding =
  | { kind: 'key-ended' }
  | { kind: 'idempotency'; replayOf: string | undefined }
  | { kind: 'limit-changed' }
  | { kind: 'account-limit'; version: number; credits: number | undefined }
  | { kind: 'short'; shard?: number; scope?: SpendScope }
  | { kind: 'task-taken' }
  | { kind: 'conflict'; shard: number };

/**
 * The accept's precedence, first wins. An ended key outranks everything (a revoked key spends nothing
 * and replays nothing); the Idempotency-Key outranks credits and limits (a replayed request gets its
 * original answer even when the balance or the budget has since run out); a stale key limit comes next
 * (a retry reads the new one); the account limit changed is judged by the one now stamped, not by the
 * counter of the old one; then what is short (only the total decides a 402); a taken task id is a
 * programming error; a conflict is tried again.
 */
export const ACCEPT_PRECEDENCE = [
  'key-ended',
  'idempotency',
  'limit-changed',
  'account-limit',
  'short',
  'task-taken',
  'conflict',
] as const satisfies ReadonlyArray<AcceptFinding['kind']>;

/**
 * What a contributor to a refund (fail-and-refund, cancel) found: the task is missing, or no longer
 * refundable (terminal, already refunded, left the queue for a cancel; or its refund entry exists: the
 * exactly-once case).
 */
export type RefundFinding = { kind: 'task-missing' } | { kind: 'not-refundable' };

/** The refund's precedence: a missing task first (nothing to answer with), then not refundable. */
export const REFUND_PRECEDENCE = ['task-missing', 'not-refundable'] as const satisfies ReadonlyArray<
  RefundFinding['kind']
>;

/** What a contributor to a grant found: its ledger entry is there already (the same grant id and instant). */
export type GrantFinding = { kind: 'grant-recorded' };

/** The grant's precedence. */
export const GRANT_PRECEDENCE = ['grant-recorded'] as const satisfies ReadonlyArray<GrantFinding['kind']>;

/**
 * What a contributor to a key's end (a revocation, a rotation) found:
 * - `key-limit`: the account's active-key count is at its limit (a rotation with grace adds a key).
 * - `key-changed`: the old key's item was revoked, rotated or removed since it was read.
 * - `listing-moved`: the key's listing is not in the count state the transaction expects (a retirement
 *   or a revocation raced it; for a retirement also: the key has not ended).
 * - `key-taken`: a new key's item exists already (an id or hash collision).
 *
 * A key's issue (money/key-issue.ts) and the active-key count's own writes (money/key-cap.ts: a key
 * counted, a key retired) are read with the same findings.
 */
export type KeyEndFinding =
  | { kind: 'key-limit' }
  | { kind: 'key-changed' }
  | { kind: 'listing-moved' }
  | { kind: 'key-taken' };

/**
 * The revocation's precedence: the key item changed (revoked meanwhile: that end stands, or the key is
 * gone) before a listing that only moved (read it again and retry).
 */
export const REVOKE_PRECEDENCE = ['key-changed', 'listing-moved'] as const satisfies ReadonlyArray<
  KeyEndFinding['kind']
>;

/**
 * The rotation's precedence: the key count at its limit names the limit (409) whatever else failed; any
 * other failed condition means the old key changed while rotating it (revoked or rotated: try again).
 */
export const ROTATE_PRECEDENCE = [
  'key-limit',
  'key-changed',
  'listing-moved',
  'key-taken',
] as const satisfies ReadonlyArray<KeyEndFinding['kind']>;

/**
 * The issue's precedence: the key count at its limit names the limit (409); a new key's item already
 * there is a collision of random ids (a fault, left as it was).
 */
export const ISSUE_PRECEDENCE = ['key-limit', 'key-taken'] as const satisfies ReadonlyArray<KeyEndFinding['kind']>;

/**
 * The precedence of the active-key count's own writes (a key counted, a key retired): only the listing
 * has a condition, and its failure means another writer counted, retired or revoked the key first, or
 * (retiring) it has not ended: nothing to do.
 */
export const KEY_COUNT_PRECEDENCE = ['listing-moved'] as const satisfies ReadonlyArray<KeyEndFinding['kind']>;

/**
 * What a contributor to a limit change found:
 * - `key-changed`: the key's item was revoked, rotated or given another limit since it was read.
 * - `listing-missing`: the key's listing is gone.
 * - `newer-limit`: a key in its rotation grace (or the account's setting) already carries a newer
 *   version of the limit: a later change finished first, and it stands.
 */
export type LimitFinding = { kind: 'key-changed' } | { kind: 'listing-missing' } | { kind: 'newer-limit' };

/** The key limit change's precedence: the key item's state first, then its listing. */
export const KEY_LIMIT_PRECEDENCE = ['key-changed', 'listing-missing'] as const satisfies ReadonlyArray<
  LimitFinding['kind']
>;

/**
 * The precedence of a limit followed (a key in grace taking its chain's limit) or shown (the account's
 * setting): only a newer version already written, which stands.
 */
export const NEWER_LIMIT_PRECEDENCE = ['newer-limit'] as const satisfies ReadonlyArray<LimitFinding['kind']>;
