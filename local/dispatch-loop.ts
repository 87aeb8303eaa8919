/**
 * The local stand-in for the dispatcher's event sources (docs/design/dispatching.md): it calls
 * the same handler in a loop on DynamoDB Local. Where deployed a stream record (a task was queued) or a
 * delayed SQS message (capacity freed up) wakes the function, this loop looks at the queue again after
 * `idleMs` when it was empty (backing off while idle, local/idle-backoff.ts), or after the `waitMs` the
 * handler answered when capacity was spent.
 */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import type { DispatcherResult } from '../functions/dispatcher/handler';
import { idleBackoff } from './idle-backoff';

/** The dispatcher's Lambda handler, as the loop calls it (an empty stream batch: "look at the queue"). */
export type DispatchHandler = (event: DynamoDBStreamEvent) => Promise<DispatcherResult>;

export interface DispatchLoopOptions {
  handler: DispatchHandler;
  /** Pause after a run that found nothing queued (default 50 ms). */
  idleMs?: number;
  /** The longest pause after a row of runs that found nothing queued (default 400 ms; see local/idle-backoff.ts). */
  maxIdleMs?: number;
  log?: (line: string) => void;
}

export interface DispatchLoop {
  /**
   * Something was written: an idle pause, or a wait only for refused models, is cut to `idleMs` (a
   * capacity wait is not).
   */
  nudge(): void;
  stop(): Promise<void>;
}

/** Starts the loop; `stop()` resolves once the run in progress has finished. */
export function startDispatchLoop(options: DispatchLoopOptions): DispatchLoop {
  const idleMs = options.idleMs ?? 50;
  const backoff = idleBackoff(idleMs, options.maxIdleMs ?? 400);
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      let delay = idleMs;
      let idle = true;
      try {
        const run = await options.handler({ Records: [] });
        // A wait only for models the upstream refuses is looked through like an idle pause (and cut by a
        // write): a task of another model submitted meanwhile goes out at once, as its stream record
        // would send it deployed, not after the refused model's backoff.
        idle = (run.idle === true && run.waitMs === undefined) || run.waitsForRefusedModels === true;
        if (run.idle) delay = run.waitMs ?? backoff.nextIdleMs();
        else if (run.waitsForRefusedModels)
          delay = Math.min(run.waitMs ?? Number.POSITIVE_INFINITY, backoff.nextIdleMs());
        else {
          delay = run.waitMs ?? 0;
          backoff.reset();
        }
      } catch (error) {
        options.log?.(`dispatcher: ${(error as Error).message}`);
      }
      if (stopped) break;
      await backoff.sleep(Math.max(delay, 1), idle);
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
