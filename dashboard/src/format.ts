/** How values read on the page. */

/** The task states of the API (`status` 0, 1, 2). */
export const STATUS_NAMES: Record<number, string> = { 0: 'Pending', 1: 'Completed', 2: 'Failed' };

/** `status` as a word. */
export function statusName(status: number): string {
  return STATUS_NAMES[status] ?? `Unknown (${status})`;
}

/** A date and time in the reader's locale, or a dash. */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** `+5` / `-3`: a ledger movement with its sign. */
export function signed(delta: number): string {
  return delta > 0 ? `+${delta}` : String(delta);
}

/** "1 credit" / "3 credits". */
export function credits(amount: number): string {
  return `${amount} ${Math.abs(amount) === 1 ? 'credit' : 'credits'}`;
}
