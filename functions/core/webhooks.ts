/**
 * Webhooks out: what a delivery says and when it is tried again. The Standard Webhooks specification
 * (https://www.standardwebhooks.com) fixes the headers and the signature; this module fixes our
 * payload, our retry schedule and the secret's format. No I/O here.
 */
import { randomBytes } from 'node:crypto';
import type { AccountEventData, AccountEventType } from './account-events';
import { type TaskRecord, type TaskResource, TaskStatus } from './task';

/** The events a task sends: one per task, when it ends. */
export type TaskEventType = 'task.completed' | 'task.failed';

/** Every event a delivery may carry: a task's, or an account event (core/account-events.ts). */
export type WebhookEventType = TaskEventType | AccountEventType;

/**
 * The body of every delivery (JSON). For a task's event `data` is the Task resource as
 * `GET /api/ai/tasks/{id}` shows it; for an account event, what the event is about.
 */
export interface WebhookPayload {
  type: WebhookEventType;
  /** When the task ended, or the account event was seen (ISO 8601); the same on every attempt of one delivery. */
  timestamp: string;
  data: TaskResource | AccountEventData;
}

/**
 * Seconds to wait after attempt n (the first attempt is immediate): 1 min, 5 min, 30 min, 2 h, 5 h,
 * 10 h, 10 h. Eight attempts spread over 27 h 36 min, so a receiver that is down for a whole day still
 * gets the event. The shape follows the schedule the Standard Webhooks authors publish (Svix: 5 s,
 * 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); the first retry waits a minute because retries are picked up by
 * the sweeper, which runs once a minute (see `functions/lifecycle/webhooks.ts`).
 */
export const WEBHOOK_RETRY_DELAYS_SECONDS: readonly number[] = [60, 300, 1800, 7200, 18000, 36000, 36000];

/**
 * How long a claimed attempt may take before the sweeper claims the delivery again (its worker died):
 * well above one attempt's deadline.
 */
export const WEBHOOK_CLAIM_SECONDS = 120;

/** A receiver gets this long to answer one attempt; slower counts as a failure (and is retried). */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** Bytes of a receiver's answer read at most (into the attempt record); the rest is never read. */
export const WEBHOOK_RESPONSE_BYTES = 1024;

/** The longest `webhookUrl` (as other URLs of a request). */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** The prefix of a Standard Webhooks signing secret; the rest is the key in base64. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** Key bytes of a signing secret: 256 bits (the specification asks for 24 to 64 bytes). */
const WEBHOOK_SECRET_BYTES = 32;

/** A new signing secret, `whsec_<base64 of 32 random bytes>`, as `standardwebhooks`' `Webhook` takes it. */
export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(WEBHOOK_SECRET_BYTES).toString('base64')}`;
}

/** The event a task that ended sends; undefined while it is pending. */
export function webhookEventOf(status: TaskStatus): TaskEventType | undefined {
  if (status === TaskStatus.COMPLETED) return 'task.completed';
  if (status === TaskStatus.FAILED) return 'task.failed';
  return undefined;
}

/**
 * Whether the provider refused a task at its first send, before it started: failed `PROVIDER_REJECTED`
 * with no provider task, on the first send that reached the upstream (no earlier send failed with a 5xx
 * or was lost to a crash; a 429 is no send, the upstream only said "later"). Such a task never reached
 * the upstream, cost nothing (refunded), and sends no webhook: otherwise every refused submission would
 * buy up to eight signed requests, carrying its prompt, to any https host for free. Its caller learns
 * the refusal by polling (`status: 2`, `errorCode: PROVIDER_REJECTED`). Since the dispatcher, that send
 * comes after the 202 answer (docs/design/dispatching.md); a task accepted before it (no
 * `stage`) was sent inside its submission, and counts as refused at once when it was never claimed again.
 */
export function refusedAtFirstSend(
  task: Pick<
    TaskRecord,
    'status' | 'errorCode' | 'providerTaskId' | 'attempts' | 'stage' | 'sendFailures' | 'sendRequeues'
  >,
): boolean {
  const firstSend =
    task.stage === undefined ? task.attempts === 0 : (task.sendFailures ?? 0) === 0 && task.sendRequeues === undefined;
  return (
    task.status === TaskStatus.FAILED &&
    task.errorCode === 'PROVIDER_REJECTED' &&
    task.providerTaskId === undefined &&
    firstSend
  );
}

/**
 * Whether the task was cancelled by its owner while queued (`CANCELLED`): like a task refused at its
 * first send, it never reached the upstream and cost nothing (refunded), and its caller already knows (the
 * cancel's 200 answer carried `status: 2`). It sends no webhook: otherwise a submit and a cancel would
 * buy up to eight signed requests, carrying the prompt, to any https host for free.
 */
export function cancelledByOwner(task: Pick<TaskRecord, 'status' | 'errorCode'>): boolean {
  return task.status === TaskStatus.FAILED && task.errorCode === 'CANCELLED';
}

/**
 * Open deliveries (`sending` or `waiting`: not yet delivered nor given up) an account may have at once
 * (`WEBHOOK_MAX_OPEN_DELIVERIES`). A delivery that would exceed it is recorded as `failed` with the
 * reason and never sent, so the service cannot be turned into a relay of signed requests: each open
 * delivery makes at most one attempt per step of the schedule.
 */
export const DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES = 100;

/** The reason recorded on a delivery dropped by the bound. */
export function droppedDeliveryReason(maxOpen: number): string {
  return `Dropped: the account already has ${maxOpen} open webhook deliveries (WEBHOOK_MAX_OPEN_DELIVERIES)`;
}

/** The body of a delivery. */
export function webhookPayload(
  type: WebhookEventType,
  timestamp: string,
  data: TaskResource | AccountEventData,
): WebhookPayload {
  return { type, timestamp, data };
}

/**
 * When to try again after attempt `attempt` (1-based) failed, or undefined when the schedule is spent
 * and the delivery gives up.
 */
export function nextAttemptAt(attempt: number, failedAt: Date, delays: readonly number[]): Date | undefined {
  const delay = delays[attempt - 1];
  return delay === undefined ? undefined : new Date(failedAt.getTime() + delay * 1000);
}

/** Whether an HTTP status counts as delivered: any 2xx (Standard Webhooks). */
export function isDelivered(statusCode: number | undefined): boolean {
  return statusCode !== undefined && statusCode >= 200 && statusCode <= 299;
}

/**
 * Parses a retry schedule written as seconds between attempts, comma-separated (`1,1,2`), as
 * `WEBHOOK_RETRY_DELAYS_SECONDS` takes it. Empty or unset: the real schedule.
 * @throws Error naming the setting when a value is not a whole number of seconds from 1 to 86400
 */
export function parseRetryDelays(text: string | undefined, setting = 'WEBHOOK_RETRY_DELAYS_SECONDS'): number[] {
  if (text === undefined || text.trim() === '') return [...WEBHOOK_RETRY_DELAYS_SECONDS];
  const delays = text.split(',').map((part) => Number(part.trim()));
  if (delays.length > 20 || delays.some((delay) => !Number.isInteger(delay) || delay < 1 || delay > 86_400)) {
    throw new Error(
      `${setting} must be up to 20 whole numbers of seconds (1 to 86400), comma-separated, got "${text}"`,
    );
  }
  return delays;
}
