/**
 * The local stand-in for a scheduled function's EventBridge rule (the sweeper): it runs the handler every
 * `intervalMs`, a run never overlapping the previous one. A run that answers `{ idle: true }` (it found
 * nothing to do) doubles the pause before the next one, up to `idleMaxMs`, and `nudge()` (a request
 * through the gateway, a write by the stack's own handlers) brings the next run back within `intervalMs`
 * (local/idle-backoff.ts).
 *
 * Why: an idle sweep is 30 queries to DynamoDB Local (16 pending-task shards, 8 retention shards, 4
 * webhook-due shards, the webhook queue, the API Gateway keys), and the test suite keeps stacks sweeping
 * every 2 s for its whole run: 15 requests a second each, most of an idle stack's load on the JVM. Work
 * that a sweep finds comes with a write or a request (a task submitted, a delivery failed), which brings
 * the sweeps back to `intervalMs`; what falls due with nothing else happening (a webhook retry, a task's
 * maximum age) is swept at most one idle pause late, and never later than `idleMaxMs` (deployed,
 * EventBridge sweeps every minute, so nothing may count on sooner).
 */
import { idleBackoff } from './idle-backoff';

export interface ScheduledRunsOptions {
  /** The scheduled function; a result `{ idle: true }` lets the pauses grow. */
  run: () => Promise<unknown>;
  intervalMs: number;
  /** The longest pause after idle runs in a row (at least `intervalMs`). */
  idleMaxMs: number;
  log: (line: string) => void;
  name: string;
}

export interface ScheduledRuns {
  /** Work may be coming: the next run is within `intervalMs`. */
  nudge(): void;
  /** Resolves once the run in progress (if any) has finished. */
  stop(): Promise<void>;
}

function answeredIdle(result: unknown): boolean {
  return typeof result === 'object' && result !== null && (result as { idle?: unknown }).idle === true;
}

/** Starts the runs; the first one after `intervalMs`, as an EventBridge rule's first. */
export function startScheduledRuns(options: ScheduledRunsOptions): ScheduledRuns {
  const backoff = idleBackoff(options.intervalMs, options.idleMaxMs);
  let stopped = false;
  const loop = (async () => {
    await backoff.sleep(options.intervalMs, false);
    while (!stopped) {
      let idle = false;
      try {
        idle = answeredIdle(await options.run());
      } catch (error) {
        options.log(`${options.name} failed: ${(error as Error).message}`);
      }
      if (stopped) break;
      if (!idle) backoff.reset();
      // The pause after a run with work is not cut by nudges: the interval is the schedule's.
      await backoff.sleep(idle ? backoff.nextIdleMs() : options.intervalMs, idle);
    }
  })();
  return {
    nudge: () => backoff.nudge(),
    async stop() {
      stopped = true;
      backoff.cancel();
      await loop;
    },
  };
}
