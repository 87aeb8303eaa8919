/**
 * Account events (docs/api/webhooks.md): signed webhook events that are about the account, not a task.
 * A key's spending reaching 80% (`key.spend_limit.warning`) and 100% (`key.spend_limit.reached`) of its
 * limit in the current period, and the balance falling below the account's threshold (`credits.low`).
 * Each is sent once: per key budget, period and threshold, or per crossing of the balance threshold
 * (store/account-events.ts keeps the markers). Pure: thresholds, payloads and the threshold setting.
 */
import { randomBytes } from 'node:crypto';
import { ValidationError } from './errors';
import type { SpendPeriod } from './spend-limit';

export type AccountEventType = 'key.spend_limit.warning' | 'key.spend_limit.reached' | 'credits.low';

/** The share of a limit (in percent) whose reaching sends `key.spend_limit.warning`. */
export const SPEND_WARNING_PERCENT = 80;

/** The thresholds of a key's limit, by the percent of the limit each stands for. */
export type SpendThreshold = 80 | 100;

/** `data` of `key.spend_limit.warning` and `key.spend_limit.reached`. */
export interface KeySpendEventData {
  /** The key whose task crossed the threshold (keys of one rotation chain share one budget). */
  keyId: string;
  /** The limit in credits. */
  limit: number;
  period: SpendPeriod;
  /** Credits counted in the current period when the crossing was seen (it may be higher by now). */
  spent: number;
  /** When the period ends and the counter starts again at 0 (ISO 8601); null for `total`. */
  resetsAt: string | null;
}

/** `data` of `credits.low`. */
export interface CreditsLowEventData {
  /** The balance when the crossing was seen. */
  balance: number;
  /** The account's threshold (`lowBalanceThreshold`). */
  threshold: number;
}

export type AccountEventData = KeySpendEventData | CreditsLowEventData;

/**
 * The thresholds a key's spending has reached: 80 once `spent` is at least 80% of `limit`, 100 once it
 * is at least the limit (the next task that costs more than nothing is refused). A limit of 0 reaches
 * none: such a key never spends, so nothing crosses.
 */
export function spendThresholdsReached(spent: number, limit: number): SpendThreshold[] {
  if (!(limit > 0)) return [];
  const reached: SpendThreshold[] = [];
  // Whole numbers on both sides: spent / limit >= 80 / 100 without rounding.
  if (spent * 100 >= limit * SPEND_WARNING_PERCENT) reached.push(80);
  if (spent >= limit) reached.push(100);
  return reached;
}

/** The event of a threshold. */
export function spendEventType(threshold: SpendThreshold): AccountEventType {
  return threshold === 100 ? 'key.spend_limit.reached' : 'key.spend_limit.warning';
}

/** Whether the balance is below the account's threshold (none set: never). */
export function isCreditsLow(balance: number, threshold: number | undefined): boolean {
  return threshold !== undefined && balance < threshold;
}

/** The prefix of an account event's id; a delivery is keyed by it where a task's is keyed by the task id. */
export const ACCOUNT_EVENT_ID_PREFIX = 'evt_';

/** A new account event id, `evt_<32 hex>`. */
export function newAccountEventId(): string {
  return `${ACCOUNT_EVENT_ID_PREFIX}${randomBytes(16).toString('hex')}`;
}

/** Whether a delivery's id names an account event (else it is a task's id, a UUID). */
export function isAccountEventId(id: string): boolean {
  return id.startsWith(ACCOUNT_EVENT_ID_PREFIX);
}

/** The largest low-balance threshold accepted (as a spend limit's largest). */
export const MAX_LOW_BALANCE_THRESHOLD = 1_000_000_000;

/** A message (without the field's name) when `value` is not a valid threshold (null removes it), else undefined. */
export function lowBalanceThresholdProblem(value: unknown): string | undefined {
  if (value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_LOW_BALANCE_THRESHOLD) {
    return `must be a whole number of credits from 0 to ${MAX_LOW_BALANCE_THRESHOLD}, or null`;
  }
  return undefined;
}

/** The account's alert settings as the API and the CLI show them. */
export interface AccountAlertsView {
  /** `credits.low` is sent when the balance falls below this; null: never. */
  lowBalanceThreshold: number | null;
  /** Whether `credits.low` was sent for the current crossing (re-armed once the balance is seen at or above the threshold). */
  lowBalanceSent: boolean;
}

/**
 * `PUT /api/account/alerts` body: `{ lowBalanceThreshold: number | null }` (null removes it).
 * @throws ValidationError (400) naming the field
 */
export function parseAccountAlerts(body: unknown): { lowBalanceThreshold: number | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError({ fieldErrors: {}, formErrors: ['Request body must be a JSON object'] });
  }
  const input = body as Record<string, unknown>;
  const fieldErrors: Record<string, string[]> = {};
  for (const field of Object.keys(input)) {
    if (field !== 'lowBalanceThreshold') fieldErrors[field] = [`Unknown field "${field}"`];
  }
  if (!('lowBalanceThreshold' in input))
    fieldErrors.lowBalanceThreshold = ['Required: a whole number of credits or null'];
  else {
    const problem = lowBalanceThresholdProblem(input.lowBalanceThreshold);
    if (problem) fieldErrors.lowBalanceThreshold = [`Threshold ${problem}`];
  }
  if (Object.keys(fieldErrors).length > 0) throw new ValidationError({ fieldErrors, formErrors: [] });
  return { lowBalanceThreshold: input.lowBalanceThreshold as number | null };
}
