/**
 * The task lifecycle's decisions, as pure functions: what to do with a pending task, and how a stored
 * task is shown to its owner. The I/O that carries them out lives in functions/lifecycle.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from './errors';
import { type ErrorCode, type TaskRecord, type TaskResource, TaskStatus } from './task';

export interface LifecycleConfig {
  /** Minimum time between two provider queries (or send retries) for one task. */
  refreshIntervalMs: number;
  /** Age at which a pending task fails with TIMEOUT and is refunded. */
  maxPendingMs: number;
  /** Claims of a task that never reached the provider before it fails with PROVIDER_UNAVAILABLE. */
  maxSendAttempts: number;
}

export const DEFAULT_LIFECYCLE_CONFIG: LifecycleConfig = {
  refreshIntervalMs: 30_000,
  maxPendingMs: 1_800_000,
  maxSendAttempts: 5,
};

/** What a refresh does with a pending task. */
export type RefreshStep =
  | { kind: 'fail'; errorCode: ErrorCode; errorMessage: string }
  | { kind: 'send' }
  | { kind: 'query'; providerTaskId: string };

/**
 * Whether a pending task may be refreshed now, judged from a stored copy. The claim's condition is
 * what guarantees one refresh per interval; this only spares the conditional write (and its write
 * capacity) on the many polls that would lose the claim anyway.
 */
export function isRefreshDue(task: TaskRecord, now: Date, config: LifecycleConfig): boolean {
  return task.lastCheckedAt === undefined || now.getTime() - task.lastCheckedAt >= config.refreshIntervalMs;
}

/** Decides the step for a pending task. Too old beats everything: a task must end. */
export function nextRefreshStep(task: TaskRecord, now: Date, config: LifecycleConfig): RefreshStep {
  const ageMs = now.getTime() - Date.parse(task.createdAt);
  if (ageMs >= config.maxPendingMs) {
    return {
      kind: 'fail',
      errorCode: 'TIMEOUT',
      errorMessage: `The task did not finish within ${Math.round(config.maxPendingMs / 1000)} seconds`,
    };
  }
  if (task.providerTaskId) return { kind: 'query', providerTaskId: task.providerTaskId };
  if (task.attempts > config.maxSendAttempts) {
    return {
      kind: 'fail',
      errorCode: 'PROVIDER_UNAVAILABLE',
      errorMessage: 'The generation provider could not be reached',
    };
  }
  return { kind: 'send' };
}

/**
 * The Task resource of the spec. Result URLs only when COMPLETED, error fields only when FAILED.
 * @param resultUrls URLs made from `task.resultKeys` (signed on S3)
 */
export function toTaskResource(task: TaskRecord, resultUrls: string[] = []): TaskResource {
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
  if (task.status === TaskStatus.COMPLETED) {
    if (task.type === 'image') resource.imageUrls = resultUrls;
    else if (resultUrls[0]) resource.videoUrl = resultUrls[0];
  }
  if (task.status === TaskStatus.FAILED) {
    resource.errorCode = task.errorCode ?? 'PROVIDER_ERROR';
    resource.errorMessage = task.errorMessage ?? 'The task failed';
  }
  return resource;
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
