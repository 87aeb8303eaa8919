/**
 * Closed-beta invitations: `INVITE#<email>` / `INVITE` maps a normalised e-mail address to the user id
 * that person signs in as. Inviting creates the account (balance 0, no ledger entry: the sum of an
 * empty ledger is 0) in the same transaction. Sign-in looks the invitation up and, the first time,
 * binds it to the identity provider's subject, so a later account with the same address at the
 * provider cannot take it over.
 */
import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { UsageError } from '../core/errors';
import { normalizeEmail } from '../core/session';
import { type AuditInput, auditPut } from './audit';
import type { StoreContext } from './client';
import * as conditions from './condition-fragments';
import { and, conditionParams, update, updateParams, withCondition } from './conditions';
import { cancellationReasons, isConditionalCheckFailed } from './errors';
import { accountKeys } from './keys';
import * as keys from './task-keys';
import { transact } from './transaction';

export interface Invite {
  email: string;
  userId: string;
  invitedAt: string;
  /** `issuer|subject` of the identity that first signed in with this invitation. */
  identity?: string;
  /**
   * When the account's sessions got their API Gateway key in a usage plan (deployed), once for the
   * account's life: sign-in then makes no API Gateway call. Absent: not yet (or an account from before).
   */
  sessionUsageEnrolledAt?: string;
}

/** A new user id for an invitation without `--user`: `usr_` and 16 random hex characters. */
export function generateUserId(): string {
  return `usr_${randomBytes(8).toString('hex')}`;
}

/**
 * Invites `email` as `userId` and creates the account when missing. Inviting the same address again
 * with the same user changes nothing (`created: false`); with another user it is refused.
 */
export async function inviteAccount(
  ctx: StoreContext,
  input: { email: string; userId: string; now?: Date; audit?: AuditInput },
): Promise<{ email: string; userId: string; created: boolean }> {
  const email = normalizeEmail(input.email);
  if (email === undefined) throw new UsageError(`not an e-mail address: ${JSON.stringify(input.email)}`);
  if (input.userId.length === 0) throw new UsageError('userId must not be empty');
  const now = input.now ?? new Date();
  const at = now.toISOString();
  const existing = await getInvite(ctx, email);
  if (existing) {
    if (existing.userId !== input.userId) {
      throw new UsageError(`${email} is already invited as user ${existing.userId}`);
    }
    return { email, userId: existing.userId, created: false };
  }
  const items = [
    {
      Put: {
        TableName: ctx.tableName,
        Item: { ...accountKeys.invite(email), email, userId: input.userId, invitedAt: at },
        ...conditionParams(conditions.itemIsNew()),
      },
    },
    {
      Update: {
        TableName: ctx.tableName,
        Key: keys.account(input.userId),
        ...updateParams(
          update({ set: { userId: input.userId, updatedAt: at }, setIfMissing: { balance: 0, createdAt: at } }),
        ),
      },
    },
    ...(input.audit ? [auditPut(ctx, input.userId, input.audit, now)] : []),
  ];
  try {
    await transact(ctx, items);
  } catch (error) {
    if (cancellationReasons(error)?.[0]?.Code === 'ConditionalCheckFailed') {
      // Invited concurrently: answer as a repeat would.
      return inviteAccount(ctx, input);
    }
    throw error;
  }
  return { email, userId: input.userId, created: true };
}

/** The invitation for an address (normalised here), or `undefined`. */
export async function getInvite(ctx: StoreContext, email: string): Promise<Invite | undefined> {
  const normalized = normalizeEmail(email);
  if (normalized === undefined) return undefined;
  const result = await ctx.doc.send(
    new GetCommand({ TableName: ctx.tableName, Key: accountKeys.invite(normalized), ConsistentRead: true }),
  );
  const item = result.Item;
  if (!item || typeof item.userId !== 'string' || typeof item.invitedAt !== 'string') return undefined;
  const invite: Invite = { email: normalized, userId: item.userId, invitedAt: item.invitedAt };
  if (typeof item.identity === 'string') invite.identity = item.identity;
  if (typeof item.sessionUsageEnrolledAt === 'string') invite.sessionUsageEnrolledAt = item.sessionUsageEnrolledAt;
  return invite;
}

/**
 * Binds the invitation to the identity signing in, the first time; afterwards only that identity may
 * use it. Returns false when another identity holds it.
 */
export async function bindInvite(ctx: StoreContext, input: { email: string; identity: string }): Promise<boolean> {
  const normalized = normalizeEmail(input.email);
  if (normalized === undefined) return false;
  try {
    await ctx.doc.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: accountKeys.invite(normalized),
        ...withCondition(
          {
            UpdateExpression: 'SET #identity = :identity',
            ExpressionAttributeNames: { '#identity': 'identity' },
            ExpressionAttributeValues: { ':identity': input.identity },
          },
          and(conditions.itemExists(), conditions.identityUnboundOr(input.identity)),
        ),
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/** Records that the account's sessions are enrolled in its usage plan, so no later sign-in enrolls again. */
export async function markSessionUsageEnrolled(ctx: StoreContext, input: { email: string; now?: Date }): Promise<void> {
  const normalized = normalizeEmail(input.email);
  if (normalized === undefined) return;
  await ctx.doc.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: accountKeys.invite(normalized),
      ...updateParams(
        update({ set: { sessionUsageEnrolledAt: (input.now ?? new Date()).toISOString() } }),
        conditions.itemExists(),
      ),
    }),
  );
}
