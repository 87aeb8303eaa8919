/** How values read on the page. */

/** The task states of the API (`status` 0, 1, 2). */
export const STATUS_NAMES: Record<number, string> = { 0: 'Pending', 1: 'Completed', 2: 'Failed' };

/** `status` as a word. */
export function statusName(status: number): string {
  return STATUS_NAMES[status] ?? `Unknown (${status})`;
}

/**
 * A task's state as a word: a pending task says where it stands (`Queued`, with the tasks ahead of it
 * when known, or `Running`); an ended one its status.
 */
export function stateName(task: { status: number; stage?: string; queuedAhead?: number }): string {
  if (task.status !== 0 || task.stage === undefined) return statusName(task.status);
  if (task.stage === 'running') return 'Running';
  return task.queuedAhead === undefined ? 'Queued' : `Queued (${task.queuedAhead} ahead)`;
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
