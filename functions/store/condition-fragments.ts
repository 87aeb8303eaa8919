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
