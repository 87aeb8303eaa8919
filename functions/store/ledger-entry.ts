/**
 * The shape of a ledger entry, shared by every operation that moves credits (grant, accept, refund)
 * and by the audit that sums them.
 */
import type { ItemKey, LedgerKind } from './keys';
import * as keys from './task-keys';

/** One movement of credits; the balance must always equal the sum of a user's deltas. */
export interface LedgerEntry {
  userId: string;
  kind: LedgerKind;
  /** +amount for a grant, -cost for a debit, +creditsUsed for a refund. */
  delta: number;
  /** ISO 8601 time the movement happened. */
  at: string;
  /** The task a debit or refund belongs to. */
  taskId?: string;
  /** The grant's id (operator-chosen or generated). */
  grantId?: string;
  /** The task's model, written on a debit and refund when the task is deleted (store/task-removal.ts). */
  model?: string;
}

/**
 * The item for a ledger entry. `keyTime` orders the entry in the user's ledger; it is the event time,
 * except for refunds, which use the task's creation time so that a task has exactly one possible refund
 * key (see `failAndRefund`).
 */
export function ledgerEntryItem(entry: LedgerEntry, keyTime: string = entry.at): ItemKey & LedgerEntry {
  const refId = entry.kind === 'grant' ? entry.grantId : entry.taskId;
  if (!refId)
    throw new Error(`A ${entry.kind} ledger entry needs its ${entry.kind === 'grant' ? 'grantId' : 'taskId'}`);
  return { ...keys.ledger(entry.userId, keyTime, refId, entry.kind), ...entry };
}
