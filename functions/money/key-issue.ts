/**
 * A key's issue: one transaction composed from its contributors (the new key's three items, the
 * account's active-key count taking one more key under its cap, the audit entry) and answered by the
 * issue's declared precedence (money/findings.ts `ISSUE_PRECEDENCE`). The plaintext key exists only in
 * the return value, once.
 */
import { epochSeconds, generateApiKey, hashApiKey, keyPrefix } from '../core/api-key';
import { KeyLimitError, UsageError } from '../core/errors';
import type { SpendLimitInput } from '../core/spend-limit';
import { canonicalCidrs, withOptional } from '../store/api-key-records';
import { type ApiKeyRecord, type BeforeCommit, type IssuedApiKey, withKey } from '../store/api-keys';
import type { AuditInput } from '../store/audit';
import type { StoreContext } from '../store/client';
import { transact } from '../store/transaction';
import { ISSUE_PRECEDENCE, type KeyEndFinding } from './findings';
import { assertRoomForKey } from './key-cap';
import { activeKeyCount, auditEntry, newKey } from './key-contributors';
import { type ComposedTransaction, compose, decide } from './transaction';

/** Input of {@link putApiKey}. */
export interface PutApiKeyInput {
  userId: string;
  name: string;
  allowedCidrs?: readonly string[];
  /** Epoch seconds, in the future; omit for a key that never expires. */
  expiresAt?: number;
  /** A budget for the key (docs/api/spend-limits-and-usage.md#spend-limits); omit for none. */
  spendLimit?: SpendLimitInput;
  now?: Date;
  /** Recorded in the same transaction as the key (actions by customers and operators alike). */
  audit?: AuditInput;
  /**
   * Runs once the request is known to be valid, before anything is written: the new key exists only if
   * it succeeds (key issuing enrolls the key's API Gateway key here, so no key is ever active without it).
   */
  beforeCommit?: BeforeCommit;
  /**
   * The most active keys the account may hold (KeyLimitError beyond it, checked exactly in the key's
   * transaction); undefined: no cap (the local stack's demo key). The key is counted either way.
   */
  maxActiveKeys?: number;
}

/**
 * What a failed issue means, by the issue's precedence: the account at its key limit (`KeyLimitError`,
 * 409 naming it). A new key's item already there (`key-taken`: random ids collided) and any cancellation
 * no contributor reads come back unchanged, as does any other error.
 */
export function issueAnswer(
  error: unknown,
  transaction: ComposedTransaction<KeyEndFinding>,
  limit: number | undefined,
): unknown {
  const decided = decide(transaction.findings(error) ?? [], ISSUE_PRECEDENCE);
  if (decided === 'key-limit' && limit !== undefined) return new KeyLimitError(limit);
  return error;
}

/**
 * The issue's transaction: the new key's items (none may exist yet), the active-key count up by one
 * (under `limit` when there is one: `key-limit` when full) and the audit entry.
 */
export function issueTransaction(
  ctx: StoreContext,
  input: {
    record: ApiKeyRecord;
    keyHash: string;
    prefix: string;
    limit: number | undefined;
    audit: AuditInput | undefined;
    now: Date;
  },
): ComposedTransaction<KeyEndFinding> {
  const { record, limit } = input;
  return compose<KeyEndFinding>([
    newKey(ctx, { record, keyHash: input.keyHash, prefix: input.prefix }),
    activeKeyCount(ctx, { userId: record.userId, delta: 1, ...(limit === undefined ? {} : { limit }) }),
    auditEntry<KeyEndFinding>(ctx, { userId: record.userId, audit: input.audit, now: input.now }),
  ]);
}

/**
 * Issues a key: generates it, stores its hash, listing and id items in one transaction with the
 * account's active-key count (and the audit entry) and returns the plaintext once. Validates before
 * writing: non-empty user and name, well-formed CIDRs (stored in canonical form), an expiry in the
 * future. Beyond `maxActiveKeys`: KeyLimitError, found before `beforeCommit` runs when it can be, and
 * enforced exactly by the transaction.
 */
export async function putApiKey(ctx: StoreContext, input: PutApiKeyInput): Promise<IssuedApiKey> {
  const now = input.now ?? new Date();
  if (input.userId.length === 0) throw new UsageError('userId must not be empty');
  if (input.name.length === 0) throw new UsageError('name must not be empty');
  const allowedCidrs = canonicalCidrs(input.allowedCidrs ?? []);
  if (input.expiresAt !== undefined) {
    if (!Number.isSafeInteger(input.expiresAt)) throw new UsageError('expiresAt must be whole epoch seconds');
    if (input.expiresAt <= epochSeconds(now)) throw new UsageError('expiresAt must be in the future');
  }
  const { apiKey, keyId } = generateApiKey();
  const record = withOptional<ApiKeyRecord>(
    { keyId, userId: input.userId, name: input.name, allowedCidrs, createdAt: now.toISOString() },
    {
      expiresAt: input.expiresAt,
      ...(input.spendLimit
        ? {
            spendLimit: { credits: input.spendLimit.credits, period: input.spendLimit.period, budgetKeyId: keyId },
            spendLimitVersion: 1,
          }
        : {}),
    },
  );
  const prefix = keyPrefix(apiKey);
  const limit = input.maxActiveKeys;
  if (limit !== undefined) await assertRoomForKey(ctx, input.userId, limit, now);
  await input.beforeCommit?.({ keyId, userId: input.userId });
  const transaction = issueTransaction(ctx, {
    record,
    keyHash: hashApiKey(apiKey),
    prefix,
    limit,
    audit: input.audit && withKey(input.audit, keyId),
    now,
  });
  try {
    await transact(ctx, transaction.items);
  } catch (error) {
    throw issueAnswer(error, transaction, limit);
  }
  return { ...record, apiKey, prefix };
}
