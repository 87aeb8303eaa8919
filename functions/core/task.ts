/**
 * The task as the service stores it and as the API shows it. Plain data, no AWS.
 */

/** 0 PENDING, 1 COMPLETED, 2 FAILED (the spec's integers; 1 and 2 are terminal). */
export const TaskStatus = { PENDING: 0, COMPLETED: 1, FAILED: 2 } as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

export type TaskType = 'image' | 'video';

/**
 * The authenticated caller: the account that pays and owns, and the credential it used: an API key
 * (`keyId`) or a browser session (`sessionHash`, the stored hash of the session id).
 */
export interface Caller {
  userId: string;
  keyId?: string;
  sessionHash?: string;
  /** The key's spend limit as the authorizer read it (key callers with a limit only). */
  spendLimit?: KeySpendLimit;
  /** The version of the key's limit the authorizer read (0 or absent: never had one). */
  spendLimitVersion?: number;
}

/** A key's budget as the accept enforces it (core/spend-limit.ts). */
export interface KeySpendLimit {
  credits: number;
  period: 'day' | 'month' | 'total';
  /** The key whose counter it spends into: itself, or the first key of its rotation chain. */
  budgetKeyId: string;
}

/** Every machine-readable failure code a task can end with. */
export const ERROR_CODES = [
  'PROVIDER_ERROR',
  'PROVIDER_REJECTED',
  'PROVIDER_UNAVAILABLE',
  'TIMEOUT',
  'STORAGE_ERROR',
  'CANCELLED',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The stable message clients read for each code. Details (URLs, object keys, SDK codes, timings) go
 * to the logs only; the provider's own message may be appended, bounded (see `clientErrorMessage`).
 */
export const ERROR_MESSAGES: Readonly<Record<ErrorCode, string>> = {
  PROVIDER_ERROR: 'The provider could not generate the result',
  PROVIDER_REJECTED: 'The provider refused the request',
  PROVIDER_UNAVAILABLE: 'The generation provider could not be reached',
  TIMEOUT: 'The task did not finish in time',
  STORAGE_ERROR: 'The result could not be stored',
  CANCELLED: 'The task was cancelled before it started',
};

/** Longest provider message kept, in code points (it is shown to clients and stored on the task). */
export const MAX_PROVIDER_MESSAGE_LENGTH = 200;
/** Longest provider failure code kept, in code points. */
export const MAX_PROVIDER_CODE_LENGTH = 64;

/**
 * Provider-supplied text made safe to store and show: control characters and runs of white space
 * become one space, URLs become `[url]` (a provider message may echo result or internal URLs, with
 * their tokens), and the result is cut to `max` code points (with an ellipsis). Empty -> undefined.
 * The bound is what keeps a provider message of any size from growing the refund transaction.
 */
export function boundProviderText(text: string | undefined, max: number): string | undefined {
  if (text === undefined) return undefined;
  // Only a bounded prefix is looked at, so a huge message costs no more than a short one.
  const cleaned = text
    .slice(0, max * 8)
    .replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[url]')
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\s]+/gu, ' ')
    .trim();
  if (cleaned.length === 0) return undefined;
  const points = Array.from(cleaned);
  return points.length > max
    ? `${points
        .slice(0, max - 1)
        .join('')
        .trimEnd()}…`
    : cleaned;
}

/** The message a failed task shows: the code's stable message, plus the provider's own when given. */
export function clientErrorMessage(code: ErrorCode, providerMessage?: string): string {
  const own = boundProviderText(providerMessage, MAX_PROVIDER_MESSAGE_LENGTH);
  return own ? `${ERROR_MESSAGES[code]}: ${own}` : ERROR_MESSAGES[code];
}

/**
 * The stored task: the spec's Task resource plus the internals the lifecycle needs.
 * Result locations are media keys; URLs are made from them on read (signed URLs expire).
 */
export interface TaskRecord {
  userId: string;
  taskId: string;
  type: TaskType;
  status: TaskStatus;
  model: string;
  prompt: string;
  /** The validated request as submitted, kept to (re)send it to the provider. */
  request: Record<string, unknown>;
  creditsUsed: number;
  creditsRefunded: boolean;
  /** ISO 8601 */
  createdAt: string;
  /** ISO 8601 */
  updatedAt: string;
  /** Set once the provider accepted the task. */
  providerTaskId?: string;
  /**
   * Where a pending task stands on the way to the provider: `queued` (accepted, waiting for the
   * dispatcher), `sending` (a dispatcher claimed it and is calling createTask), `running` (the provider
   * has it), `unknown` (the create went out and its answer was lost: the provider may have it). Absent on tasks accepted before the dispatcher, which were sent at once.
   */
  stage?: TaskStage;
  /** Epoch milliseconds at which a dispatcher claimed the send (stage `sending`). */
  sendClaimedAt?: number;
  /**
   * Epoch milliseconds since which the outcome of the task's create is unknown (stage `unknown`: the
   * request went out, its answer never came back). It is never sent again; it waits for the upstream's
   * callback, and fails refunded after `unknownOutcomeLimitMs` (docs/design/dispatching.md).
   */
  unknownOutcomeSince?: number;
  /**
   * The upstream's id for this task, as named by a callback that came before the id was recorded (the
   * callback URL names our task, its body the upstream's): adopted when the create's outcome is unknown.
   */
  callbackProviderTaskId?: string;
  /**
   * How many times a send lost to a crash was put back in the queue (tasks before 2026-11-27: a lost
   * send's outcome is now unknown, and it is never put back).
   */
  sendRequeues?: number;
  /**
   * Claimed for sending while a cap on tasks in flight was configured: the task holds (or held) an entry
   * in the capacity item's `running` map, which its finish removes (docs/design/dispatching.md).
   */
  inFlightSlot?: boolean;
  /**
   * The upstream that took the task (docs/guides/upstreams.md), with an upstreams list configured: its
   * callbacks are verified with that upstream's signing key and its polls ask that upstream. Absent: the
   * one upstream of a deployment without a list.
   */
  upstream?: string;
  /** Sends the provider failed (5xx, unreachable), counted towards `maxSendAttempts`; 429s never count. */
  sendFailures?: number;
  /**
   * Creates of this task the upstream refused for capacity naming its model (503), counted towards the
   * dispatcher's `maxRefusalsPerTask`; a 429 (over the service's rate) never counts.
   */
  sendRefusals?: number;
  /** Epoch milliseconds of the last claimed provider query (or send retry). */
  lastCheckedAt?: number;
  /** Epoch milliseconds of the last provider read a callback claimed (bounds reads per task). */
  lastCallbackReadAt?: number;
  /**
   * A provider callback arrived while the send was in flight, before the provider's task id was
   * recorded (epoch ms): the dispatcher reads the provider once it has recorded the id.
   */
  earlyCallbackAt?: number;
  /** How many times the lifecycle has claimed this task (send retries and queries). */
  attempts: number;
  /**
   * The provider's result URLs (at most the paid count), recorded when the provider reported success:
   * the results are ready to copy and the media worker copies them. The task stays PENDING (status 0
   * to clients) until every result is stored. Its presence is the internal "results ready to copy" state.
   */
  resultsToCopy?: string[];
  /** Epoch milliseconds at which the results were found ready to copy. */
  resultsReadyAt?: number;
  /** Media keys of the results, set when status is COMPLETED (removed when its retention ends). */
  resultKeys?: string[];
  /** ISO 8601 time at which its `resultRetention` removed the results (the sweeper, lifecycle/retention.ts). */
  resultsExpiredAt?: string;
  errorCode?: ErrorCode;
  errorMessage?: string;
  /** The provider's own failure code (bounded), when it failed or refused the task with one. */
  providerErrorCode?: string;
  /** API key that created the task (for audit; never the key itself). */
  keyId?: string;
  /**
   * The sort key of the key's spend counter the accept added `creditsUsed` to (a key with a spend limit
   * only): a refund gives the credits back to that same period's counter.
   */
  spendCounter?: string;
  /**
   * The sort key of the account's monthly spend counter the accept added `creditsUsed` to (an account
   * with a monthly spend limit only): a refund gives the credits back there too.
   */
  accountSpendCounter?: string;
  /**
   * The counter shards (store/spend.ts) of `spendCounter` and `accountSpendCounter` the refund gives the
   * credits back to (absent: shard 0, as on tasks accepted before the counters were sharded).
   */
  spendShard?: number;
  accountSpendShard?: number;
  /** Where to POST the signed `task.completed` / `task.failed` event (else the account's default). */
  webhookUrl?: string;
}

/** See `TaskRecord.stage`. */
export type TaskStage = 'queued' | 'sending' | 'running' | 'unknown';

/**
 * Where a pending task stands as its owner sees it: `queued` while it waits here (stored `queued`, or
 * `sending`: a dispatcher is calling the provider), `running` once the provider has it. A task accepted
 * before the dispatcher (no stored stage) was sent inside its submission: `running`.
 */
export type PublicStage = 'queued' | 'running';

/** The public stage of a pending task (see `PublicStage`). */
export function publicStage(task: Pick<TaskRecord, 'stage' | 'providerTaskId'>): PublicStage {
  if (task.providerTaskId !== undefined) return 'running';
  return task.stage === 'queued' || task.stage === 'sending' ? 'queued' : 'running';
}

/** Whether a pending task may still be cancelled: queued here, no dispatcher sending it, no provider id. */
export function isCancellable(task: Pick<TaskRecord, 'status' | 'stage' | 'providerTaskId'>): boolean {
  return task.status === TaskStatus.PENDING && task.stage === 'queued' && task.providerTaskId === undefined;
}

/**
 * How many results the task paid for: one for a video, `numOutputs` for images (recorded at
 * acceptance as `request.outputs`; older records give it through the provider input they were sent).
 */
export function paidOutputs(task: TaskRecord): number {
  if (task.type === 'video') return 1;
  const providerRequest = task.request.providerRequest as { input?: Record<string, unknown> } | undefined;
  const recorded = task.request.outputs ?? providerRequest?.input?.num_outputs;
  return typeof recorded === 'number' && Number.isInteger(recorded) && recorded >= 1 ? recorded : 1;
}

/** A pending task whose results are waiting for the media worker: nobody asks the provider again. */
export function awaitsCopy(task: TaskRecord): boolean {
  return task.status === TaskStatus.PENDING && Array.isArray(task.resultsToCopy) && task.resultsToCopy.length > 0;
}

/** The longest provider result URL kept on a task (longer ones cannot be a file we would fetch). */
export const MAX_RESULT_URL_LENGTH = 4096;

/** The Task resource of the spec, as GET /api/ai/tasks/{id} returns it. */
export interface TaskResource {
  taskId: string;
  type: TaskType;
  status: TaskStatus;
  model: string;
  prompt: string;
  /**
   * The reference images as the caller gave them (https URLs, `upload://` references; inline images as
   * the `upload://` reference they were stored as). Never a signed URL.
   */
  inputImageUrls?: string[];
  /** PENDING only: `queued` while it waits here, `running` once the provider has it. */
  stage?: PublicStage;
  /**
   * PENDING and `queued`, on `GET /api/ai/tasks/{id}` only: the number of the same account's tasks
   * queued before it, counted no further than {@link QUEUED_AHEAD_CAP} (that value means "that many or
   * more").
   */
  queuedAhead?: number;
  /**
   * PENDING and `queued`, on `GET /api/ai/tasks/{id}` only: when the task should reach the provider
   * (ISO 8601), from the upstream's pace, the accounts taking turns and `queuedAhead`
   * (functions/core/start-estimate.ts).
   */
  estimatedStartAt?: string;
  imageUrls?: string[];
  videoUrl?: string;
  /**
   * When COMPLETED and the results live in storage that expires them (the deployed bucket): the time
   * (ISO 8601) until which they are kept. From then on no URLs are handed out.
   */
  resultsExpireAt?: string;
  /**
   * When COMPLETED and its results are gone by the `resultRetention` the request asked for: the time
   * (ISO 8601) they went. No URLs are handed out then.
   */
  resultsExpiredAt?: string;
  errorCode?: ErrorCode;
  errorMessage?: string;
  /** When FAILED by the provider with a code of its own (PROVIDER_ERROR, PROVIDER_REJECTED): that code. */
  providerErrorCode?: string;
  creditsUsed: number;
  creditsRefunded: boolean;
  createdAt: string;
  updatedAt: string;
}

/** The submission response of both generate endpoints. */
export interface SubmissionResponse {
  taskId: string;
  status: TaskStatus;
  creditsUsed: number;
}

/**
 * The most `queuedAhead` counts: the count reads at most this many queue entries (about 5 read units on
 * the one `DISPATCH#QUEUE` partition, whatever the queue's length), and a task with this many or more of
 * its account's tasks ahead shows this number (docs/design/dispatching.md#scale).
 */
export const QUEUED_AHEAD_CAP = 100;
