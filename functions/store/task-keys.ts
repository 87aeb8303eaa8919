/**
 * The keys of an account's task and money items (balance shards, key-end guards, spend and usage
 * counters, tasks, ledger, idempotency, the dispatch queue), one export each, used as a namespace:
 * `import * as keys from './task-keys'`. As one object they were all in every bundle that addresses
 * any item; as exports a bundle keeps only the builders it calls (measured: it kept the submit
 * functions within their bundle budget with usage counting). The other key families are in keys.ts.
 */
import {
  BALANCE_PREFIX,
  DISPATCH_QUEUE,
  type ItemKey,
  type LedgerKind,
  pendingShardKey,
  queueAccount,
  shardOf,
  USAGE,
  USER,
} from './keys';

/** The account's first balance shard; also the single balance item of accounts made before sharding. */
export const account = (userId: string): ItemKey => balanceShard(userId, 0);
/**
 * Balance shard `n` of a user (0 <= n < TABLE.balanceShards). Shard 0 is `ACCOUNT`, the others
 * `ACCOUNT#<n>`: one `begins_with(SK, 'ACCOUNT')` Query reads them all, and an account written before
 * sharding is simply an account whose credits all sit in shard 0.
 */
export const balanceShard = (userId: string, shard: number): ItemKey => ({
  PK: `${USER}${userId}`,
  SK: shard === 0 ? BALANCE_PREFIX : `${BALANCE_PREFIX}#${shard}`,
});
export const balancePrefix = (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: BALANCE_PREFIX });
/**
 * Key-end guard `n` of API key `keyId` (one per balance shard): when the key ends, for the accept that
 * debits shard `n` with that key. Items of their own, not attributes of the shards, so ending keys
 * never grows the items every accept writes.
 */
export const keyEndGuard = (userId: string, keyId: string, shard: number): ItemKey => ({
  PK: `${USER}${userId}`,
  SK: `KEYEND#${keyId}#${shard}`,
});
/**
 * The spend counter of key `budgetKeyId`'s limit for one period (`2026-11-25`, `2026-11`, `total`):
 * `spent` is what accepts with a limited key added in that period, less refunds (store/spend.ts).
 */
export const spendCounter = (userId: string, budgetKeyId: string, periodName: string): ItemKey => ({
  PK: `${USER}${userId}`,
  SK: `KEYSPEND#${budgetKeyId}#${periodName}`,
});
/** A spend counter by the sort key a task recorded (`TaskRecord.spendCounter`). */
export const spendCounterBySk = (userId: string, sk: string): ItemKey => ({ PK: `${USER}${userId}`, SK: sk });
/**
 * Usage counter `shard` of one UTC day (store/usage.ts): sharded like the balance, and written with
 * the shard the transaction debits or credits, so counting adds no contention of its own. One Query
 * over `USAGE#<from>` .. `USAGE#<to>#~` reads a range.
 */
export const usageCounter = (userId: string, day: string, shard: number): ItemKey => ({
  PK: `${USER}${userId}`,
  SK: `${USAGE}${day}#${String(shard).padStart(2, '0')}`,
});
export const task = (userId: string, taskId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: `TASK#${taskId}` });
/** `time` first so a user's ledger reads in order; the id and kind make the entry unique. */
export const ledger = (userId: string, isoTime: string, refId: string, kind: LedgerKind): ItemKey => ({
  PK: `${USER}${userId}`,
  SK: `LEDGER#${isoTime}#${refId}#${kind}`,
});
export const ledgerPrefix = (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'LEDGER#' });
export const idempotency = (userId: string, idempotencyKey: string): ItemKey => ({
  PK: `${USER}${userId}`,
  SK: `IDEMPOTENCY#${idempotencyKey}`,
});
/** A task's entry in the user's task listing (`GSI2`), newest first by creation time. */
export const taskListing = (
  userId: string,
  taskId: string,
  createdAtIso: string,
): { GSI2PK: string; GSI2SK: string } => ({
  GSI2PK: `${USER}${userId}`,
  GSI2SK: `${createdAtIso}#${taskId}`,
});
/**
 * A queued task's entry in the dispatch queue: one partition for every account, sorted by account,
 * then by age, so one Query finds the next account after a cursor and its oldest task.
 */
export const queueEntry = (userId: string, createdAtIso: string, taskId: string): ItemKey => ({
  PK: DISPATCH_QUEUE,
  SK: `${queueAccount(userId)}#${createdAtIso}#${taskId}`,
});
/** Sparse pending-task index entry; the shard spreads a burst over index partitions. */
export const pendingIndex = (taskId: string, createdAtIso: string): { GSI1PK: string; GSI1SK: string } => ({
  GSI1PK: pendingShardKey(shardOf(taskId)),
  GSI1SK: `${createdAtIso}#${taskId}`,
});
