/**
 * The dispatcher: sends queued tasks to the provider within its declared capacity, accounts taking
 * turns (docs/design/dispatching.md). The same code runs deployed (functions/dispatcher,
 * woken by the table's stream and by delayed SQS messages) and locally (local/dispatch-loop.ts).
 *
 * A step never waits: when the upstream's window is full or it asked us to back off, the step says how
 * long to wait, and whoever drives it (SQS's delivery delay deployed, a timer locally) comes back then.
 */
import type { CreateRateLimit } from '../core/provider-capacity';
import { boundRetryAfter, DEFAULT_MAX_RETRY_AFTER_SECONDS } from '../core/retry-after';
import type { TaskRecord } from '../core/task';
import type { Logger } from '../observability/logger';
import { ProviderRejectedError, ProviderUnavailableError } from '../provider/port';
import {
  backOff,
  backOffModel,
  type CapacityState,
  claimHeal,
  claimSend,
  deleteQueueEntry,
  holdInFlight,
  isSlotKey,
  leaveInFlight,
  nextQueued,
  type QueuedRef,
  readCapacity,
  recordAnswered,
  releaseSend,
  slotKey,
  takeSlot,
} from '../store/dispatch';
import { getTask } from '../store/tasks';
import { markHealthy, markUnhealthy, type SendOutcome } from '../store/upstream-health';
import { failTask } from './finish-task';
import type { ProviderLifecycle } from './lifecycle';
import { outcomeUnknown, recordCreated } from './outcome-unknown';
import { createAtProvider } from './send-to-provider';
import { countUpstreamSend } from './upstream-counters';

export interface DispatchSettings {
  /** The upstream's create rate; undefined: no limit (sends as fast as the queue empties). */
  createRateLimit?: CreateRateLimit;
  /**
   * Added to the upstream's window (ms), so a send recorded here just after the window opened still
   * arrives upstream after it did. Default 500.
   */
  marginMs?: number;
  /** Queue entries looked at per step: more than the sends in flight at once. Default 8. */
  candidates?: number;
  /**
   * The upstream's cap on the service's tasks in flight (sent, not finished); undefined: none. At the
   * cap the step sends nothing and answers `wait` ({@link IN_FLIGHT_WAIT_MS}).
   */
  maxInFlight?: number;
  /**
   * The longest `Retry-After` honoured (s): a longer one is cut to it and logged. Default
   * {@link DEFAULT_MAX_RETRY_AFTER_SECONDS}.
   */
  maxRetryAfterSeconds?: number;
  /**
   * Refusals of one task's model (503s on its creates) after which the task fails `PROVIDER_UNAVAILABLE`,
   * refunded, instead of waiting at the head of its account's queue. Default
   * {@link DEFAULT_MAX_REFUSALS_PER_TASK}.
   */
  maxRefusalsPerTask?: number;
  /** With an upstreams list: the upstream these settings are (recorded on the tasks it takes). */
  upstream?: string;
  /** Models this upstream does not serve: their tasks are passed over as a refused model's are. */
  excludeModels?: readonly string[];
  /** Takes only tasks without `providerInput` (an upstream of another profile than submit checked it by). */
  withoutProviderInput?: boolean;
  /**
   * Whether another upstream serves `model`: a send that failed here (5xx, unreachable) then cools this
   * upstream off and goes back to the queue for that one, not counted against the task.
   */
  failoverFor?: (model: string) => boolean;
  /**
   * The shortest backoff (ms): every dispatcher pauses this long after a failed send, and a refusal
   * without `Retry-After` backs off this long first, doubling while refusals repeat. Default
   * {@link MIN_BACKOFF_MS} (`PROVIDER_MIN_BACKOFF_MS`; tests shorten it).
   */
  minBackoffMs?: number;
  /**
   * The first cool-off (ms) of an upstream of a list whose send failed, doubled while failures repeat.
   * Default {@link COOL_OFF_MS} (`PROVIDER_COOL_OFF_MS`; tests shorten it).
   */
  coolOffMs?: number;
}

/** The first cool-off of an upstream whose send failed, doubled while failures repeat (at most 60 s). */
export const COOL_OFF_MS = 5_000;

/** The default of {@link DispatchSettings.maxRefusalsPerTask}. */
export const DEFAULT_MAX_REFUSALS_PER_TASK = 5;

/** How long a step at the cap on tasks in flight asks to wait before it looks again. */
export const IN_FLIGHT_WAIT_MS = 1_000;

/**
 * An entry of `running` whose task is not at the upstream (a slot's reservation, a task back in the
 * queue) is healed only after this long: a dispatcher may be between taking its slot and claiming or
 * recording its task, one write each.
 */
const RUNNING_GRACE_MS = 30_000;

/**
 * At the cap, the listed tasks are read at most this often (by one dispatcher, `claimHeal`): a removal
 * lost costs at most this long at the cap, and a cap legitimately reached costs no reads per step.
 */
const HEAL_EVERY_MS = 5_000;

export type DispatchStep =
  /** One task reached the provider (`stage: running`). */
  | { kind: 'sent'; taskId: string }
  /** The create's answer was lost (stage `unknown`): the task waits for the callback, never resent. */
  | { kind: 'unknown'; taskId: string }
  /** The task failed and was refunded: the provider refused its input (`PROVIDER_REJECTED`) or kept failing (`PROVIDER_UNAVAILABLE`). */
  | { kind: 'failed'; taskId: string }
  /**
   * The provider refused the task's model for now (a 503): that model backs off, the task waits in its
   * place, and other models' tasks may be sent at once.
   */
  | { kind: 'refused'; taskId: string; model: string; waitMs: number }
  /** Nothing is queued. */
  | { kind: 'idle' }
  /** Capacity spent or a backoff: come back in `waitMs` (`refusedModels`: only refused models' tasks wait). */
  | { kind: 'wait'; waitMs: number; refusedModels?: true }
  /** Another dispatcher took the slot or the task first: try again at once. */
  | { kind: 'contended' };

/**
 * The shortest backoff (the default of {@link DispatchSettings.minBackoffMs}) and the longest, after a
 * failed send or a refusal without `Retry-After`.
 */
export const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
/** A refusal this soon after the previous backoff ended counts as a repeat: the backoff doubles. */
const REPEAT_WITHIN_MS = 10_000;

/**
 * The token bucket that spreads sends: refilled at the upstream's rate, holding three quarters of a
 * window's worth, so a burst takes that at once and the rest at an even pace. A newcomer then finds the
 * window not yet full and waits one pace step for its turn, not a whole window (the ring below still
 * caps any window at the rate); a larger bucket would fill the window at once, a smaller one would
 * stretch every window's tail.
 * @returns the tokens at `now`, or undefined without a rate
 */
function tokensAt(state: CapacityState, now: number, rate: CreateRateLimit | undefined): number | undefined {
  if (!rate) return undefined;
  const size = Math.max(1, Math.ceil((rate.requests * 3) / 4));
  const perMs = rate.requests / (rate.windowSeconds * 1000);
  if (state.tokens === undefined || state.tokensAt === undefined) return size;
  return Math.min(size, state.tokens + Math.max(0, now - state.tokensAt) * perMs);
}

/**
 * A slot frees up one window after the upstream ANSWERED its send (`recordAnswered`): the upstream
 * counted the request at some moment before it answered, so that time is never too early, whatever the
 * request's delay on the way. The margin covers only the difference between the clocks of two
 * dispatchers (each synchronised by NTP on Lambda, the same clock locally).
 */
const DEFAULT_MARGIN_MS = 200;

/**
 * A send not answered after this long is taken as answered then: its dispatcher crashed or lost its
 * write (the provider call itself gives up after 10 s).
 */
const ANSWER_TIMEOUT_MS = 30_000;

/** How soon to look again when the slot that frees next waits only for its send's answer. */
const ANSWER_POLL_MS = 100;

/** When the next slot frees up (epoch ms), or undefined when one is free at `now`. */
function nextSlotAt(state: CapacityState, now: number, settings: DispatchSettings): number | undefined {
  if (state.backoffUntil !== undefined && state.backoffUntil > now) return state.backoffUntil;
  const rate = settings.createRateLimit;
  if (!rate) return undefined;
  let freeAt = now;
  if (state.sends.length >= rate.requests) {
    const windowMs = rate.windowSeconds * 1000 + (settings.marginMs ?? DEFAULT_MARGIN_MS);
    // The oldest of the last R slots: `sends` holds the last slots' times, the newest being slot `n`.
    const oldestSlot = state.n - rate.requests + 1;
    const takenAt = state.sends[state.sends.length - rate.requests] ?? 0;
    const answeredAt =
      state.answered[oldestSlot] ?? (now - takenAt >= ANSWER_TIMEOUT_MS ? takenAt + ANSWER_TIMEOUT_MS : undefined);
    if (answeredAt !== undefined) freeAt = Math.max(freeAt, answeredAt + windowMs);
    // Still waiting for its answer: not before the window has passed since it was taken, then look often.
    else freeAt = Math.max(freeAt, takenAt + windowMs, now + ANSWER_POLL_MS);
  }
  const tokens = tokensAt(state, now, rate) ?? 1;
  if (tokens < 1)
    freeAt = Math.max(freeAt, now + Math.ceil(((1 - tokens) * rate.windowSeconds * 1000) / rate.requests));
  return freeAt > now ? freeAt : undefined;
}

/**
 * One dispatch step: read the capacity item; when a slot is free, take it for the next account in turn
 * (a conditional write), claim that account's oldest queued task (another conditional write, which a
 * cancel can beat) and send it.
 */
export async function dispatchNext(
  lc: ProviderLifecycle,
  settings: DispatchSettings,
  log: Logger,
  observe?: DispatchObserver,
): Promise<DispatchStep> {
  const now = lc.now().getTime();
  const state = await readCapacity(lc.store);
  const freeAt = nextSlotAt(state, now, settings);
  if (freeAt !== undefined) return { kind: 'wait', waitMs: freeAt - now };
  // The models the upstream refuses for now: their tasks are passed over, the others go on.
  const backedOff = Object.entries(state.modelBackoff).filter(([, backoff]) => backoff.until > now);
  const notServed = settings.excludeModels ?? [];
  const excludeModels = [...notServed, ...backedOff.map(([model]) => model)];
  // An upstream back from a cool-off is probed with a single send: none while its last one is unanswered.
  const lastSlotAt = state.sends.at(-1);
  if (state.unhealthySince !== undefined && lastSlotAt !== undefined && state.answered[state.n] === undefined) {
    if (now - lastSlotAt < ANSWER_TIMEOUT_MS) return { kind: 'wait', waitMs: ANSWER_POLL_MS };
  }
  const candidates = await nextQueued(lc.store, {
    ...(state.lastServed === undefined ? {} : { afterAccount: state.lastServed }),
    limit: settings.candidates ?? 8,
    ...(excludeModels.length === 0 ? {} : { excludeModels }),
  });
  const first = candidates[0];
  if (!first && backedOff.length > 0) {
    // Only refused models' tasks as far as a step looks: wait for the first of their backoffs to end.
    const anything = await nextQueued(lc.store, {
      limit: 1,
      ...(notServed.length === 0 ? {} : { excludeModels: notServed }),
    });
    if (anything.length > 0) {
      return { kind: 'wait', waitMs: Math.min(...backedOff.map(([, b]) => b.until)) - now, refusedModels: true };
    }
  }
  // Nothing queued: idle, also at the cap (a wait there would wake the dispatcher until a task ends).
  if (!first) return { kind: 'idle' };
  for (const ref of candidates) observe?.queued(ref);
  const cap = settings.maxInFlight;
  if (cap !== undefined && Object.keys(state.running ?? {}).length >= cap) {
    // At the cap: entries whose removal a finish lost (a crash) would hold it for good, so look at them,
    // one dispatcher at a time, every few seconds.
    const due = state.healAt === undefined || state.healAt <= now - HEAL_EVERY_MS;
    const healed =
      due && (await claimHeal(lc.store, { now, before: now - HEAL_EVERY_MS }))
        ? await healRunning(lc, state, now, log)
        : 0;
    return healed > 0 ? { kind: 'contended' } : { kind: 'wait', waitMs: IN_FLIGHT_WAIT_MS };
  }
  const keep = settings.createRateLimit?.requests ?? 1;
  // The slot's time is now, after the query: as close to the provider call as the order allows.
  const slotAt = Math.max(now, lc.now().getTime());
  const tokens = tokensAt(state, slotAt, settings.createRateLimit);
  const slot = {
    state,
    now: slotAt,
    keep,
    account: first.account,
    ...(tokens === undefined ? {} : { tokensLeft: tokens - 1 }),
    ...(cap === undefined ? {} : { maxInFlight: cap }),
  };
  const slotNumber = await takeSlot(lc.store, slot);
  if (slotNumber === undefined) return { kind: 'contended' };
  // When the upstream answered (whatever it answered), for the ring; a failed write only makes that slot
  // free up ANSWER_TIMEOUT_MS after it was taken.
  const answered = async (at: number): Promise<void> => {
    // Also for an upstream being probed, whose next send waits for this one's answer.
    if (!settings.createRateLimit && state.unhealthySince === undefined) return;
    await recordAnswered(lc.store, { slot: slotNumber, at, ring: keep }).catch((error: unknown) =>
      log.warn('The answer time of a send was not recorded', { error }),
    );
  };
  const inFlight = cap !== undefined;
  for (const ref of candidates) {
    const claimed = await claimSend(lc.store, {
      userId: ref.userId,
      taskId: ref.taskId,
      now,
      inFlightSlot: inFlight,
      ...(excludeModels.length === 0 ? {} : { excludeModels }),
      ...(settings.upstream === undefined ? {} : { upstream: settings.upstream }),
      ...(settings.withoutProviderInput ? { withoutProviderInput: true } : {}),
    });
    if (claimed) {
      observe?.claimed?.(claimed);
      // The slot's reservation becomes the task's entry, which its finish removes.
      if (inFlight) {
        await holdInFlight(lc.store, { slot: slotNumber, userId: ref.userId, taskId: ref.taskId, sentAt: slotAt });
      }
      return send(lc, claimed, ref, { state, settings }, log.child({ taskId: ref.taskId }), () =>
        answered(lc.now().getTime()),
      );
    }
    await dropIfDone(lc, ref);
  }
  // Every candidate was being sent by another dispatcher, or gone: this slot goes unused, and frees up
  // one window after it was taken.
  if (inFlight) await leaveInFlight(lc.store, { key: slotKey(slotNumber) });
  await answered(slotAt);
  return { kind: 'contended' };
}

/**
 * Removes the entries of `running` that no longer stand for a task at the upstream: the task ended (a
 * finish whose removal was lost), or, older than {@link RUNNING_GRACE_MS}, a slot's reservation never
 * turned into a task (a crash between the two writes) or a task back in the queue. Each removal is
 * conditional on the entry as read, so an entry written again meanwhile stays.
 * @returns the entries removed
 */
async function healRunning(lc: ProviderLifecycle, state: CapacityState, now: number, log: Logger): Promise<number> {
  const stale = await Promise.all(
    Object.entries(state.running ?? {}).map(async ([key, entry]) => {
      const settled = now - entry.sentAt > RUNNING_GRACE_MS;
      if (isSlotKey(key) || entry.userId === undefined) return settled ? { key, entry } : undefined;
      const task = await getTask(lc.store, entry.userId, key);
      const ended = task === undefined || task.status !== 0;
      const backInQueue = task?.status === 0 && task.stage === 'queued';
      return ended || (backInQueue && settled) ? { key, entry } : undefined;
    }),
  );
  const removals = stale.filter((item) => item !== undefined);
  await Promise.all(removals.map(({ key, entry }) => leaveInFlight(lc.store, { key, sentAt: entry.sentAt })));
  if (removals.length > 0) {
    log.warn('Removed tasks in flight that were no longer at the provider', { keys: removals.map(({ key }) => key) });
  }
  return removals.length;
}

/**
 * Removes the queue entry of a task that no longer waits to be sent (ended, at the provider, or its
 * create's outcome unknown): the
 * ending paths remove their own entries (failTask), so this drops what a crash between the ending write
 * and that delete left behind, and entries of tasks ended before those paths did so.
 */
async function dropIfDone(lc: ProviderLifecycle, ref: QueuedRef): Promise<void> {
  const task = await getTask(lc.store, ref.userId, ref.taskId);
  if (task?.status !== 0 || task.providerTaskId !== undefined || task.stage === 'unknown') {
    await deleteQueueEntry(lc.store, ref);
  }
}

async function send(
  lc: ProviderLifecycle,
  task: TaskRecord,
  ref: QueuedRef,
  { state, settings }: { state: CapacityState; settings: DispatchSettings },
  log: Logger,
  answered: () => Promise<void>,
): Promise<DispatchStep> {
  let providerTaskId: string;
  const startedAt = performance.now();
  const count = (outcome: SendOutcome) => countUpstreamSend(lc, settings.upstream, outcome, startedAt, log);
  try {
    ({ providerTaskId } = await createAtProvider(lc, task, log).finally(answered));
  } catch (error) {
    const refused = error instanceof ProviderUnavailableError && error.throttled !== undefined;
    await count(error instanceof ProviderRejectedError ? 'sent' : refused ? 'refused' : 'failed');
    return notCreated(lc, { task, ref, state, settings, error }, log);
  }
  await count('sent');
  // The upstream answered: back in, if it was out.
  if (state.unhealthySince !== undefined) await markHealthy(lc.store);
  await recordCreated(lc, { task, ref, providerTaskId }, log);
  return { kind: 'sent', taskId: task.taskId };
}

/** A create that did not give us a task id: refused, unanswered, or failed before it was sent. */
async function notCreated(
  lc: ProviderLifecycle,
  input: { task: TaskRecord; ref: QueuedRef; state: CapacityState; settings: DispatchSettings; error: unknown },
  log: Logger,
): Promise<DispatchStep> {
  const { task, ref, state, settings, error } = input;
  if (error instanceof ProviderUnavailableError && error.outcomeUnknown) {
    log.warn('The answer to a create was lost: the task waits for the callback, never sent again', { error });
    // The shortest backoff (1 s by default) for every dispatcher, as after any failed send (with an
    // upstreams list, a cool-off of this upstream: the others go on). The task stays this upstream's, never sent to another.
    if (settings.upstream === undefined) {
      const pauseMs = settings.minBackoffMs ?? MIN_BACKOFF_MS;
      await backOff(lc.store, { until: lc.now().getTime() + pauseMs, backoffMs: pauseMs });
    } else await coolOff(lc, { state, settings }, log, error);
    await outcomeUnknown(lc, task, ref, log);
    return { kind: 'unknown', taskId: task.taskId };
  }
  if (error instanceof ProviderRejectedError) {
    await failTask(
      lc,
      task,
      {
        errorCode: 'PROVIDER_REJECTED',
        providerMessage: error.message,
        ...(error.providerCode === undefined ? {} : { providerCode: error.providerCode }),
      },
      log,
    );
    // failTask removes the queue entry once the task has ended; a refund that could not be written
    // leaves the task pending and its entry in place (past the lost-send lease it fails, refunded).
    return { kind: 'failed', taskId: task.taskId };
  }
  if (!(error instanceof ProviderUnavailableError)) {
    // Our own fault (the store, a bug): the task goes back to the queue in its place, not lost.
    await leaveIfHeld(lc, task);
    await releaseSend(lc.store, { userId: task.userId, taskId: task.taskId, failed: false });
    throw error;
  }
  const throttled = error.throttled !== undefined;
  if (!throttled && settings.failoverFor?.(task.model)) {
    // Another upstream serves the model: this one cools off, the task goes back for that one, uncounted.
    const coolOffMs = await coolOff(lc, { state, settings }, log, error);
    await leaveIfHeld(lc, task);
    await releaseSend(lc.store, { userId: task.userId, taskId: task.taskId, failed: false });
    return { kind: 'wait', waitMs: coolOffMs };
  }
  if (!throttled && (task.sendFailures ?? 0) + 1 >= lc.config.maxSendAttempts) {
    await failTask(lc, task, { errorCode: 'PROVIDER_UNAVAILABLE', detail: error }, log);
    return { kind: 'failed', taskId: task.taskId };
  }
  const now = lc.now().getTime();
  const minBackoffMs = settings.minBackoffMs ?? MIN_BACKOFF_MS;
  const asked = error.throttled?.retryAfterSeconds;
  const bound = settings.maxRetryAfterSeconds ?? DEFAULT_MAX_RETRY_AFTER_SECONDS;
  const honoured = asked === undefined ? undefined : boundRetryAfter(asked, bound);
  if (honoured?.cut) {
    // A maintenance page or a CDN asking for an hour would stop every send that long: honoured up to the bound.
    log.warn('The provider asked for a longer Retry-After than honoured; cut to the bound', {
      retryAfterSeconds: asked,
      honouredSeconds: honoured.seconds,
    });
  }
  // Without a Retry-After: the shortest backoff (1 s by default), doubling while refusals repeat, at most
  // 60 s (or the bound, when shorter).
  const doubling = (previous: { until?: number; ms?: number } | undefined) =>
    Math.min(
      previous?.until !== undefined && previous.ms !== undefined && now - previous.until < REPEAT_WITHIN_MS
        ? previous.ms * 2
        : minBackoffMs,
      MAX_BACKOFF_MS,
      bound * 1000,
    );
  const askedMs = honoured === undefined ? undefined : Math.max(honoured.seconds * 1000, minBackoffMs);
  if (error.throttled?.status === 503) {
    return refusedModel(
      lc,
      { task, state, settings, error, now, log },
      askedMs ?? doubling(state.modelBackoff[task.model]),
    );
  }
  // Over capacity (429): the wait it asked for (bounded), else the doubling one. Any other failure: a
  // pause of the shortest backoff for everyone; the task's own failures are bounded (maxSendAttempts).
  const backoffMs = !throttled
    ? minBackoffMs
    : (askedMs ??
      doubling({
        ...(state.backoffUntil === undefined ? {} : { until: state.backoffUntil }),
        ...(state.backoffMs === undefined ? {} : { ms: state.backoffMs }),
      }));
  log.warn('The provider refused a create; every dispatcher backs off', { backoffMs, error });
  // The backoff first, then the task back in the queue: no dispatcher can take it before the pause.
  await backOff(lc.store, { until: now + backoffMs, backoffMs });
  await leaveIfHeld(lc, task);
  await releaseSend(lc.store, { userId: task.userId, taskId: task.taskId, failed: !throttled });
  return { kind: 'wait', waitMs: backoffMs };
}

/**
 * Takes this upstream out (its send failed: 5xx, unreachable, a timeout) for a cool-off, doubled while
 * failures repeat (at most 60 s); when it ends, the upstream is probed with a single send.
 * @returns the cool-off (ms)
 */
async function coolOff(
  lc: ProviderLifecycle,
  { state, settings }: { state: CapacityState; settings: DispatchSettings },
  log: Logger,
  error: unknown,
): Promise<number> {
  const now = lc.now().getTime();
  const first = settings.coolOffMs ?? COOL_OFF_MS;
  const repeated =
    state.unhealthySince !== undefined && state.backoffMs !== undefined && state.backoffUntil !== undefined;
  const ms = Math.min(repeated ? (state.backoffMs ?? first) * 2 : first, MAX_BACKOFF_MS);
  log.warn('A send to the upstream failed; it is out for a cool-off, the other upstreams go on', {
    coolOffMs: ms,
    error,
  });
  await markUnhealthy(lc.store, { now, until: now + ms, ms });
  return ms;
}

/**
 * The upstream refused a create of the task's model (a 503: in this protocol a create names one model,
 * and the other models' creates may well go on). That model backs off, not the service: its tasks are
 * passed over until then, the others are sent at the usual pace. When another model is backing off
 * already, the refusals span models (a maintenance page in front of the whole upstream): every send
 * backs off too. The task counts the refusal; at `maxRefusalsPerTask` it fails `PROVIDER_UNAVAILABLE`,
 * refunded, rather than waiting at the head of its account's queue for as long as the upstream refuses.
 */
async function refusedModel(
  lc: ProviderLifecycle,
  input: {
    task: TaskRecord;
    state: CapacityState;
    settings: DispatchSettings;
    error: ProviderUnavailableError;
    now: number;
    log: Logger;
  },
  backoffMs: number,
): Promise<DispatchStep> {
  const { task, state, settings, error, now, log } = input;
  const model = task.model;
  const others = Object.entries(state.modelBackoff).filter(
    ([other, backoff]) => other !== model && backoff.until > now,
  );
  // Entries that ended long ago (no repeat can double them any more) leave the map with this write.
  const stale = Object.entries(state.modelBackoff)
    .filter(([, backoff]) => now - backoff.until >= REPEAT_WITHIN_MS)
    .map(([other]) => other);
  const acrossModels = others.length > 0;
  log.warn(
    acrossModels
      ? 'The provider refused creates of several models; every dispatcher backs off'
      : "The provider refused a create of one model; that model's tasks back off",
    { model, backoffMs, error },
  );
  // The backoff first, then the task back in the queue: no dispatcher can take it before the pause.
  await backOffModel(lc.store, { model, until: now + backoffMs, backoffMs, stale });
  if (acrossModels) await backOff(lc.store, { until: now + backoffMs, backoffMs });
  const refusals = (task.sendRefusals ?? 0) + 1;
  if (refusals >= (settings.maxRefusalsPerTask ?? DEFAULT_MAX_REFUSALS_PER_TASK)) {
    await failTask(lc, task, { errorCode: 'PROVIDER_UNAVAILABLE', detail: error }, log);
    return { kind: 'failed', taskId: task.taskId };
  }
  await leaveIfHeld(lc, task);
  await releaseSend(lc.store, { userId: task.userId, taskId: task.taskId, failed: false, refused: true });
  return acrossModels
    ? { kind: 'wait', waitMs: backoffMs }
    : { kind: 'refused', taskId: task.taskId, model, waitMs: backoffMs };
}

/**
 * A send that did not reach the upstream leaves `running` before its task goes back in the queue (while
 * the task is still ours: no other dispatcher can have claimed it and written the entry again).
 */
async function leaveIfHeld(lc: ProviderLifecycle, task: TaskRecord): Promise<void> {
  if (task.inFlightSlot) await leaveInFlight(lc.store, { key: task.taskId });
}

/** What a step saw, for the run's metrics and its `onClaimed`. */
export interface DispatchObserver {
  /** A queue entry the step looked at. */
  queued(ref: QueuedRef): void;
  /** The task the step claimed for sending (once per accepted task that reaches a send). */
  claimed?(task: TaskRecord): void;
}
