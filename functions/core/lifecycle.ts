/**
 * The task lifecycle's decisions, as pure functions: what to do with a pending task, and how a stored
 * task is shown to its owner. The I/O that carries them out lives in functions/lifecycle.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from './errors';
import {
  boundProviderText,
  ERROR_MESSAGES,
  type ErrorCode,
  MAX_PROVIDER_MESSAGE_LENGTH,
  publicStage,
  type TaskRecord,
  type TaskResource,
  TaskStatus,
} from './task';

export interface LifecycleConfig {
  /** Minimum time between two provider queries (or send retries) for one task. */
  refreshIntervalMs: number;
  /** Age at which a pending task fails with TIMEOUT and is refunded. */
  maxPendingMs: number;
  /**
   * Sends of one task the provider failed (5xx, unreachable; never a 429, which only means "later")
   * before the task fails with PROVIDER_UNAVAILABLE.
   */
  maxSendAttempts: number;
  /**
   * After how long a send claimed by a dispatcher (`stage: sending`) counts as lost to a crash: its
   * outcome is unknown (the request may have gone out), so it is never sent again but waits
   * (`unknownOutcomeLimitMs`) for the upstream's callback. Default `DEFAULT_SEND_LEASE_MS`.
   */
  sendLeaseMs?: number;
  /**
   * How long a task whose create's outcome is unknown (stage `unknown`) waits for the upstream's callback
   * before it fails `PROVIDER_UNAVAILABLE`, refunded. Default `DEFAULT_UNKNOWN_OUTCOME_LIMIT_MS`.
   */
  unknownOutcomeLimitMs?: number;
  /**
   * Days after which the result storage deletes results (the bucket's lifecycle rule); undefined when
   * results are kept (the local stack).
   */
  resultRetentionDays?: number;
  /**
   * Minimum time between two provider reads a callback may trigger for one task (default
   * `DEFAULT_CALLBACK_READ_INTERVAL_MS`): a flood of callbacks costs at most one read per interval.
   */
  callbackReadIntervalMs?: number;
  /** After how long a copy still waiting for the media worker is done by the sweeper (default 5 min). */
  copyStaleMs?: number;
  /**
   * The upstream's cap on tasks in flight (`PROVIDER_MAX_IN_FLIGHT`), where one is configured: a task
   * sent under it leaves the dispatcher's count when it finishes. Undefined: no cap, and no finish touches
   * the dispatcher's capacity item.
   */
  maxInFlight?: number;
}

/** A send still claimed after this long was lost (the provider call times out after 5 s). */
export const DEFAULT_SEND_LEASE_MS = 60_000;

/** A create whose outcome is unknown waits this long for the upstream's callback (10 minutes). */
export const DEFAULT_UNKNOWN_OUTCOME_LIMIT_MS = 600_000;

/** A copy the media worker has not done after this long is done by the sweeper. */
export const DEFAULT_COPY_STALE_MS = 300_000;

/** One provider read per second and task at most, whatever the number of callbacks. */
export const DEFAULT_CALLBACK_READ_INTERVAL_MS = 1_000;

export const DEFAULT_LIFECYCLE_CONFIG: LifecycleConfig = {
  refreshIntervalMs: 30_000,
  maxPendingMs: 1_800_000,
  maxSendAttempts: 5,
};

/**
 * What a refresh does with a pending task. A `query` with `final` is the last one a task too old to
 * wait gets: whatever the provider says then is the outcome, and "still running" means TIMEOUT.
 */
export type RefreshStep =
  | { kind: 'fail'; errorCode: ErrorCode; errorMessage: string }
  /** The dispatcher sends it (queued, or being sent): nothing to do here. Polls never send. */
  | { kind: 'wait' }
  /** Its send was lost to a crash after the request may have gone out: its outcome is unknown. */
  | { kind: 'unknown' }
  | { kind: 'query'; providerTaskId: string; final: boolean };

/**
 * Whether a pending task may be refreshed now, judged from a stored copy. The claim's condition is
 * what guarantees one refresh per interval; this only spares the conditional write (and its write
 * capacity) on the many polls that would lose the claim anyway.
 */
export function isRefreshDue(task: TaskRecord, now: Date, config: LifecycleConfig): boolean {
  return task.lastCheckedAt === undefined || now.getTime() - task.lastCheckedAt >= config.refreshIntervalMs;
}

/**
 * Decides the step for a pending task. Too old means it must end now, but a task the provider has
 * first gets one last query, so a result that arrived just before the deadline is not thrown away
 * (and paid back) unseen.
 */
export function nextRefreshStep(task: TaskRecord, now: Date, config: LifecycleConfig): RefreshStep {
  const ageMs = now.getTime() - Date.parse(task.createdAt);
  const tooOld = ageMs >= config.maxPendingMs;
  if (task.providerTaskId) return { kind: 'query', providerTaskId: task.providerTaskId, final: tooOld };
  if (tooOld) return { kind: 'fail', errorCode: 'TIMEOUT', errorMessage: ERROR_MESSAGES.TIMEOUT };
  if (task.stage === 'unknown') {
    // Never sent again: it waits for the callback that names the upstream's task, up to its limit.
    const since = task.unknownOutcomeSince ?? now.getTime();
    const limit = config.unknownOutcomeLimitMs ?? DEFAULT_UNKNOWN_OUTCOME_LIMIT_MS;
    if (now.getTime() - since < limit) return { kind: 'wait' };
    return { kind: 'fail', errorCode: 'PROVIDER_UNAVAILABLE', errorMessage: ERROR_MESSAGES.PROVIDER_UNAVAILABLE };
  }
  const claimedAt = task.stage === 'sending' ? task.sendClaimedAt : undefined;
  if (claimedAt !== undefined && now.getTime() - claimedAt >= (config.sendLeaseMs ?? DEFAULT_SEND_LEASE_MS)) {
    return { kind: 'unknown' };
  }
  return { kind: 'wait' };
}

const DAY_MS = 86_400_000;

/**
 * Until when a completed task's results are kept, or undefined when storage keeps them for good.
 * S3 expires an object at the first midnight UTC at least `days` days after its creation; the objects
 * are written just before the task completes, so midnight UTC at the start of the day `days` days
 * after completion is never later than the deletion (a conservative bound, by up to a day).
 */
export function resultsExpireAt(task: TaskRecord, retentionDays: number | undefined): Date | undefined {
  if (task.status !== TaskStatus.COMPLETED || retentionDays === undefined) return undefined;
  const completed = Date.parse(task.updatedAt);
  if (!Number.isFinite(completed)) return undefined;
  const at = completed + retentionDays * DAY_MS;
  return new Date(at - (at % DAY_MS));
}

/**
 * The Task resource of the spec. `stage` only when PENDING (`queuedAhead` is added by whoever reads one
 * queued task, lifecycle/present-task.ts). Result URLs only when COMPLETED (with `resultsExpireAt` when storage
 * expires them), error fields only when FAILED (with `providerErrorCode` when the provider gave one).
 * @param resultUrls URLs made from `task.resultKeys` (signed on S3); empty once the results expired
 * @param expiresAt from `resultsExpireAt`
 */
export function toTaskResource(task: TaskRecord, resultUrls: string[] = [], expiresAt?: Date): TaskResource {
  const resource: TaskResource = {
    taskId: task.taskId,
    type: task.type,
    status: task.status,
    model: task.model,
    prompt: task.prompt,
    creditsUsed: task.creditsUsed,
    creditsRefunded: task.creditsRefunded,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
  };
  const references = task.request.inputImageUrls;
  if (Array.isArray(references) && references.length > 0 && references.every((url) => typeof url === 'string'))
    resource.inputImageUrls = references;
  if (task.status === TaskStatus.PENDING) resource.stage = publicStage(task);
  if (task.status === TaskStatus.COMPLETED) {
    if (task.type === 'image') resource.imageUrls = resultUrls;
    else if (resultUrls[0]) resource.videoUrl = resultUrls[0];
    if (task.resultsExpiredAt) resource.resultsExpiredAt = task.resultsExpiredAt;
    else if (expiresAt) resource.resultsExpireAt = expiresAt.toISOString();
  }
  if (task.status === TaskStatus.FAILED) {
    resource.errorCode = task.errorCode ?? 'PROVIDER_ERROR';
    resource.errorMessage = shownErrorMessage(resource.errorCode, task.errorMessage);
    if (task.providerErrorCode) resource.providerErrorCode = task.providerErrorCode;
  }
  return resource;
}

/**
 * Only the provider's codes carry a message of their own; the others always read their stable text,
 * which also cleans records stored before messages were bounded (they held URLs and object keys).
 */
function shownErrorMessage(code: ErrorCode, stored: string | undefined): string {
  if (code !== 'PROVIDER_ERROR' && code !== 'PROVIDER_REJECTED') return ERROR_MESSAGES[code];
  return (
    boundProviderText(stored, MAX_PROVIDER_MESSAGE_LENGTH + ERROR_MESSAGES[code].length + 2) ?? ERROR_MESSAGES[code]
  );
}

/** JSON with object keys sorted, so equal bodies hash equally whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Identifies a submission for idempotency: the same endpoint and the same body give the same hash. */
export function requestHash(type: 'image' | 'video', body: unknown): string {
  return createHash('sha256')
    .update(`${type}\n${canonicalJson(body)}`)
    .digest('hex');
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Validates an `Idempotency-Key` header value: 1 to 255 visible ASCII characters (a UUID fits).
 * @returns the key, or undefined when the header is absent
 */
export function parseIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(value)) {
    throw new ValidationError({
      fieldErrors: { 'headers.Idempotency-Key': ['Must be 1 to 255 visible ASCII characters'] },
      formErrors: [],
    });
  }
  return value;
}
