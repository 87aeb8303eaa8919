/** What the router hands every page. */
export interface PageContext {
  /** False once the reader has moved to another page: polling stops then. */
  alive(): boolean;
  /** Re-reads the session's balance into the header. */
  refreshBalance(): Promise<void>;
  /** The query of the hash (`#/tasks?status=1`). */
  params: URLSearchParams;
  setTitle(title: string): void;
}

/** How long pages wait between reads of something pending. */
export const POLL_INTERVAL_MS = 3000;

/** Resolves after `ms`, for polling loops (never used to wait for the page itself). */
export function pause(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
