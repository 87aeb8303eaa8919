/**
 * The Credits page's low-balance alert (no DOM: unit-tested as it is): what the threshold field holds
 * as the API takes it, and what the page says about the current setting.
 */
import type { AccountAlerts } from './api';

/** The largest threshold the API takes (core/account-events.ts `MAX_LOW_BALANCE_THRESHOLD`). */
const MAX_THRESHOLD = 1_000_000_000;

/**
 * The field's text as `lowBalanceThreshold`: whole credits from 0, or null for an empty field (no
 * alert); a message for anything else, checked before anything is sent (the API checks it again).
 */
export function thresholdFromInput(text: string): { value: number | null } | { message: string } {
  const trimmed = text.trim();
  if (trimmed === '') return { value: null };
  if (!/^\d+$/.test(trimmed) || Number(trimmed) > MAX_THRESHOLD) {
    return { message: `Enter a whole number of credits from 0 to ${MAX_THRESHOLD}, or leave it empty for no alert.` };
  }
  return { value: Number(trimmed) };
}

/** What the page says about the setting. */
export function alertStatusText(alerts: AccountAlerts): string {
  if (alerts.lowBalanceThreshold === null) return 'No low-balance alert is set.';
  const base = `Your webhook endpoint gets credits.low when the balance falls below ${alerts.lowBalanceThreshold} credits.`;
  return alerts.lowBalanceSent
    ? `${base} It was sent; it is sent again after the balance is topped up above it.`
    : base;
}
