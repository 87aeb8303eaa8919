/**
 * The idle pause of the local loops that stand in for AWS's event sources (the dispatcher loop, the
 * stream pollers). AWS wakes a function when there is work; these loops look instead. An empty look
 * doubles the pause from `baseMs` up to `maxMs`, a look that found work starts again at `baseMs`, and a
 * `nudge()` (the local gateway calls it on every request: anything that writes comes through it) cuts a
 * longer idle pause to `baseMs`. So an idle stack costs a look every few seconds (the test suite keeps
 * two up for its whole run, each of which cost a fifth of a core looking every 50 to 100 ms), while work
 * that follows a request is still taken up within `baseMs`.
 */
export interface IdleBackoff {
  /** The pause after an empty look (`baseMs`, doubling up to `maxMs` over empty looks in a row). */
  nextIdleMs(): number;
  /** A look found work: the next empty look pauses `baseMs` again. */
  reset(): void;
  /** Sleeps `ms`; an idle sleep (`idle`) is cut short to `baseMs` by `nudge()`, any sleep by `cancel()`. */
  sleep(ms: number, idle: boolean): Promise<void>;
  /** Work may be coming: the next look is within `baseMs`. */
  nudge(): void;
  /** Ends the sleep in progress now (the loop is stopping). */
  cancel(): void;
}

/** A backoff from `baseMs` to `maxMs` (at least `baseMs`). */
export function idleBackoff(baseMs: number, maxMs: number): IdleBackoff {
  const longest = Math.max(maxMs, baseMs);
  let next = baseMs;
  let sleeping: { idle: boolean; until: number; timer: NodeJS.Timeout; wake: () => void } | undefined;
  const wakeNow = () => {
    const current = sleeping;
    sleeping = undefined;
    if (!current) return;
    clearTimeout(current.timer);
    current.wake();
  };
  return {
    nextIdleMs() {
      const pause = next;
      next = Math.min(next * 2, longest);
      return pause;
    },
    reset() {
      next = baseMs;
    },
    sleep(ms, idle) {
      return new Promise<void>((resolve) => {
        const wake = () => {
          sleeping = undefined;
          resolve();
        };
        sleeping = { idle, until: Date.now() + ms, timer: setTimeout(wake, ms), wake: resolve };
      });
    },
    nudge() {
      next = baseMs;
      const current = sleeping;
      if (!current?.idle || current.until - Date.now() <= baseMs) return;
      clearTimeout(current.timer);
      current.until = Date.now() + baseMs;
      current.timer = setTimeout(wakeNow, baseMs);
    },
    cancel: wakeNow,
  };
}
