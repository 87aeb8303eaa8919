/**
 * Spend limits per API key (docs/api/spend-limits-and-usage.md#spend-limits): a budget of credits per UTC day, UTC
 * month, or in
 * total, and the calendar arithmetic of its periods. Pure: the store (store/spend.ts) and the front
 * doors (key routes, CLI) share it.
 */

import type { KeySpendLimit } from './task';

/**
 * A key's budget as stored on its items (`spendLimit`, with `spendLimitVersion` beside it, which grows
 * with every change; 0 or absent: the key never had a limit). `budgetKeyId` names the counter the key
 * spends into: its own id, or after a rotation the first key of the chain, so a key in its rotation
 * grace and its replacement share one budget.
 */
export type { KeySpendLimit };

export const SPEND_PERIODS = ['day', 'month', 'total'] as const;
export type SpendPeriod = (typeof SPEND_PERIODS)[number];

/** A key's budget as a customer sets it. */
export interface SpendLimitInput {
  credits: number;
  period: SpendPeriod;
}

/** The largest limit accepted: well within DynamoDB's exact numbers and any account's credits. */
export const MAX_SPEND_LIMIT_CREDITS = 1_000_000_000;

export function isSpendPeriod(value: unknown): value is SpendPeriod {
  return typeof value === 'string' && (SPEND_PERIODS as readonly string[]).includes(value);
}

/** A message (without the field's name) when `value` is not a valid limit, else undefined. */
export function spendLimitProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'must be an object { credits, period } or null';
  }
  const { credits, period, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) return `has unknown field "${extra[0]}"`;
  if (
    typeof credits !== 'number' ||
    !Number.isSafeInteger(credits) ||
    credits < 0 ||
    credits > MAX_SPEND_LIMIT_CREDITS
  ) {
    return `credits must be a whole number from 0 to ${MAX_SPEND_LIMIT_CREDITS}`;
  }
  if (!isSpendPeriod(period)) return 'period must be "day", "month" or "total"';
  return undefined;
}

/**
 * The period that `at` falls in: its name in the counter's key (`2026-11-25`, `2026-11`, `total`), when
 * it started and when the next one starts (`resetsAt`, undefined for `total`), all UTC.
 */
export function spendPeriodOf(
  period: SpendPeriod,
  at: Date,
): { name: string; startsAt: Date | undefined; resetsAt: Date | undefined } {
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  if (period === 'day') {
    const day = at.getUTCDate();
    const startsAt = new Date(Date.UTC(year, month, day));
    return { name: startsAt.toISOString().slice(0, 10), startsAt, resetsAt: new Date(Date.UTC(year, month, day + 1)) };
  }
  if (period === 'month') {
    const startsAt = new Date(Date.UTC(year, month, 1));
    return { name: startsAt.toISOString().slice(0, 7), startsAt, resetsAt: new Date(Date.UTC(year, month + 1, 1)) };
  }
  return { name: 'total', startsAt: undefined, resetsAt: undefined };
}

/** The credits left under `limit` once `spent` is counted (never negative). */
export function creditsLeft(limit: number, spent: number): number {
  return Math.max(0, limit - spent);
}

/**
 * A key's limit as the authorizer passes it to the handlers (flat: REST authorizer context values are
 * strings, numbers or booleans). `spendLimitVersion` (absent: 0, a key that never had a limit) lets an
 * accept prove it holds the current limit (store/spend.ts).
 */
export interface SpendLimitContext {
  spendLimitVersion?: number;
  spendLimitCredits?: number;
  spendLimitPeriod?: SpendPeriod;
  spendBudgetKeyId?: string;
}

export function spendLimitContext(limit: KeySpendLimit | undefined, version: number | undefined): SpendLimitContext {
  return {
    ...(version ? { spendLimitVersion: version } : {}),
    ...(limit
      ? { spendLimitCredits: limit.credits, spendLimitPeriod: limit.period, spendBudgetKeyId: limit.budgetKeyId }
      : {}),
  };
}

/** The limit and its version back from an authorizer context (values may arrive as strings). */
export function spendLimitFromContext(context: Record<string, unknown> | null | undefined): {
  spendLimit?: KeySpendLimit;
  spendLimitVersion: number;
} {
  const version = Number(context?.spendLimitVersion ?? 0);
  const credits = Number(context?.spendLimitCredits);
  const period = context?.spendLimitPeriod;
  const budgetKeyId = context?.spendBudgetKeyId;
  const spendLimitVersion = Number.isSafeInteger(version) && version >= 0 ? version : 0;
  if (Number.isSafeInteger(credits) && isSpendPeriod(period) && typeof budgetKeyId === 'string' && budgetKeyId) {
    return { spendLimit: { credits, period, budgetKeyId }, spendLimitVersion };
  }
  return { spendLimitVersion };
}
