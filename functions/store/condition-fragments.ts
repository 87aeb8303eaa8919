/**
 * Named condition fragments, one export each (`import * as conditions from './condition-fragments'`):
 * a bundle keeps only the fragments its code uses. As one object they could not be tree-shaken, and
 * the submit functions carried all of them (measured: about 0.8 KB of their bundle budget).
 */
import { TaskStatus } from '../core/task';
import { attr, type Expr, namesOf } from './conditions';
import { TABLE } from './table';

/** A put that must not overwrite: the key is not taken. */
export const itemIsNew = (): Expr => ({
  expression: `attribute_not_exists(${attr(TABLE.partitionKey)})`,
  names: namesOf(TABLE.partitionKey),
  values: {},
});

/** An update that must not create: the item is there. */
export const itemExists = (): Expr => ({
  expression: `attribute_exists(${attr(TABLE.partitionKey)})`,
  names: namesOf(TABLE.partitionKey),
  values: {},
});

/** The balance item exists and holds at least `take` credits (a missing balance fails the comparison). */
export const balanceCovers = (take: number): Expr => ({
  expression: `${attr('balance')} >= :take`,
  names: namesOf('balance'),
  values: { ':take': take },
});

/**
 * The API key has not ended by `nowSeconds`: its key-end guard (written by revoke and rotate before the
 * key item says so, see `markKeyEnd`) is absent or still in the future.
 */
export const keyNotEnded = (nowSeconds: number): Expr => ({
  expression: `attribute_not_exists(${attr('endsAt')}) OR ${attr('endsAt')} > :keyNow`,
  names: namesOf('endsAt'),
  values: { ':keyNow': nowSeconds },
});

/**
 * The accept holds the key's current spend limit: no change of the limit newer than `version` has been
 * stamped on the guard (store/spend.ts `stampLimitVersion`). A guard without a stamp passes.
 */
export const limitCurrent = (version: number): Expr => ({
  expression: `attribute_not_exists(${attr('limitVersion')}) OR ${attr('limitVersion')} <= :limitVersion`,
  names: namesOf('limitVersion'),
  values: { ':limitVersion': version },
});

/**
 * The balance shard carries the account spend limit the accept holds: version `version` (0: none
 * known). A shard never stamped passes (no limit was ever set, or its stamp is on the way); one stamped
 * with another version fails and tells the accept the limit (ALL_OLD, store/spend.ts).
 */
export const accountLimitIs = (version: number): Expr => ({
  expression: `attribute_not_exists(${attr('acctLimitVersion')}) OR ${attr('acctLimitVersion')} = :acctLimitVersion`,
  names: namesOf('acctLimitVersion'),
  values: { ':acctLimitVersion': version },
});

/** The task exists and is PENDING (0); fails for a missing item too. */
export const taskIsPending = (): Expr => ({
  expression: `${attr('status')} = :pendingStatus`,
  names: namesOf('status'),
  values: { ':pendingStatus': TaskStatus.PENDING },
});

/** The task has ended (completed or failed): it is no longer PENDING. A missing task fails with `itemExists`. */
export const taskHasEnded = (): Expr => ({
  expression: `${attr('status')} <> :pendingStatus`,
  names: namesOf('status'),
  values: { ':pendingStatus': TaskStatus.PENDING },
});

/** The task's credits have not been given back yet. */
export const notYetRefunded = (): Expr => ({
  expression: `${attr('creditsRefunded')} = :notRefunded`,
  names: namesOf('creditsRefunded'),
  values: { ':notRefunded': false },
});

/**
 * The stored task is the one the caller describes: it was charged `creditsUsed` and created at
 * `createdAt`, so a refund computed from the caller's copy gives back exactly what was debited.
 */
export const chargedAs = (creditsUsed: number, createdAt: string): Expr => ({
  expression: `${attr('creditsUsed')} = :chargedCredits AND ${attr('createdAt')} = :chargedAt`,
  names: namesOf('creditsUsed', 'createdAt'),
  values: { ':chargedCredits': creditsUsed, ':chargedAt': createdAt },
});

/** A cancel's condition: the task is still queued here and nobody has sent it (no provider id). */
export const stillQueued = (): Expr => ({
  expression: `${attr('stage')} = :cancelQueuedStage AND attribute_not_exists(${attr('providerTaskId')})`,
  names: namesOf('stage', 'providerTaskId'),
  values: { ':cancelQueuedStage': 'queued' },
});

/** The provider task id has not been recorded yet. */
export const providerTaskNotRecorded = (): Expr => ({
  expression: `attribute_not_exists(${attr('providerTaskId')})`,
  names: namesOf('providerTaskId'),
  values: {},
});

/**
 * The idempotency key is free: never used, or its record has expired. TTL deletion can lag by days,
 * so an expired record still on the table must not block the key.
 */
export const idempotencyKeyFree = (nowEpochSeconds: number): Expr => ({
  expression: `attribute_not_exists(${attr(TABLE.partitionKey)}) OR ${attr(TABLE.ttlAttribute)} < :nowEpochSeconds`,
  names: namesOf(TABLE.partitionKey, TABLE.ttlAttribute),
  values: { ':nowEpochSeconds': nowEpochSeconds },
});

/**
 * A key-end guard records no end yet, or a later one than `endSeconds`: an earlier end already recorded
 * wins (store/balance.ts `markKeyEnd`).
 */
export const keyEndLaterThan = (endSeconds: number): Expr => ({
  expression: `attribute_not_exists(${attr('endsAt')}) OR ${attr('endsAt')} > :end`,
  names: namesOf('endsAt'),
  values: { ':end': endSeconds },
});

/** A key-end guard records no end (a stamp on an ended key's guard would outlive its TTL's purpose). */
export const keyEndNotRecorded = (): Expr => ({
  expression: `attribute_not_exists(${attr('endsAt')})`,
  names: namesOf('endsAt'),
  values: {},
});

/** A key-end guard carries no limit stamp, or an older one than `version` (store/spend.ts `stampLimitVersion`). */
export const limitStampOlderThan = (version: number): Expr => ({
  expression: `attribute_not_exists(${attr('limitVersion')}) OR ${attr('limitVersion')} < :version`,
  names: namesOf('limitVersion'),
  values: { ':version': version },
});

/**
 * A spend counter shard has spent at most `room` (what its cap leaves after the cost): a missing counter
 * has spent nothing, so it passes too while the room is not negative (store/spend.ts `spendCounterChange`).
 */
export const spentAtMost = (room: number): Expr => ({
  expression:
    room >= 0
      ? `attribute_not_exists(${attr('spent')}) OR ${attr('spent')} <= :spendRoom`
      : `${attr('spent')} <= :spendRoom`,
  names: namesOf('spent'),
  values: { ':spendRoom': room },
});

/** A spend counter shard still holds `was`, as read (a missing counter holds 0): a rebalance's check. */
export const spentIs = (was: number): Expr => ({
  expression:
    was === 0 ? `attribute_not_exists(${attr('spent')}) OR ${attr('spent')} = :was` : `${attr('spent')} = :was`,
  names: namesOf('spent'),
  values: { ':was': was },
});

/** An account's open uploads are fewer than `max` (a missing count is none). */
export const openUploadsBelow = (max: number): Expr => ({
  expression: `attribute_not_exists(${attr('open')}) OR ${attr('open')} < :max`,
  names: namesOf('open'),
  values: { ':max': max },
});

/** An account's open-upload count still holds `read`, as read: a recount's check. */
export const openUploadsAre = (read: number): Expr => ({
  expression: `${attr('open')} = :read`,
  names: namesOf('open'),
  values: { ':read': read },
});

/** An invitation has no sign-in identity bound yet, or exactly `identity` (the first sign-in binds it). */
export const identityUnboundOr = (identity: string): Expr => ({
  expression: `attribute_not_exists(${attr('identity')}) OR ${attr('identity')} = :identity`,
  names: namesOf('identity'),
  values: { ':identity': identity },
});

// ---------------------------------------------------------------------------------------------------
// Keys, limits, sessions, upstream capacity and query keys (issue #36: no condition written inline)
// ---------------------------------------------------------------------------------------------------

/** An `attribute` is absent or below `value` (`placeholder`: the fragment's own value placeholder). */
const absentOrBelow = (attribute: string, placeholder: string, value: unknown): Expr => ({
  expression: `attribute_not_exists(${attr(attribute)}) OR ${attr(attribute)} < ${placeholder}`,
  names: namesOf(attribute),
  values: { [placeholder]: value },
});

/** The item (an API key, a session) has not been revoked. */
export const notRevoked = (): Expr => ({
  expression: `attribute_not_exists(${attr('revokedAt')})`,
  names: namesOf('revokedAt'),
  values: {},
});

/** The API key has not been replaced by a rotation. */
export const keyNotReplaced = (): Expr => ({
  expression: `attribute_not_exists(${attr('replacedBy')})`,
  names: namesOf('replacedBy'),
  values: {},
});

/** The key's use was never recorded, or last at or before `dueSeconds` (one write a minute at most). */
export const keyUseDue = (dueSeconds: number): Expr => ({
  expression: `attribute_not_exists(${attr('lastUsedAt')}) OR ${attr('lastUsedAt')} <= :useDue`,
  names: namesOf('lastUsedAt'),
  values: { ':useDue': dueSeconds },
});

/** The key item carries limit version `version`, as read (undefined: it never had one). */
export const spendLimitVersionIs = (version: number | undefined): Expr =>
  version === undefined
    ? {
        expression: `attribute_not_exists(${attr('spendLimitVersion')})`,
        names: namesOf('spendLimitVersion'),
        values: {},
      }
    : {
        expression: `${attr('spendLimitVersion')} = :readLimitVersion`,
        names: namesOf('spendLimitVersion'),
        values: { ':readLimitVersion': version },
      };

/** The key item carries no limit version newer than `version` (a later change of the chain stands). */
export const spendLimitVersionAtMost = (version: number): Expr => ({
  expression: `NOT (${attr('spendLimitVersion')} > :limitVersionAtMost)`,
  names: namesOf('spendLimitVersion'),
  values: { ':limitVersionAtMost': version },
});

/** A balance shard carries no account-limit stamp, or an older one than `version` (a newer stamp stands). */
export const accountLimitStampOlderThan = (version: number): Expr =>
  absentOrBelow('acctLimitVersion', ':acctLimitStamp', version);

/** The account limit's setting has no version reserved, or a lower one than `version`. */
export const limitReservationBelow = (version: number): Expr =>
  absentOrBelow('pendingVersion', ':reservedVersion', version);

/** The account limit's setting shows no version, or an older one than `version` (a newer one shown stands). */
export const limitShownOlderThan = (version: number): Expr => absentOrBelow('version', ':shownVersion', version);

/** A session's idle expiry is before `idleExpiresAt` (it only ever moves forward). */
export const idleExpiryBefore = (idleExpiresAt: number): Expr => ({
  expression: `${attr('idleExpiresAt')} < :idleExpiresAt`,
  names: namesOf('idleExpiresAt'),
  values: { ':idleExpiresAt': idleExpiresAt },
});

/** The upstream's backoff is absent or ends before `until` (a backoff that reaches further is kept). */
export const backoffEndsBefore = (until: number): Expr => absentOrBelow('backoffUntil', ':until', until);

/** The upstream is marked unhealthy (`unhealthySince` is set). */
export const upstreamUnhealthy = (): Expr => ({
  expression: `attribute_exists(${attr('unhealthySince')})`,
  names: namesOf('unhealthySince'),
  values: {},
});

/** The capacity item holds its map of tasks in flight (`running`). */
export const runningMapExists = (): Expr => ({
  expression: `attribute_exists(${attr('running')})`,
  names: namesOf('running'),
  values: {},
});

/** The entry `key` of the tasks in flight was sent at `sentAt`, as read (not written again since). */
export const runningEntrySentAt = (key: string, sentAt: number): Expr => ({
  expression: `${attr('running')}.${attr('runningKey')}.${attr('sentAt')} = :runningSentAt`,
  names: { ...namesOf('running', 'sentAt'), [attr('runningKey')]: key },
  values: { ':runningSentAt': sentAt },
});

/** The answer time `attribute` is absent or records a slot before `slot` (a late write never replaces a newer one). */
export const answeredBefore = (attribute: string, slot: number): Expr => ({
  expression: `attribute_not_exists(#answered) OR #answered.${attr('slot')} < :slot`,
  names: { '#answered': attribute, ...namesOf('slot') },
  values: { ':slot': slot },
});

/** The models' backoff map exists, and `model`'s backoff in it is absent or ends before `until`. */
export const modelBackoffEndsBefore = (model: string, until: number): Expr => ({
  expression: 'attribute_exists(#mb) AND (attribute_not_exists(#mb.#model) OR #mb.#model.#until < :until)',
  names: { '#mb': 'modelBackoff', '#model': model, '#until': 'until' },
  values: { ':until': until },
});

/** The capacity item has no models' backoff map yet. */
export const noModelBackoffs = (): Expr => ({
  expression: 'attribute_not_exists(#mb)',
  names: { '#mb': 'modelBackoff' },
  values: {},
});

/** A query's partition: its key `attribute` (the table's unless an index's) is `value`. */
export const partitionIs = (value: string, attribute: string = TABLE.partitionKey): Expr => ({
  expression: `${attr(attribute)} = :partition`,
  names: namesOf(attribute),
  values: { ':partition': value },
});

/** A query's sort key begins with `prefix`. */
export const sortKeyBeginsWith = (prefix: string, attribute: string = TABLE.sortKey): Expr => ({
  expression: `begins_with(${attr(attribute)}, :sortPrefix)`,
  names: namesOf(attribute),
  values: { ':sortPrefix': prefix },
});

/** A query's sort key is `value` exactly. */
export const sortKeyIs = (value: string, attribute: string = TABLE.sortKey): Expr => ({
  expression: `${attr(attribute)} = :sortIs`,
  names: namesOf(attribute),
  values: { ':sortIs': value },
});

/** A query's sort key is from `from` to `to`, both included. */
export const sortKeyBetween = (from: string, to: string, attribute: string = TABLE.sortKey): Expr => ({
  expression: `${attr(attribute)} BETWEEN :sortFrom AND :sortTo`,
  names: namesOf(attribute),
  values: { ':sortFrom': from, ':sortTo': to },
});

/** A query's sort key comes after `after` (a page's resumption). */
export const sortKeyAfter = (after: string, attribute: string = TABLE.sortKey): Expr => ({
  expression: `${attr(attribute)} > :sortAfter`,
  names: namesOf(attribute),
  values: { ':sortAfter': after },
});

/** A query's sort key is at most `bound`. */
export const sortKeyAtMost = (bound: string, attribute: string = TABLE.sortKey): Expr => ({
  expression: `${attr(attribute)} <= :sortAtMost`,
  names: namesOf(attribute),
  values: { ':sortAtMost': bound },
});

/** A query's sort key is before `bound`. */
export const sortKeyBefore = (bound: string, attribute: string = TABLE.sortKey): Expr => ({
  expression: `${attr(attribute)} < :sortBefore`,
  names: namesOf(attribute),
  values: { ':sortBefore': bound },
});

/** The capacity item is at version `n` as read (0: it was never written). */
export const capacityVersionIs = (n: number): Expr =>
  n === 0
    ? { expression: `attribute_not_exists(${attr('n')})`, names: namesOf('n'), values: {} }
    : { expression: `${attr('n')} = :version`, names: namesOf('n'), values: { ':version': n } };

/** The upstream's backoff is absent or over by `now` (a slot may be taken). */
export const notBackingOffAt = (now: number): Expr => ({
  expression: `attribute_not_exists(${attr('backoffUntil')}) OR ${attr('backoffUntil')} <= :slotNow`,
  names: namesOf('backoffUntil'),
  values: { ':slotNow': now },
});

/** The capacity item has no map of tasks in flight yet. */
export const noRunningMap = (): Expr => ({
  expression: `attribute_not_exists(${attr('running')})`,
  names: namesOf('running'),
  values: {},
});

/** Fewer than `cap` tasks are in flight (the map of `running` is smaller). */
export const runningBelow = (cap: number): Expr => ({
  expression: `size(${attr('running')}) < :runningCap`,
  names: namesOf('running'),
  values: { ':runningCap': cap },
});

/** Nobody claimed the look at `running` since `before` (epoch ms), or nobody ever did. */
export const healDue = (before: number): Expr => ({
  expression: `attribute_not_exists(${attr('healAt')}) OR ${attr('healAt')} <= :healBefore`,
  names: namesOf('healAt'),
  values: { ':healBefore': before },
});

/** No wake-up is pending before `at`: none, one already past at `now`, or one later than `at`. */
export const wakeFree = (at: number, now: number): Expr => ({
  expression: `attribute_not_exists(${attr('wakeAt')}) OR ${attr('wakeAt')} <= :wakeNow OR ${attr('wakeAt')} > :wakeAt`,
  names: namesOf('wakeAt'),
  values: { ':wakeNow': now, ':wakeAt': at },
});
