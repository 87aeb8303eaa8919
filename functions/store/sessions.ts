/**
 * Browser sessions. Two items per session, written together:
 * - `SESSION#<hash>` / `SESSION`: what the authorizer reads (one consistent GetItem by the id's hash);
 * - `USER#<userId>` / `SESSION#<hash>`: the owner's list, so all of a user's sessions can be revoked.
 * Only `hashSessionId(id)` is stored; the id itself exists in the cookie and in `createSession`'s result.
 * Both items carry `ttl` = the absolute expiry, so DynamoDB removes them after the fact; the expiry is
 * enforced on every read, never left to TTL (which may lag by days).
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { epochSeconds } from '../core/api-key';
import { extendedIdleExpiry, generateOpaqueId, hashSessionId, type SessionTimes } from '../core/session';
import { type AuditInput, auditPut } from './audit';
import type { StoreContext } from './client';
import * as conditions from './condition-fragments';
import { and, conditionParams, update, updateParams, withKeyCondition } from './conditions';
import { isConditionalCheckFailed } from './errors';
import { accountKeys } from './keys';
import { TABLE } from './table';
import { transact } from './transaction';

/** A session as the authorizer and handlers see it (times in epoch seconds). */
export interface SessionRecord extends SessionTimes {
  userId: string;
  email: string;
  /** ISO 8601 sign-in time. */
  createdAt: string;
}

export interface CreateSessionInput {
  userId: string;
  email: string;
  idleSeconds: number;
  absoluteSeconds: number;
  now?: Date;
  audit?: AuditInput;
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

function toRecord(item: Record<string, unknown>): SessionRecord {
  const { userId, email, createdAt, idleExpiresAt, absoluteExpiresAt, revokedAt } = item;
  if (
    typeof userId !== 'string' ||
    typeof email !== 'string' ||
    typeof createdAt !== 'string' ||
    typeof idleExpiresAt !== 'number' ||
    typeof absoluteExpiresAt !== 'number'
  ) {
    throw new Error('Session item is malformed');
  }
  const record: SessionRecord = { userId, email, createdAt, idleExpiresAt, absoluteExpiresAt };
  if (typeof revokedAt === 'number') record.revokedAt = revokedAt;
  return record;
}

/**
 * Starts a session: a new random id, its hash stored with idle and absolute expiry. Returns the id
 * (for the cookie, once) and the record.
 */
export async function createSession(
  ctx: StoreContext,
  input: CreateSessionInput,
): Promise<{ sessionId: string; record: SessionRecord }> {
  const now = input.now ?? new Date();
  const nowSeconds = epochSeconds(now);
  const sessionId = generateOpaqueId();
  const hash = hashSessionId(sessionId);
  const absoluteExpiresAt = nowSeconds + input.absoluteSeconds;
  const record: SessionRecord = {
    userId: input.userId,
    email: input.email,
    createdAt: now.toISOString(),
    absoluteExpiresAt,
    idleExpiresAt: Math.min(absoluteExpiresAt, nowSeconds + input.idleSeconds),
  };
  const ttl = { [TABLE.ttlAttribute]: absoluteExpiresAt };
  const isNew = conditionParams(conditions.itemIsNew());
  const items: TransactItem[] = [
    { Put: { TableName: ctx.tableName, Item: { ...accountKeys.session(hash), ...record, ...ttl }, ...isNew } },
    {
      Put: {
        TableName: ctx.tableName,
        Item: {
          ...accountKeys.userSession(input.userId, hash),
          sessionHash: hash,
          createdAt: record.createdAt,
          ...ttl,
        },
        ...isNew,
      },
    },
  ];
  if (input.audit) items.push(auditPut(ctx, input.userId, input.audit, now));
  await transact(ctx, items);
  return { sessionId, record };
}

/** The session with this id hash, or `undefined`. Strongly consistent: a sign-out is seen at once. */
export async function getSessionByHash(ctx: StoreContext, sessionHash: string): Promise<SessionRecord | undefined> {
  const result = await ctx.doc.send(
    new GetCommand({ TableName: ctx.tableName, Key: accountKeys.session(sessionHash), ConsistentRead: true }),
  );
  return result.Item ? toRecord(result.Item) : undefined;
}

/**
 * Moves the idle expiry forward after activity (never past the absolute expiry). Conditional: a
 * revoked session stays revoked and an expiry never moves back. Returns whether it moved.
 */
export async function touchSession(
  ctx: StoreContext,
  input: { sessionHash: string; session: SessionTimes; idleSeconds: number; now: Date },
): Promise<boolean> {
  const idleExpiresAt = extendedIdleExpiry(input.session, epochSeconds(input.now), input.idleSeconds);
  try {
    await ctx.doc.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: accountKeys.session(input.sessionHash),
        ...updateParams(
          update({ set: { idleExpiresAt } }),
          and(conditions.itemExists(), conditions.notRevoked(), conditions.idleExpiryBefore(idleExpiresAt)),
        ),
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

function revokeItem(ctx: StoreContext, sessionHash: string, revokedAt: number): TransactItem {
  return {
    Update: {
      TableName: ctx.tableName,
      Key: accountKeys.session(sessionHash),
      ...updateParams(update({ set: { revokedAt } }), and(conditions.itemExists(), conditions.notRevoked())),
    },
  };
}

/**
 * Ends one session at once (sign-out). Returns false when it was already revoked or does not exist;
 * the audit entry is written only when something changed.
 */
export async function revokeSession(
  ctx: StoreContext,
  input: { userId: string; sessionHash: string; now?: Date; audit?: AuditInput },
): Promise<boolean> {
  const now = input.now ?? new Date();
  const items = [revokeItem(ctx, input.sessionHash, epochSeconds(now))];
  if (input.audit) items.push(auditPut(ctx, input.userId, input.audit, now));
  try {
    await transact(ctx, items);
    return true;
  } catch (error) {
    const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
    if (reasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
    throw error;
  }
}

/**
 * Ends every session of a user at once ("sign out everywhere"), independent of any API key. Returns
 * how many were still active. The audit entry is written once, after the sessions are revoked.
 */
export async function revokeAllSessions(
  ctx: StoreContext,
  input: { userId: string; now?: Date; audit?: AuditInput },
): Promise<number> {
  const now = input.now ?? new Date();
  const revokedAt = epochSeconds(now);
  const prefix = accountKeys.userSessionPrefix(input.userId);
  let revoked = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ctx.doc.send(
      new QueryCommand({
        TableName: ctx.tableName,
        ...withKeyCondition(
          { ExpressionAttributeNames: { '#hash': 'sessionHash' } },
          conditions.partitionIs(prefix.PK),
          conditions.sortKeyBeginsWith(prefix.SK),
        ),
        ProjectionExpression: '#hash',
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      if (typeof item.sessionHash !== 'string') continue;
      const update = revokeItem(ctx, item.sessionHash, revokedAt).Update;
      if (!update) continue;
      try {
        await ctx.doc.send(new UpdateCommand(update));
        revoked++;
      } catch (error) {
        // Already revoked (or removed by TTL): nothing to do for this one.
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  if (input.audit) {
    const audit = { ...input.audit, details: { ...input.audit.details, sessions: revoked } };
    await transact(ctx, [auditPut(ctx, input.userId, audit, now)]);
  }
  return revoked;
}
