/**
 * The local stand-in for the dispatcher's event sources (docs/design/dispatching.md): it calls
 * the same handler in a loop on DynamoDB Local. Where deployed a stream record (a task was queued) or a
 * delayed SQS message (capacity freed up) wakes the function, this loop looks at the queue again after
 * `idleMs` when it was empty, or after the `waitMs` the handler answered when capacity was spent. An
 * empty look doubles the pause up to `maxIdleMs`, and a run that found work starts again at `idleMs`:
 * an idle stack (the test suite keeps two running for its whole length) costs a few looks a second, not
 * twenty, while a task queued after a busy moment is still taken up within `idleMs`.
 */
import type { DispatcherResult } from '../functions/dispatcher/handler';

/** The dispatcher's Lambda handler, as the loop calls it. */
export type DispatchHandler = (event: unknown) => Promise<DispatcherResult>;

export interface DispatchLoopOptions {
  handler: DispatchHandler;
  /** Pause after a run that found nothing queued (default 50 ms). */
  idleMs?: number;
  /** The longest pause after a row of runs that found nothing queued (default 400 ms). */
  maxIdleMs?: number;
  log?: (line: string) => void;
}

export interface DispatchLoop {
  stop(): Promise<void>;
}

/** Starts the loop; `stop()` resolves once the run in progress has finished. */
export function startDispatchLoop(options: DispatchLoopOptions): DispatchLoop {
  const idleMs = options.idleMs ?? 50;
  const maxIdleMs = Math.max(options.maxIdleMs ?? 400, idleMs);
  let nextIdleMs = idleMs;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    });
  const loop = (async () => {
    while (!stopped) {
      let delay = idleMs;
      try {
        const run = await options.handler({ Records: [] });
        if (run.idle) {
          delay = run.waitMs ?? nextIdleMs;
          nextIdleMs = Math.min(nextIdleMs * 2, maxIdleMs);
        } else {
          delay = run.waitMs ?? 0;
          nextIdleMs = idleMs;
        }
      } catch (error) {
        options.log?.(`dispatcher: ${(error as Error).message}`);
      }
      if (stopped) break;
      await pause(Math.max(delay, 1));
    }
  })();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}
