/**
 * The Usage page's account-wide monthly spend limit (no DOM: unit-tested as it is): what the credits
 * field holds as the API takes it, and the line that says what the limit stands at.
 */
import type { AccountLimit } from './api';
import { credits } from './format';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

/** "1 Dec 2026": the UTC day of an ISO time, the same in every locale; the text itself if it is no time. */
export function utcDay(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()] ?? ''} ${date.getUTCFullYear()}`;
}

/** "120 of 500 credits spent this month; resets 1 Dec 2026 (UTC)", or "No limit". */
export function accountLimitText(limit: AccountLimit | null): string {
  if (limit === null) return 'No limit';
  return `${limit.spent} of ${credits(limit.credits)} spent this month; resets ${utcDay(limit.resetsAt)} (UTC)`;
}

/**
 * The field's text as the limit's `credits`: whole credits from 0; a message for anything else (an
 * empty field too: removing is the Remove button's). The largest limit is the API's to judge: its 400
 * names the range, and the page shows it next to the field.
 */
export function limitFromInput(text: string): { value: number } | { message: string } {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) {
    return { message: 'Enter a whole number of credits (0 or more), or use Remove limit for none.' };
  }
  return { value: Number(trimmed) };
}
