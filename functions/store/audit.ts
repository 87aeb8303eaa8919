/**
 * The account audit log: one item per action on a user's keys, sessions or account (who, what, when,
 * from which address), under the user's partition, readable by the owner. Entries are written in the
 * same transaction as the action they record, so an action without its entry cannot happen.
 */
import { randomUUID } from 'node:crypto';
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { StoreContext } from './client';
import * as conditions from './condition-fragments';
import { conditionParams } from './conditions';
import { accountKeys } from './keys';
import { decodeCursor, queryPage } from './pages';
import { TABLE } from './table';

/** What happened. */
export type AuditAction =
  | 'account.invite'
  | 'account.close'
  | 'session.sign-in'
  | 'session.sign-out'
  | 'session.revoke-all'
  | 'key.create'
  | 'key.rotate'
  | 'key.revoke'
  | 'key.limit'
  | 'account.limit'
  | 'limits.set'
  | 'limits.reset';

/** Who did it: the account owner through a session, or an operator through the CLI. */
export type AuditActor = { type: 'session'; userId: string } | { type: 'operator' };

/** What an action tells the log; the store adds the time and an id. */
export interface AuditInput {
  action: AuditAction;
  actor: AuditActor;
  /** API Gateway's `sourceIp` of the request; absent for the CLI. */
  sourceIp?: string;
  /** The key acted on, when any. */
  keyId?: string;
  /** Small, non-secret facts (a new key id, a grace period, a count). Never keys or session ids. */
  details?: Record<string, string | number | boolean>;
}

/** One entry as the owner reads it. */
export interface AuditEntry extends AuditInput {
  entryId: string;
  at: string;
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The Put of an audit entry for `userId`, to be added to the transaction of the action it records. */
export function auditPut(ctx: StoreContext, userId: string, input: AuditInput, now: Date): TransactItem {
  const at = now.toISOString();
  const entryId = randomUUID();
  const entry: AuditEntry = { entryId, at, ...input };
  return {
    Put: {
      TableName: ctx.tableName,
      Item: { ...accountKeys.audit(userId, at, entryId), ...entry },
      ...conditionParams(conditions.itemIsNew()),
    },
  };
}

/** Audit sort keys: `AUDIT#<ISO time>#<entry id>`. */
const AUDIT_SORT_KEY = /^AUDIT#[\x21-\x7e]{1,200}$/;

/** The sort key in an audit cursor, or undefined when it is not one. */
export function decodeAuditCursor(cursor: string): string | undefined {
  return decodeCursor(cursor, AUDIT_SORT_KEY);
}

function toEntry(item: Record<string, unknown>): AuditEntry {
  const entry: AuditEntry = {
    entryId: String(item.entryId),
    at: String(item.at),
    action: item.action as AuditAction,
    actor: item.actor as AuditActor,
  };
  if (typeof item.sourceIp === 'string') entry.sourceIp = item.sourceIp;
  if (typeof item.keyId === 'string') entry.keyId = item.keyId;
  if (typeof item.details === 'object' && item.details !== null) {
    entry.details = item.details as AuditEntry['details'];
  }
  return entry;
}

/** A page of a user's audit log, newest first; `next` continues it. */
export async function listAudit(
  ctx: StoreContext,
  userId: string,
  options: { limit: number; afterSortKey?: string },
): Promise<{ entries: AuditEntry[]; next?: string }> {
  const prefix = accountKeys.auditPrefix(userId);
  const page = await queryPage(
    ctx,
    {
      partitionKeyName: TABLE.partitionKey,
      sortKeyName: TABLE.sortKey,
      partitionKey: prefix.PK,
      sortKeyPrefix: prefix.SK,
    },
    { limit: options.limit, ...(options.afterSortKey ? { afterSortKey: options.afterSortKey } : {}) },
    toEntry,
  );
  return page.next ? { entries: page.items, next: page.next } : { entries: page.items };
}
