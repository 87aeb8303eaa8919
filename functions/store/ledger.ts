/**
 * Reading the ledger and auditing it: for every user, the balance must equal the sum of the ledger's
 * deltas and never be negative.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { getBalance } from './accounts';
import { attr } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { userIdFromPk } from './keys';
import type { LedgerEntry } from './ledger-entry';
import { decodeCursor, type Page, queryAllWithPrefix, queryPage } from './pages';
import { TABLE } from './table';
import * as keys from './task-keys';

export type { LedgerEntry } from './ledger-entry';

/** One ledger entry as stored (the item minus its keys). */
function toLedgerEntry(item: Record<string, unknown>): LedgerEntry {
  const { userId: owner, kind, delta, at, taskId, grantId, model } = item;
  return {
    userId: String(owner),
    kind: kind as LedgerEntry['kind'],
    delta: Number(delta),
    at: String(at),
    ...(taskId === undefined ? {} : { taskId: String(taskId) }),
    ...(grantId === undefined ? {} : { grantId: String(grantId) }),
    ...(typeof model === 'string' ? { model } : {}),
  };
}

/** Ledger sort keys: `LEDGER#<ISO time>#<task or grant id>#<kind>`. */
const LEDGER_SORT_KEY = /^LEDGER#\d{4}-\d{2}-\d{2}T[\d:.]+Z#[\x21-\x7e]{1,300}#(grant|debit|refund)$/;

/** The sort key in a ledger cursor, or undefined when it is not one. */
export function decodeLedgerCursor(cursor: string): string | undefined {
  return decodeCursor(cursor, LEDGER_SORT_KEY);
}

/**
 * One page of a user's ledger, newest first (one consistent Query). Entries are ordered by their key
 * time: a refund sits at the time of the task it gives back (see `ledgerEntryItem`).
 */
export async function listLedgerPage(
  ctx: RetryingStoreContext,
  userId: string,
  options: { limit: number; afterSortKey?: string },
): Promise<Page<LedgerEntry>> {
  const prefix = keys.ledgerPrefix(userId);
  return queryPage(
    ctx,
    {
      partitionKeyName: TABLE.partitionKey,
      sortKeyName: TABLE.sortKey,
      partitionKey: prefix.PK,
      sortKeyPrefix: prefix.SK,
    },
    { limit: options.limit, consistent: true, ...(options.afterSortKey ? { afterSortKey: options.afterSortKey } : {}) },
    toLedgerEntry,
  );
}

/** A user's whole ledger, oldest first (a Query on the `LEDGER#` prefix, all pages, consistent). */
export async function listLedger(ctx: RetryingStoreContext, userId: string): Promise<LedgerEntry[]> {
  return (await queryAllWithPrefix(ctx, keys.ledgerPrefix(userId))).map(toLedgerEntry);
}

/** The audit of one user. */
export interface UserAudit {
  userId: string;
  balance: number;
  ledgerSum: number;
  /** Number of ledger entries summed. */
  entries: number;
  /** `balance === ledgerSum && balance >= 0` */
  ok: boolean;
}

/**
 * Compares a user's balance with the sum of the ledger. The two reads are not one snapshot: run it
 * when the user's credits are not moving (tests, operators), or expect a transient mismatch.
 */
export async function auditUser(ctx: RetryingStoreContext, userId: string): Promise<UserAudit> {
  const balance = await getBalance(ctx, userId);
  const ledger = await listLedger(ctx, userId);
  const ledgerSum = ledger.reduce((sum, entry) => sum + entry.delta, 0);
  return { userId, balance, ledgerSum, entries: ledger.length, ok: balance === ledgerSum && balance >= 0 };
}

/** Audits every account (a paged Scan for balance shard items, then `auditUser` for each, one at a time). */
export async function auditAll(ctx: RetryingStoreContext): Promise<{ ok: boolean; users: UserAudit[] }> {
  const userIds: string[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new ScanCommand({
            TableName: ctx.tableName,
            // Every balance shard names its user; a user whose credits never touched shard 0 still counts.
            FilterExpression: `begins_with(${attr(TABLE.sortKey)}, :account)`,
            ProjectionExpression: attr(TABLE.partitionKey),
            ExpressionAttributeNames: {
              [attr(TABLE.partitionKey)]: TABLE.partitionKey,
              [attr(TABLE.sortKey)]: TABLE.sortKey,
            },
            ExpressionAttributeValues: { ':account': keys.balancePrefix('').SK },
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        ),
      ctx.retry,
    );
    for (const item of out.Items ?? []) userIds.push(userIdFromPk(String(item[TABLE.partitionKey])));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  const users: UserAudit[] = [];
  for (const userId of new Set(userIds)) users.push(await auditUser(ctx, userId));
  return { ok: users.every((user) => user.ok), users };
}
