/**
 * A dispatcher's run: dispatch steps (lifecycle/dispatch.ts), over every upstream
 * (lifecycle/dispatch-upstreams.ts), until the queue is empty or the capacity is spent, with a few
 * workers at once (docs/design/dispatching.md).
 */
import type { TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
import { nextQueued, readCapacity } from '../store/dispatch';
import { type DispatchObserver, type DispatchSettings, type DispatchStep, dispatchNext } from './dispatch';
import { type DispatchUpstream, dispatchAcross } from './dispatch-upstreams';
import type { ProviderLifecycle } from './lifecycle';

/** The shortest wait after a step failed. */
const MIN_BACKOFF_MS = 1_000;

export interface DispatchRun {
  sent: number;
  failed: number;
  /** Sends the upstream refused for their model (a 503): the task waits, the other models go on. */
  refused?: number;
  /**
   * Age (ms) of the oldest queued task the run saw: the candidates of its steps, and when it had to wait
   * without looking at the queue, the next ones in turn. 0 when the queue was empty.
   */
  oldestQueuedAgeMs?: number;
  /** When the queue was not emptied: how long until a slot frees up. */
  waitMs?: number;
  /**
   * The wait is only for models the upstream refuses for now (every worker that waited found nothing
   * else queued): new work of another model need not wait it out. The local loop lets a write cut it.
   */
  waitsForRefusedModels?: boolean;
  /** Nothing left queued. */
  idle: boolean;
}

export interface DispatchRunOptions {
  /** Steps run at once (a slow createTask does not hold the others up). Default 4. */
  workers?: number;
  /**
   * The upstreams list (docs/guides/upstreams.md): each step goes over them in priority order; absent,
   * the one upstream of `settings`.
   */
  upstreams?: readonly DispatchUpstream[];
  /** Stop starting steps once this returns false (a Lambda's time nearly spent). */
  hasTime?: () => boolean;
  /**
   * Runs beside the send of every task a step claims (not before it: the send never waits for it); the
   * run ends once all have settled. Its failures are logged, never the send's. The dispatcher's entry
   * notices account events here (lifecycle/account-events.ts); this module knows nothing of them.
   */
  onClaimed?: (task: TaskRecord) => Promise<unknown>;
}

/** Contended steps in a row after which a worker stops (others are sending; the next run goes on). */
const MAX_CONTENDED = 50;

/**
 * How soon the next run looks again after a run stopped with work left (its time budget spent, or too
 * many contended steps): deployed nothing else may wake the dispatcher (the stream wakes it only for
 * new inserts), so such a run asks for a wake-up like one that must wait.
 */
export const STOPPED_EARLY_WAIT_MS = 1_000;

/**
 * Runs dispatch steps until the queue is empty or the capacity is spent, with a few workers at once.
 * Errors of one step are logged and end that worker; the tasks stay queued.
 */
export async function dispatchQueued(
  lc: ProviderLifecycle,
  settings: DispatchSettings,
  log: Logger,
  options: DispatchRunOptions = {},
): Promise<DispatchRun> {
  const run: DispatchRun = { sent: 0, failed: 0, idle: false };
  const hasTime = options.hasTime ?? (() => true);
  let oldestAt: number | undefined;
  const besideSends: Promise<unknown>[] = [];
  const onClaimed = options.onClaimed;
  const observe: DispatchObserver = {
    queued(ref) {
      const at = Date.parse(ref.createdAt);
      if (Number.isFinite(at)) oldestAt = Math.min(oldestAt ?? at, at);
    },
    ...(onClaimed
      ? {
          claimed(task: TaskRecord) {
            besideSends.push(
              onClaimed(task).catch((error: unknown) =>
                log.warn('What runs beside a send failed; the send goes on', { taskId: task.taskId, error }),
              ),
            );
          },
        }
      : {}),
  };
  let idleWorkers = 0;
  let stoppedEarly = false;
  const worker = async () => {
    let contended = 0;
    for (;;) {
      if (!hasTime() || contended >= MAX_CONTENDED) {
        stoppedEarly = true;
        return;
      }
      let step: DispatchStep;
      try {
        step = options.upstreams
          ? await dispatchAcross(lc, options.upstreams, log, observe)
          : await dispatchNext(lc, settings, log, observe);
      } catch (error) {
        log.error('A dispatch step failed; the task stays queued', { error });
        run.waitMs = Math.min(run.waitMs ?? MIN_BACKOFF_MS, MIN_BACKOFF_MS);
        run.waitsForRefusedModels = false;
        return;
      }
      if (step.kind === 'sent') run.sent++;
      else if (step.kind === 'failed') run.failed++;
      else if (step.kind === 'refused') run.refused = (run.refused ?? 0) + 1;
      else if (step.kind === 'idle') {
        idleWorkers++;
        return;
      } else if (step.kind === 'wait') {
        run.waitMs = Math.min(run.waitMs ?? step.waitMs, step.waitMs);
        run.waitsForRefusedModels = step.refusedModels === true && run.waitsForRefusedModels !== false;
        return;
      }
      contended = step.kind === 'contended' ? contended + 1 : 0;
    }
  };
  const workers = Math.max(1, options.workers ?? 4);
  await Promise.all(Array.from({ length: workers }, worker));
  await Promise.all(besideSends);
  run.idle = idleWorkers === workers;
  if (stoppedEarly && !run.idle) run.waitMs = Math.min(run.waitMs ?? STOPPED_EARLY_WAIT_MS, STOPPED_EARLY_WAIT_MS);
  if (oldestAt === undefined && !run.idle) {
    // It waited (the upstream's window full, a backoff) without looking at the queue: look now.
    try {
      const state = await readCapacity(lc.store);
      const next = await nextQueued(lc.store, {
        ...(state.lastServed === undefined ? {} : { afterAccount: state.lastServed }),
        limit: settings.candidates ?? 8,
      });
      for (const ref of next) observe.queued(ref);
    } catch (error) {
      log.warn('Could not look at the queue for its age', { error });
    }
  }
  run.oldestQueuedAgeMs = oldestAt === undefined ? 0 : Math.max(0, lc.now().getTime() - oldestAt);
  return run;
}
