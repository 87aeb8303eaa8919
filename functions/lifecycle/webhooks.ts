/**
 * Webhooks out, off the request path. When a task ends, the webhook worker (fed by the table's
 * stream) opens its delivery; the write that opens it, and every later claim, reaches the worker
 * through the stream again and makes one attempt. Failed attempts wait in the due index; the sweeper
 * (every minute) claims those whose time came.
 *
 * Why this way (a dedicated worker on the table's stream, retries as items with a due time swept by
 * the existing sweeper): the schedule runs for more than a day, and SQS delays stop at 15 minutes, so
 * a queue would need re-queueing hops, and EventBridge Scheduler would need one schedule (and its
 * clean-up) per delivery plus a role to pass. Items with a due time keep the delivery, its attempts
 * and its next time together in the one table, cost one sparse-index Query per shard a minute, and run
 * locally on DynamoDB Local as they run deployed. The sweeper only claims (one conditional write); the
 * sending is the worker's, so only the worker reads signing secrets and calls out, and a slow endpoint
 * never slows the sweep, the task or its media.
 */
import { randomUUID } from 'node:crypto';
import { TaskStatus } from '../core/task';
import { taskEventId } from '../core/webhook-endpoints';
import {
  cancelledByOwner,
  DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES,
  droppedDeliveryReason,
  isDelivered,
  nextAttemptAt,
  refusedAtFirstSend,
  WEBHOOK_CLAIM_SECONDS,
  webhookEventOf,
  webhookPayload,
} from '../core/webhooks';
import type { ResolveHost } from '../media/public-address';
import type { SourcePolicy } from '../media/source-policy';
import type { Logger } from '../observability/logger';
import type { StoreContext } from '../store/client';
import { getTask } from '../store/tasks';
import {
  type AfterAttempt,
  allDueDeliveries,
  claimDelivery,
  createDelivery,
  getDelivery,
  getWebhookSettings,
  recordAttempt,
} from '../store/webhooks';
import type { SecretBox } from '../webhooks/secret-box';
import { type AttemptOutcome, sendWebhook } from '../webhooks/send';
import { fanOutToEndpoints } from './endpoint-deliveries';
import type { Lifecycle } from './lifecycle';
import { presentTask } from './present-task';

/** What sending webhooks needs besides the lifecycle (the worker's wiring). */
export interface WebhookSettingsWiring {
  box: SecretBox;
  policy: SourcePolicy;
  /** Seconds to wait after each failed attempt (`WEBHOOK_RETRY_DELAYS_SECONDS`). */
  retryDelays: readonly number[];
  /** Open deliveries an account may have at once (`WEBHOOK_MAX_OPEN_DELIVERIES`); default 100. */
  maxOpenDeliveries?: number;
  /** Tests inject DNS answers. */
  resolve?: ResolveHost;
  timeoutMs?: number;
}

export interface WebhookLifecycle extends Lifecycle {
  webhooks: WebhookSettingsWiring;
}

/** A task that just ended, as the stream announces it. */
export interface EndedTaskRef {
  userId: string;
  taskId: string;
}

/** A claimed attempt, as the stream announces it. */
export interface ClaimedDeliveryRef {
  userId: string;
  /** The delivery's key: its task's id, or an account event's id (`evt_...`). */
  taskId: string;
  claimId: string;
}

function leaseFrom(now: Date): Date {
  return new Date(now.getTime() + WEBHOOK_CLAIM_SECONDS * 1000);
}

/**
 * Opens the delivery of a task that ended, to its `webhookUrl` or else the account's default, when
 * the account has a signing secret. Idempotent: a task has one delivery.
 * @returns what happened, for logs and tests
 */
export async function openDelivery(
  lc: Pick<Lifecycle, 'store' | 'now'> & { webhooks?: Pick<WebhookSettingsWiring, 'maxOpenDeliveries'> },
  ref: EndedTaskRef,
  log: Logger,
): Promise<
  'opened' | 'exists' | 'dropped' | 'refused-at-first-send' | 'cancelled' | 'no-endpoint' | 'no-secret' | 'not-ended'
> {
  const [task, settings] = await Promise.all([
    getTask(lc.store, ref.userId, ref.taskId),
    getWebhookSettings(lc.store, ref.userId),
  ]);
  const eventType = task ? webhookEventOf(task.status) : undefined;
  if (!task || !eventType) return 'not-ended';
  // It never reached the upstream and cost nothing: no free signed traffic for it (its caller polls).
  if (refusedAtFirstSend(task)) return 'refused-at-first-send';
  // Cancelled by its owner while queued: the same, and the owner has the answer already.
  if (cancelledByOwner(task)) return 'cancelled';
  const eventId = taskEventId(task.userId, task.taskId);
  // The account's own endpoints get the event too, with the same id (lifecycle/endpoint-deliveries.ts).
  await fanOutToEndpoints(
    {
      store: lc.store,
      now: lc.now,
      ...(lc.webhooks?.maxOpenDeliveries ? { maxOpenDeliveries: lc.webhooks.maxOpenDeliveries } : {}),
    },
    { userId: task.userId, eventId, type: eventType, eventAt: task.updatedAt, taskId: task.taskId },
    log,
  );
  const url = task.webhookUrl ?? settings?.url;
  if (!url) return 'no-endpoint';
  if (!settings?.sealedSecret) {
    log.warn('Task has a webhook endpoint but its account has no signing secret; nothing is sent', {
      taskId: task.taskId,
    });
    return 'no-secret';
  }
  const now = lc.now();
  const maxOpen = lc.webhooks?.maxOpenDeliveries ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES;
  const opened = await createDelivery(lc.store, {
    userId: task.userId,
    taskId: task.taskId,
    webhookId: eventId,
    url,
    eventType,
    eventAt: task.updatedAt,
    claimId: randomUUID(),
    leaseUntil: leaseFrom(now),
    now,
    maxOpen,
    dropReason: droppedDeliveryReason(maxOpen),
  });
  if (opened === 'opened') log.info('Webhook delivery opened', { taskId: task.taskId, eventType });
  if (opened === 'dropped') {
    log.warn('Webhook delivery dropped: the account is at its bound of open deliveries', {
      taskId: task.taskId,
      maxOpen,
    });
  }
  return opened;
}

/**
 * Makes the claimed attempt and records it with what comes next: delivered on a 2xx, else the next
 * time of the schedule, or failed when the schedule is spent. Nothing is sent when the claim is not
 * (or no longer) the delivery's: a redelivered stream record costs one read.
 * @returns the recorded outcome, or undefined when nothing was attempted
 */
export async function attemptDelivery(
  lc: WebhookLifecycle,
  ref: ClaimedDeliveryRef,
  log: Logger,
): Promise<(AttemptOutcome & { next: AfterAttempt['state'] }) | undefined> {
  const delivery = await getDelivery(lc.store, ref.userId, ref.taskId);
  if (delivery?.deliveryState !== 'sending' || delivery.claimId !== ref.claimId) return undefined;
  // An account event carries its data on the delivery (lifecycle/account-events.ts): no task to read.
  const accountEvent = delivery.data;
  const [task, settings] = await Promise.all([
    accountEvent ? undefined : getTask(lc.store, ref.userId, ref.taskId),
    getWebhookSettings(lc.store, ref.userId),
  ]);
  const attempt = delivery.attempts + 1;
  const startedAt = lc.now();
  let outcome: AttemptOutcome;
  if (!accountEvent && (!task || task.status === TaskStatus.PENDING)) {
    outcome = { error: 'The task is gone', durationMs: 0 };
  } else if (!settings?.sealedSecret) {
    outcome = { error: 'The account has no signing secret', durationMs: 0 };
  } else {
    try {
      // The resource as GET shows it now: result URLs signed afresh for every attempt, so a retry hours
      // later still carries working links.
      const data = accountEvent ?? (task ? await presentTask(lc, task) : undefined);
      if (!data) throw new Error('Nothing to send');
      const secret = await lc.webhooks.box.open(ref.userId, settings.sealedSecret);
      const body = JSON.stringify(webhookPayload(delivery.eventType, delivery.eventAt, data));
      outcome = await sendWebhook(delivery.url, { id: delivery.webhookId, timestamp: startedAt, body }, secret, {
        policy: lc.webhooks.policy,
        ...(lc.webhooks.resolve ? { resolve: lc.webhooks.resolve } : {}),
        ...(lc.webhooks.timeoutMs ? { timeoutMs: lc.webhooks.timeoutMs } : {}),
      });
    } catch (error) {
      // Our fault (a secret that does not open, a URL that cannot be signed): recorded as a failed
      // attempt, so the schedule still ends, instead of a claim taken again every two minutes forever.
      log.error('Preparing a webhook attempt failed', { taskId: ref.taskId, error });
      outcome = { error: 'The service could not prepare the delivery', durationMs: 0 };
    }
  }
  const finishedAt = lc.now();
  let next: AfterAttempt;
  if (isDelivered(outcome.statusCode)) next = { state: 'delivered' };
  else {
    const dueAt = nextAttemptAt(attempt, finishedAt, lc.webhooks.retryDelays);
    next = dueAt ? { state: 'waiting', dueAt } : { state: 'failed' };
  }
  const recorded = await recordAttempt(lc.store, {
    userId: ref.userId,
    taskId: ref.taskId,
    claimId: ref.claimId,
    attempt: {
      attempt,
      at: startedAt.toISOString(),
      durationMs: outcome.durationMs,
      ...(outcome.statusCode === undefined ? {} : { statusCode: outcome.statusCode }),
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
    },
    next,
    now: finishedAt,
    countsOpen: delivery.countsOpen === true,
  });
  const fields = { taskId: ref.taskId, attempt, statusCode: outcome.statusCode, error: outcome.error };
  if (!recorded) log.warn('Webhook attempt made but its claim was lost; not recorded', fields);
  else if (next.state === 'failed') log.warn('Webhook delivery gave up: the retry schedule is spent', fields);
  else if (next.state === 'waiting') log.info('Webhook attempt failed; retrying later', fields);
  else log.info('Webhook delivered', fields);
  return { ...outcome, next: next.state };
}

/**
 * The sweeper's part: claims every delivery that is due (its next attempt's time came, or its claim
 * ran out). Each claim reaches the worker through the stream. Cheap: one Query per shard and one
 * conditional write per due delivery.
 * @returns how many were claimed
 */
export async function claimDueDeliveries(store: StoreContext, now: Date, log: Logger): Promise<number> {
  const due = await allDueDeliveries(store, now);
  let claimed = 0;
  await Promise.all(
    due.map(async (ref) => {
      try {
        if (await claimDelivery(store, { ...ref, claimId: randomUUID(), leaseUntil: leaseFrom(now), now })) claimed++;
      } catch (error) {
        log.error('Claiming a webhook delivery failed; the next sweep tries again', { taskId: ref.taskId, error });
      }
    }),
  );
  return claimed;
}
