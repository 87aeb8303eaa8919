/**
 * Account events, detected off the request path (docs/api/webhooks.md): `key.spend_limit.warning` and
 * `key.spend_limit.reached` when a key's spending in the current period reaches 80% and 100% of its
 * limit, `credits.low` when the balance falls below the account's threshold.
 *
 * Where they are detected: the dispatcher, each time it claims a queued task for sending
 * (`noticeSpending`, wired by functions/dispatcher/handler.ts as the run's `onClaimed`). Every accepted
 * task passes there exactly once, after its accept committed, with its owner, its key (`keyId`) and
 * whether that key had a limit (`spendCounter`). So the last accept of a crossing is always followed by
 * a look at the counter or balance it moved, the submit functions gain no code and no write, and
 * lifecycle/dispatch.ts knows nothing of events (it only reports its claims). The look runs beside the
 * send, never before it. The price is the queue: the event comes when the crossing task leaves the queue
 * (within a second when the provider has room).
 *
 * Once only: each event's delivery is opened in one transaction with a marker item put only when missing
 * (store/account-events.ts), so any number of dispatchers seeing one crossing open one delivery. The
 * markers are read first, so a task after a crossing costs a read, never a failed write.
 */
import { randomUUID } from 'node:crypto';
import {
  type AccountEventData,
  type AccountEventType,
  isCreditsLow,
  newAccountEventId,
  spendEventType,
  spendThresholdsReached,
} from '../core/account-events';
import { spendPeriodOf } from '../core/spend-limit';
import type { TaskRecord } from '../core/task';
import { DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES, WEBHOOK_CLAIM_SECONDS } from '../core/webhooks';
import type { Logger } from '../observability/logger';
import { getAccountAlerts, readBudgetPeriod, readKeySpendLimit, rearmLowBalance } from '../store/account-events';
import { getBalance } from '../store/accounts';
import type { StoreContext } from '../store/client';
import { type RecordedEvent, recordFeedEvents } from '../store/event-feed';
import { webhookKeys } from '../store/keys';
import { SPEND_COUNTER_KEEP_SECONDS } from '../store/spend';
import * as keys from '../store/task-keys';
import { createEventDelivery, type DeliveryOpened } from '../store/webhook-delivery-opening';
import { getWebhookSettings, type WebhookSettings } from '../store/webhook-settings';
import { isAccountClosed } from './closed-account';
import { fanOutToEndpoints } from './endpoint-deliveries';
import { queueOrderOf } from './event-feed';

/** What noticing events needs: the table, the clock, the bound on open deliveries. */
export interface AccountEventsContext {
  store: StoreContext;
  now: () => Date;
  /** Open deliveries an account may have at once (`WEBHOOK_MAX_OPEN_DELIVERIES`); default 100. */
  maxOpenDeliveries?: number;
}

/**
 * What opening one account event came to (`account-closed`: nothing recorded nor opened, the account
 * closed meanwhile).
 */
export type AccountEventOutcome = DeliveryOpened | 'no-endpoint' | 'no-secret' | 'account-closed';

/** What one look found, for logs and tests. */
export interface NoticedEvents {
  events: { type: AccountEventType; outcome: AccountEventOutcome }[];
  /** `credits.low` was re-armed: the balance was seen at or above the threshold again. */
  rearmed: boolean;
}

/**
 * Looks at what a claimed task's accept moved: its key's budget in the current period (when the key has
 * a limit) and the account's balance (when the account has a low-balance threshold), and opens each
 * event whose threshold is reached and whose marker is missing. Reads: the alert settings (one Query)
 * for every task; the key's limit and its period's counter with its markers (a GetItem and a Query) for
 * a limited key; the balance (a Query) when a threshold is set.
 */
export async function noticeSpending(
  ctx: AccountEventsContext,
  task: Pick<TaskRecord, 'userId' | 'keyId' | 'spendCounter' | 'createdAt'>,
  log: Logger,
): Promise<NoticedEvents> {
  const noticed: NoticedEvents = { events: [], rearmed: false };
  // The settings and the closure are read once, side by side, and only when an event is to be opened.
  let reads: Promise<[WebhookSettings | undefined, boolean]> | undefined;
  const open = async (event: OpeningEvent) => {
    reads ??= Promise.all([getWebhookSettings(ctx.store, task.userId), isAccountClosed(ctx.store, task.userId)]);
    const [settings, closed] = await reads;
    // A task claimed as its account closed: no event about the account goes out (lifecycle/closed-account.ts).
    if (closed) {
      log.info('Account event not opened: the account is closed', { eventType: event.type });
      noticed.events.push({ type: event.type, outcome: 'account-closed' });
      return;
    }
    const eventId = newAccountEventId();
    const eventAt = ctx.now();
    const { outcome, feedEvent } = await openAccountEvent(ctx, settings, { ...event, eventId, eventAt }, log);
    noticed.events.push({ type: event.type, outcome });
    await fanOutAccountEvent(ctx, { ...event, eventId, eventAt }, feedEvent, outcome, log);
  };
  await Promise.all([
    noticeKeySpending(ctx, task, open),
    noticeLowBalance(ctx, task.userId, open).then((rearmed) => {
      noticed.rearmed = rearmed;
    }),
  ]);
  return noticed;
}

interface OpeningEvent {
  userId: string;
  type: AccountEventType;
  data: AccountEventData;
  marker: { PK: string; SK: string };
  /** The marker's version as read (a re-armed `credits.low`); undefined: it must be missing. */
  markerRead?: string;
  markerExpiresAt?: number;
}

async function noticeKeySpending(
  ctx: AccountEventsContext,
  task: Pick<TaskRecord, 'userId' | 'keyId' | 'spendCounter' | 'createdAt'>,
  open: (event: OpeningEvent) => Promise<void>,
): Promise<void> {
  // Only a task of a limited key recorded the counter it spent into.
  if (task.keyId === undefined || task.spendCounter === undefined) return;
  const limit = await readKeySpendLimit(ctx.store, task.userId, task.keyId);
  if (!limit) return;
  // The period the task was accepted in (the counter it spent into), not the one of this look: the last
  // task of a day, taken from the queue after midnight, still tells of that day's crossing.
  const period = spendPeriodOf(limit.period, new Date(task.createdAt));
  // The limit changed budget or period since the accept: the tasks under the new one are looked at.
  if (keys.spendCounter(task.userId, limit.budgetKeyId, period.name).SK !== task.spendCounter) return;
  const state = await readBudgetPeriod(ctx.store, {
    userId: task.userId,
    budgetKeyId: limit.budgetKeyId,
    periodName: period.name,
  });
  const due = spendThresholdsReached(state.spent, limit.credits).filter((threshold) => !state.sent.has(threshold));
  const markerExpiresAt =
    period.resetsAt === undefined
      ? undefined
      : Math.floor(period.resetsAt.getTime() / 1000) + SPEND_COUNTER_KEEP_SECONDS;
  // The warning first: a task that crosses both at once sends both, in order of their thresholds.
  for (const threshold of due) {
    await open({
      userId: task.userId,
      type: spendEventType(threshold),
      data: {
        keyId: task.keyId,
        limit: limit.credits,
        period: limit.period,
        spent: state.spent,
        resetsAt: period.resetsAt?.toISOString() ?? null,
      },
      marker: webhookKeys.spendMarker(task.userId, limit.budgetKeyId, period.name, threshold),
      ...(markerExpiresAt === undefined ? {} : { markerExpiresAt }),
    });
  }
}

/** @returns whether `credits.low` was re-armed */
async function noticeLowBalance(
  ctx: AccountEventsContext,
  userId: string,
  open: (event: OpeningEvent) => Promise<void>,
): Promise<boolean> {
  const alerts = await getAccountAlerts(ctx.store, userId);
  const threshold = alerts.lowBalanceThreshold;
  if (threshold === undefined) return false;
  const balance = await getBalance(ctx.store, userId);
  if (!isCreditsLow(balance, threshold)) {
    // Only the marker this look read: one put by a later crossing meanwhile stays.
    return (
      alerts.lowBalanceSent &&
      alerts.lowBalanceMarkerId !== undefined &&
      (await rearmLowBalance(ctx.store, userId, alerts.lowBalanceMarkerId))
    );
  }
  if (!alerts.lowBalanceSent) {
    await open({
      userId,
      type: 'credits.low',
      data: { balance, threshold },
      marker: webhookKeys.lowBalanceMarker(userId),
      // Opened only if the marker is still as read: no re-arm nor other event since this look's reads.
      ...(alerts.lowBalanceMarkerId === undefined ? {} : { markerRead: alerts.lowBalanceMarkerId }),
    });
  }
  return false;
}

/**
 * Re-arms `credits.low` after credits were added (a grant): when the balance is now at or above the
 * threshold, the next fall below it sends the event again. Cheap: one Query, and an update only when it
 * was sent. (Refunds re-arm at the dispatcher's next look, which sees the balance above.)
 * @returns whether it was re-armed
 */
export async function rearmAfterCredit(store: StoreContext, userId: string, balance: number): Promise<boolean> {
  const alerts = await getAccountAlerts(store, userId);
  if (!alerts.lowBalanceSent || alerts.lowBalanceMarkerId === undefined) return false;
  if (isCreditsLow(balance, alerts.lowBalanceThreshold)) return false;
  return rearmLowBalance(store, userId, alerts.lowBalanceMarkerId);
}

/**
 * Records the event in the account's feed (once per crossing: its source is the marker and the version
 * read), then opens its delivery to the account's default endpoint, signed like every delivery, with
 * the feed id as `webhook-id`. No endpoint or no secret: no delivery is written (the event is not sent,
 * and may be at a later look once they are set; the feed has it once).
 */
async function openAccountEvent(
  ctx: AccountEventsContext,
  settings: WebhookSettings | undefined,
  event: OpeningEvent & { eventId: string; eventAt: Date },
  log: Logger,
): Promise<{ outcome: AccountEventOutcome; feedEvent: RecordedEvent }> {
  const now = event.eventAt;
  const sourceId = `${event.marker.SK}#${event.markerRead ?? 'first'}`;
  const recorded = await recordFeedEvents(
    ctx.store,
    event.userId,
    [{ sourceId, type: event.type, timestamp: now.toISOString(), data: { ...event.data } }],
    now,
  );
  const feedEvent = recorded.get(sourceId);
  if (!feedEvent) throw new Error('The account event was not recorded in the feed');
  if (!settings?.url) return { outcome: 'no-endpoint', feedEvent };
  if (!settings.sealedSecret) {
    log.warn('The account has a webhook endpoint but no signing secret; its account event is not sent', {
      eventType: event.type,
    });
    return { outcome: 'no-secret', feedEvent };
  }
  const maxOpen = ctx.maxOpenDeliveries ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES;
  const eventId = event.eventId;
  const opened = await createEventDelivery(ctx.store, {
    userId: event.userId,
    eventId,
    data: event.data,
    marker: event.marker,
    ...(event.markerRead === undefined ? {} : { markerRead: event.markerRead }),
    ...(event.markerExpiresAt === undefined ? {} : { markerExpiresAt: event.markerExpiresAt }),
    webhookId: feedEvent.id,
    url: settings.url,
    eventType: event.type,
    eventAt: now.toISOString(),
    claimId: randomUUID(),
    leaseUntil: new Date(now.getTime() + WEBHOOK_CLAIM_SECONDS * 1000),
    now,
    maxOpen,
    queueOrder: queueOrderOf(feedEvent),
  });
  if (opened === 'opened') log.info('Account event opened', { eventId, eventType: event.type });
  // Woken by the next place that frees, or the sweeper's backstop: the dispatcher deletes no queue entry.
  if (opened === 'queued')
    log.info('Account event queued: the account is at its bound of open deliveries', { eventId, maxOpen });
  return { outcome: opened, feedEvent };
}

/**
 * Opens the event's deliveries to the account's own endpoints (lifecycle/endpoint-deliveries.ts): after
 * the default endpoint's delivery was opened (or queued), which put the once-only marker; or, when the
 * account has no default endpoint, with the marker on the first endpoint's delivery. `exists`: the event
 * was opened before, nothing more.
 */
async function fanOutAccountEvent(
  ctx: AccountEventsContext,
  event: OpeningEvent & { eventId: string; eventAt: Date },
  feedEvent: RecordedEvent,
  outcome: AccountEventOutcome,
  log: Logger,
): Promise<void> {
  if (outcome === 'exists') return;
  const withMarker = outcome === 'no-endpoint' || outcome === 'no-secret';
  await fanOutToEndpoints(
    ctx,
    {
      userId: event.userId,
      eventId: feedEvent.id,
      order: queueOrderOf(feedEvent),
      type: event.type,
      eventAt: event.eventAt.toISOString(),
      data: event.data,
      ...(withMarker
        ? {
            marker: {
              userId: event.userId,
              eventId: event.eventId,
              eventType: event.type,
              marker: event.marker,
              ...(event.markerRead === undefined ? {} : { markerRead: event.markerRead }),
              ...(event.markerExpiresAt === undefined ? {} : { markerExpiresAt: event.markerExpiresAt }),
            },
          }
        : {}),
    },
    log,
  );
}
