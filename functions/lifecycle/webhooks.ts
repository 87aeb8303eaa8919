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
import {
  cancelledByOwner,
  DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES,
  refusedAtFirstSend,
  WEBHOOK_CLAIM_SECONDS,
  webhookEventOf,
  webhookPayload,
} from '../core/webhooks';
import type { ResolveHost } from '../media/public-address';
import type { SourcePolicy } from '../media/source-policy';
import type { Logger } from '../observability/logger';
import type { StoreContext } from '../store/client';
import { feedOpeningOf, markDeliveriesOpened, type RecordedEvent } from '../store/event-feed';
import { getTask } from '../store/tasks';
import { createDelivery } from '../store/webhook-delivery-opening';
import { allDueDeliveries, claimDelivery } from '../store/webhook-due-deliveries';
import { countDeliveries } from '../store/webhook-queue';
import { getWebhookSettings } from '../store/webhook-settings';
import { type AfterAttempt, getDelivery } from '../store/webhooks';
import type { SecretBox } from '../webhooks/secret-box';
import { type AttemptOutcome, sendWebhook } from '../webhooks/send';
import { ACCOUNT_CLOSED_REASON, isAccountClosed } from './closed-account';
import { fanOutToEndpoints } from './endpoint-deliveries';
import { queueOrderOf, recordTaskEvents, taskEventKey } from './event-feed';
import type { Lifecycle } from './lifecycle';
import { presentTask } from './present-task';
import { recordFinishedAttempt } from './record-attempt';
import { wakeQueuedDeliveries, wakeQueuedEverywhere } from './webhook-queue';

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

/** Tries (`withRetry`'s attempts) at writes off the request path whose throw costs a stream record's retries. */
const RECORD_ATTEMPTS = 12;

function leaseFrom(now: Date): Date {
  return new Date(now.getTime() + WEBHOOK_CLAIM_SECONDS * 1000);
}

/** What opening a task's delivery came to. */
export type OpeningOutcome =
  | 'opened'
  | 'exists'
  | 'queued'
  | 'account-closed'
  | 'refused-at-first-send'
  | 'cancelled'
  | 'no-endpoint'
  | 'no-secret'
  | 'not-ended';

/** What opening needs: the table, the clock, the bound on open deliveries. */
type OpeningLifecycle = Pick<Lifecycle, 'store' | 'now'> & {
  webhooks?: Pick<WebhookSettingsWiring, 'maxOpenDeliveries'>;
};

/**
 * Opens the delivery of a task that ended, to its `webhookUrl` or else the account's default, when
 * the account has a signing secret. Idempotent: a task has one delivery. First the task's event goes
 * into the account's feed (whatever follows), unless the caller recorded it (`feedEvent`, the worker
 * records a batch's at once): the delivery's `webhook-id` is the event's feed id, and past the bound it
 * waits in the order of its feed number (`queued`). Once decided, the event leaves the due index where
 * the sweeper would open it (`reopenLostDeliveries`); a throw leaves it there.
 * @returns what happened, for logs and tests
 */
export async function openDelivery(
  lc: OpeningLifecycle,
  ref: EndedTaskRef,
  log: Logger,
  feedEvent?: RecordedEvent,
): Promise<OpeningOutcome> {
  const outcome = await decideDelivery(lc, ref, log, feedEvent);
  await markDeliveriesOpened(lc.store, ref.userId, ref.taskId);
  return outcome;
}

async function decideDelivery(
  lc: OpeningLifecycle,
  ref: EndedTaskRef,
  log: Logger,
  feedEvent?: RecordedEvent,
): Promise<OpeningOutcome> {
  const [task, settings, closed] = await Promise.all([
    getTask(lc.store, ref.userId, ref.taskId),
    getWebhookSettings(lc.store, ref.userId),
    isAccountClosed(lc.store, ref.userId),
  ]);
  const eventType = task ? webhookEventOf(task.status) : undefined;
  if (!task || !eventType) return 'not-ended';
  const event =
    feedEvent ?? (await recordTaskEvents(lc.store, [task], lc.now())).get(taskEventKey(task.userId, task.taskId));
  if (!event) throw new Error('The task ended but its feed event was not recorded');
  // A task that ended after its account closed (it was at the provider): nothing is sent about it, to
  // the default endpoint, its webhookUrl or the account's endpoints (lifecycle/closed-account.ts). Its
  // feed event is recorded and leaves the due index as any other's, so the sweeper does not reopen it.
  if (closed) {
    log.info('Webhook delivery not opened: the account is closed', { taskId: task.taskId });
    return 'account-closed';
  }
  // It never reached the upstream and cost nothing: no free signed traffic for it (its caller polls).
  if (refusedAtFirstSend(task)) return 'refused-at-first-send';
  // Cancelled by its owner while queued: the same, and the owner has the answer already.
  if (cancelledByOwner(task)) return 'cancelled';
  // The account's own endpoints get the event too, with the feed's id as every delivery's webhook-id,
  // waiting past the bound in the feed's order like the default endpoint's (lifecycle/endpoint-deliveries.ts).
  await fanOutToEndpoints(
    {
      store: { ...lc.store, retry: { maxAttempts: RECORD_ATTEMPTS } },
      now: lc.now,
      ...(lc.webhooks?.maxOpenDeliveries ? { maxOpenDeliveries: lc.webhooks.maxOpenDeliveries } : {}),
    },
    {
      userId: task.userId,
      eventId: event.id,
      order: queueOrderOf(event),
      type: eventType,
      eventAt: task.updatedAt,
      taskId: task.taskId,
    },
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
  // Off the request path, and a throw here costs the record's retries: more tries than a request's.
  const opened = await createDelivery(
    { ...lc.store, retry: { maxAttempts: RECORD_ATTEMPTS } },
    {
      userId: task.userId,
      taskId: task.taskId,
      webhookId: event.id,
      url,
      eventType,
      eventAt: task.updatedAt,
      claimId: randomUUID(),
      leaseUntil: leaseFrom(now),
      now,
      maxOpen,
      queueOrder: queueOrderOf(event),
    },
  );
  if (opened === 'opened') log.info('Webhook delivery opened', { taskId: task.taskId, eventType });
  if (opened === 'queued') {
    log.info('Webhook delivery queued: the account is at its bound of open deliveries', {
      taskId: task.taskId,
      maxOpen,
    });
    // A place may have freed between the bound's check and the queueing: whoever queues also wakes.
    await wakeQueuedDeliveries(lc.store, { userId: task.userId, maxOpen, now }, log);
  }
  return opened;
}

/**
 * Makes the claimed attempt and records it with what comes next: delivered on a 2xx, else the next
 * time of the schedule, or failed when the schedule is spent. Nothing is sent when the claim is not
 * (or no longer) the delivery's: a redelivered stream record costs one read. A closed account's
 * delivery (open when it closed, or queued past the bound) ends here without a request: `failed`, its
 * attempt recorded with the reason, no retry.
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
  const [task, settings, closed] = await Promise.all([
    accountEvent ? undefined : getTask(lc.store, ref.userId, ref.taskId),
    getWebhookSettings(lc.store, ref.userId),
    isAccountClosed(lc.store, ref.userId),
  ]);
  const attempt = delivery.attempts + 1;
  const startedAt = lc.now();
  let outcome: AttemptOutcome;
  if (closed) {
    outcome = { error: ACCOUNT_CLOSED_REASON, durationMs: 0 };
  } else if (!accountEvent && (!task || task.status === TaskStatus.PENDING)) {
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
  const countsOpen = delivery.countsOpen === true;
  const { recorded, next } = await recordFinishedAttempt(
    lc,
    { ref, attempt, startedAt, outcome, countsOpen, last: closed },
    log,
  );
  const fields = { taskId: ref.taskId, attempt, statusCode: outcome.statusCode, error: outcome.error };
  if (!recorded) log.warn('Webhook attempt made but its claim was lost; not recorded', fields);
  else if (closed) log.info('Webhook delivery ended without a request: the account is closed', fields);
  else if (next.state === 'failed') log.warn('Webhook delivery gave up: the retry schedule is spent', fields);
  else if (next.state === 'waiting') log.info('Webhook attempt failed; retrying later', fields);
  else log.info('Webhook delivered', fields);
  return { ...outcome, next: next.state };
}

/**
 * The sweeper's part: claims every delivery that is due (its next attempt's time came, or its claim
 * ran out). Each claim reaches the worker through the stream. Cheap: one Query per shard and one
 * conditional write per due delivery.
 * Before that it promotes the queued deliveries of accounts below their bound (a wake-up that was lost).
 * @returns how many were claimed or promoted
 */
export async function claimDueDeliveries(store: StoreContext, now: Date, log: Logger): Promise<number> {
  // The backstop of the queue past the bound: a place freed whose promotion was lost is taken now.
  const promoted = await wakeQueuedEverywhere(store, now, log);
  const listed = await allDueDeliveries(store, now);
  const due = listed.filter((ref) => feedOpeningOf(ref.dueKey) === undefined);
  const reopened = await reopenLostDeliveries(store, listed, now, log);
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
  return claimed + promoted + reopened;
}

/**
 * The backstop of openings: an ended task's event whose deliveries were not opened in time (its
 * worker record failed all its retries, or the worker died) is opened here, as the worker would have,
 * under the bound stored with the account's queue (else the default). Nothing is lost to a record that
 * went to the dead-letter queue.
 * @returns how many events were looked at again
 */
async function reopenLostDeliveries(
  store: StoreContext,
  listed: readonly { userId: string; dueKey: string }[],
  now: Date,
  log: Logger,
): Promise<number> {
  let reopened = 0;
  for (const ref of listed) {
    const taskId = feedOpeningOf(ref.dueKey);
    if (taskId === undefined) continue;
    try {
      const { maxOpen } = await countDeliveries(store, ref.userId);
      const lc = {
        store,
        now: () => now,
        ...(maxOpen === undefined ? {} : { webhooks: { maxOpenDeliveries: maxOpen } }),
      };
      const outcome = await openDelivery(lc, { userId: ref.userId, taskId }, log);
      log.warn('Webhook delivery opened by the sweeper: the worker had not opened it', { taskId, outcome });
      reopened++;
    } catch (error) {
      log.error('Opening a lost webhook delivery failed; the next sweep tries again', { taskId, error });
    }
  }
  return reopened;
}
