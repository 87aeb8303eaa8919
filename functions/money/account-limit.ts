/**
 * A change of the account-wide monthly spend limit (store/account-limit.ts holds its items and says how
 * it is enforced): reserve a version, stamp it on every balance shard, fit the counter shards to its
 * shares, and only then show it, in one transaction with its audit entry, composed from those two
 * contributors and answered by the declared precedence (money/findings.ts): a newer version already
 * shown stands.
 */
import {
  type AccountSpendLimit,
  getAccountSpendLimit,
  readAccountLimitSetting,
  reserveAccountLimitVersion,
  shownLimitUpdate,
  stampAccountLimit,
} from '../store/account-limit';
import type { AuditInput } from '../store/audit';
import type { RetryingStoreContext } from '../store/errors';
import { ACCOUNT_BUDGET, accountBudget, rebalanceSpendCounters } from '../store/spend';
import { transact } from '../store/transaction';
import type { LimitFinding } from './findings';
import { auditEntry } from './key-contributors';
import { newerLimitStands } from './key-limit';
import { type Contributor, compose, failedCondition } from './transaction';

/**
 * Sets (`credits`) or removes (`null`) the account's monthly limit, audited, and stamps it on the
 * balance shards; from its return on, every accept is judged by it, and not before it is shown
 * (store/account-limit.ts). Only accepts that hold a limit add to the month's counter
 * (`KEYSPEND#ACCOUNT#<month>`), so what counts is spending from the moment a limit is set, as for a
 * key's limit (a limit removed and set again keeps what was counted).
 */
export async function setAccountSpendLimit(
  ctx: RetryingStoreContext,
  input: { userId: string; credits: number | null; now: Date; audit?: Omit<AuditInput, 'details'> },
): Promise<AccountSpendLimit | null> {
  const credits = input.credits ?? undefined;
  const version = await reserveAccountLimitVersion(ctx, input.userId, input.now);
  try {
    await enforce(ctx, { userId: input.userId, version, credits, now: input.now });
  } catch (error) {
    // Part way: the shards reached carry terms nobody is shown. Put the shown ones back on every shard
    // (best effort: when this fails too, the next save stamps over both).
    await restoreShown(ctx, input.userId, input.now).catch(() => undefined);
    throw error;
  }
  const details = { credits: input.credits ?? 'none', budget: ACCOUNT_BUDGET };
  await show(ctx, {
    userId: input.userId,
    version,
    credits,
    now: input.now,
    ...(input.audit ? { audit: { ...input.audit, details } } : {}),
  });
  return getAccountSpendLimit(ctx, input.userId, input.now);
}

/** Stamps `credits` as version `version` on every shard and fits the counter shards to its shares. */
async function enforce(
  ctx: RetryingStoreContext,
  input: { userId: string; version: number; credits: number | undefined; now: Date },
): Promise<void> {
  await stampAccountLimit(ctx, input);
  // The month's counter shards within the new limit's shares (a lowered limit shrinks them; store/spend.ts).
  if (input.credits !== undefined) {
    await rebalanceSpendCounters(ctx, { userId: input.userId, limit: accountBudget(input.credits), now: input.now });
  }
}

/** Stamps the limit shown now on every shard, under a version of its own, and records that version. */
async function restoreShown(ctx: RetryingStoreContext, userId: string, now: Date): Promise<void> {
  const version = await reserveAccountLimitVersion(ctx, userId, now);
  const { credits } = await readAccountLimitSetting(ctx, userId);
  await enforce(ctx, { userId, version, credits, now });
  await show(ctx, { userId, version, credits, now });
}

/** The account's limit setting shown as `version`: a newer version shown already is `newer-limit`. */
function shownLimit(
  ctx: RetryingStoreContext,
  input: { userId: string; version: number; credits: number | undefined; now: Date },
): Contributor<LimitFinding> {
  return {
    name: 'account limit setting',
    items: [shownLimitUpdate(ctx, input)],
    read: (reasons) => (failedCondition(reasons) ? { kind: 'newer-limit' } : undefined),
  };
}

/**
 * Shows `credits` as version `version`, once every shard enforces it; a newer version already shown
 * stands (a later change finished first). Audited in the same transaction.
 */
async function show(
  ctx: RetryingStoreContext,
  input: { userId: string; version: number; credits: number | undefined; now: Date; audit?: AuditInput },
): Promise<void> {
  const transaction = compose<LimitFinding>([
    shownLimit(ctx, input),
    auditEntry(ctx, { userId: input.userId, audit: input.audit, now: input.now }),
  ]);
  try {
    await transact(ctx, transaction.items, ctx.retry);
  } catch (error) {
    newerLimitStands(error, transaction);
  }
}
