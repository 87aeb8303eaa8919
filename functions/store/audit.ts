/**
 * The account audit log: one item per action on a user's keys, sessions or account (who, what, when,
 * from which address), under the user's partition, readable by the owner. Entries are written in the
 * same transaction as the action they record, so an action without its entry cannot happen.
 */
import { randomUUID } from 'node:crypto';
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { StoreContext } from './client';
import { conditionParams, conditions } from './conditions';
import { keys } from './keys';

/** What happened. */
export type AuditAction =
  | 'account.invite'
  | 'session.sign-in'
  | 'session.sign-out'
  | 'session.revoke-all'
  | 'key.create'
  | 'key.rotate'
  | 'key.revoke';

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
      Item: { ...keys.audit(userId, at, entryId), ...entry },
      ...conditionParams(conditions.itemIsNew()),
    },
  };
}

const CURSOR = /^AUDIT#[\x21-\x7e]{1,200}$/;

/** An opaque page cursor from a sort key, and back (`undefined` when malformed). */
export function encodeAuditCursor(sortKey: string): string {
  return Buffer.from(sortKey, 'utf8').toString('base64url');
}
export function decodeAuditCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return undefined;
  const sortKey = Buffer.from(cursor, 'base64url').toString('utf8');
  return CURSOR.test(sortKey) ? sortKey : undefined;
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
  const prefix = keys.auditPrefix(userId);
  const page = await ctx.doc.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :sk)',
      ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK' },
      ExpressionAttributeValues: { ':pk': prefix.PK, ':sk': prefix.SK },
      ScanIndexForward: false,
      Limit: options.limit,
      ExclusiveStartKey: options.afterSortKey ? { PK: prefix.PK, SK: options.afterSortKey } : undefined,
    }),
  );
  const entries = (page.Items ?? []).map(toEntry);
  const last = page.LastEvaluatedKey?.SK;
  return typeof last === 'string' ? { entries, next: encodeAuditCursor(last) } : { entries };
}
