/**
 * Opening a webhook delivery: a task's (to its `webhookUrl` or the account's default endpoint), an
 * account event's, or an endpoint's (store/webhook-endpoints.ts), one rule for all. The delivery is
 * written with its first attempt claimed (`sending`), and that write, through the table's stream,
 * starts the attempt; in the same transaction the account's open-delivery count goes up
 * (store/webhook-open-count.ts). Past the bound, or behind deliveries queued already, it is written
 * `queued` instead, to be promoted in order (store/webhook-queue.ts).
 */
import type { AccountEventData } from '../core/account-events';
import type { WebhookEventType } from '../core/webhooks';
import * as conditions from './condition-fragments';
import { conditionParams } from './conditions';
import { type DeliveryOpenFailure, deliveryOpenFailure, type RetryingStoreContext } from './errors';
import { type ItemKey, webhookKeys } from './keys';
import { TABLE } from './table';
import { type TransactItem, transact } from './transaction';
import * as webhookConditions from './webhook-condition-fragments';
import { openNowCounterUpdate } from './webhook-open-count';
import { queueDelivery } from './webhook-queue';
import { webhookRecordTtl } from './webhooks';

/** What opening a delivery did (`queued`: past the bound, it waits its turn). */
export type DeliveryOpened = 'opened' | 'exists' | 'queued';

/** What opening any delivery needs. */
interface DeliveryRecordOpening {
  userId: string;
  /** The delivery's key: a task's id, an account event's (`evt_...`) or an endpoint delivery's (`dlv_...`). */
  id: string;
  /** What the delivery carries besides its state, claim, attempts and times (`userId`, `webhookId`, ...). */
  fields: Record<string, unknown>;
  claimId: string;
  leaseUntil: Date;
  now: Date;
  /** The account's bound on open deliveries. */
  maxOpen: number;
  /** An account event's once-only marker, put in the same transaction (`accountEventMarkerPut`). */
  markerPut?: TransactItem;
}

/**
 * Opens a delivery (`opened`), or past the bound writes it `queued` in the order of `queueOrder` (its
 * place among the account's queued deliveries: the event's feed number); without a `queueOrder`, `full`
 * and nothing written. `exists`: the delivery (or the account event's marker) is there already, a
 * redelivered record; nothing was written.
 */
export function openDeliveryRecord(
  ctx: RetryingStoreContext,
  input: DeliveryRecordOpening & { queueOrder: string },
): Promise<DeliveryOpened>;
export function openDeliveryRecord(
  ctx: RetryingStoreContext,
  input: DeliveryRecordOpening & { queueOrder?: string },
): Promise<DeliveryOpened | 'full'>;
export async function openDeliveryRecord(
  ctx: RetryingStoreContext,
  input: DeliveryRecordOpening & { queueOrder?: string },
): Promise<DeliveryOpened | 'full'> {
  const leaseIso = input.leaseUntil.toISOString();
  const now = input.now.toISOString();
  const base = { ...input.fields, attempts: 0, createdAt: now, updatedAt: now };
  const ttl = webhookRecordTtl(input.now);
  const { markerPut } = input;
  const layout = { delivery: 0, counter: 1, ...(markerPut ? { marker: 2 } : {}) };
  let failure: DeliveryOpenFailure;
  try {
    await transact(
      ctx,
      [
        {
          Put: {
            TableName: ctx.tableName,
            Item: {
              ...webhookKeys.delivery(input.userId, input.id),
              ...webhookKeys.due(input.id, leaseIso),
              ...base,
              deliveryState: 'sending',
              claimId: input.claimId,
              dueAt: leaseIso,
              countsOpen: true,
              ...ttl,
            },
            ...conditionParams(conditions.itemIsNew()),
          },
        },
        openNowCounterUpdate(ctx.tableName, { userId: input.userId, maxOpen: input.maxOpen, now }),
        ...(markerPut ? [markerPut] : []),
      ],
      ctx.retry,
    );
    return 'opened';
  } catch (error) {
    failure = deliveryOpenFailure(error, layout);
  }
  if (failure === 'exists') return 'exists';
  if (input.queueOrder === undefined) return 'full';
  return queueDelivery(ctx, {
    userId: input.userId,
    id: input.id,
    order: input.queueOrder,
    delivery: base,
    ttl,
    maxOpen: input.maxOpen,
    now,
    ...(markerPut ? { markerPut } : {}),
  });
}

/** What a task's or an account event's delivery is opened with. */
interface DeliveryOpening {
  userId: string;
  webhookId: string;
  url: string;
  eventType: WebhookEventType;
  eventAt: string;
  claimId: string;
  leaseUntil: Date;
  now: Date;
  /** The account's bound on open deliveries. */
  maxOpen: number;
  /** Its place among the account's queued deliveries, should it wait (the event's feed number). */
  queueOrder: string;
}

/**
 * Creates a task's delivery with its first attempt claimed (`sending`); this write, through the
 * stream, starts the attempt. In the same transaction the account's count of open deliveries goes up
 * by one, on the condition that it is below `maxOpen` with none queued. Else it is written `queued`,
 * unclaimed, to be promoted in order (store/webhook-queue.ts). `exists`:
 * the task has a delivery already (a redelivered record); nothing was written.
 */
export function createDelivery(
  ctx: RetryingStoreContext,
  input: DeliveryOpening & { taskId: string },
): Promise<DeliveryOpened> {
  const { taskId, ...opening } = input;
  return openDeliveryRecord(ctx, { ...openingOf(opening), id: taskId, fields: { ...fieldsOf(opening), taskId } });
}

/**
 * Creates the delivery of an account event (core/account-events.ts) as `createDelivery` creates a
 * task's, keyed by the event's id (`evt_...`) where a task's is keyed by the task id, with its `data`
 * on the item (there is no task to read at each attempt). `marker` is the item that makes the event
 * once-only (a key budget's threshold in a period, a crossing of the low-balance threshold): it is put
 * in the same transaction, only when it is as the caller read it (missing, or re-armed: without
 * `sentAt`), also when the delivery waits past the bound. `exists`: the
 * marker is there, the event was opened before; nothing was written.
 */
export function createEventDelivery(
  ctx: RetryingStoreContext,
  input: DeliveryOpening & {
    eventId: string;
    data: AccountEventData;
    marker: ItemKey;
    /**
     * The `markerId` of the re-armed marker the caller read, or undefined when it read none: the put
     * requires the marker unchanged since (a compare-and-set).
     */
    markerRead?: string;
    /** When the marker may go (epoch seconds; a period's end and then some); undefined: kept. */
    markerExpiresAt?: number;
  },
): Promise<DeliveryOpened> {
  const { eventId, data, marker, markerExpiresAt, markerRead, ...opening } = input;
  const markerPut = accountEventMarkerPut(ctx, {
    userId: input.userId,
    eventId,
    eventType: input.eventType,
    marker,
    ...(markerRead === undefined ? {} : { markerRead }),
    ...(markerExpiresAt === undefined ? {} : { markerExpiresAt }),
    now: input.now,
  });
  return openDeliveryRecord(ctx, {
    ...openingOf(opening),
    id: eventId,
    fields: { ...fieldsOf(opening), eventId, data },
    markerPut,
  });
}

function openingOf(opening: DeliveryOpening) {
  const { claimId, leaseUntil, now, maxOpen, queueOrder, userId } = opening;
  return { userId, claimId, leaseUntil, now, maxOpen, queueOrder };
}

function fieldsOf(opening: DeliveryOpening): Record<string, unknown> {
  const { userId, webhookId, url, eventType, eventAt } = opening;
  return { userId, webhookId, url, eventType, eventAt };
}

/**
 * The once-only marker of an account event as a transaction's put: put only when the marker is as the
 * caller read it, missing or re-armed (`sentAt` removed by an update, never a delete, so the functions
 * that re-arm need no DeleteItem) with `markerRead` (`eventMarkerAsRead`). The default endpoint's
 * delivery carries it (`createEventDelivery`), else the first endpoint's (lifecycle/endpoint-deliveries.ts).
 */
export function accountEventMarkerPut(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    eventId: string;
    eventType: string;
    marker: ItemKey;
    markerRead?: string;
    markerExpiresAt?: number;
    now: Date;
  },
): TransactItem {
  return {
    Put: {
      TableName: ctx.tableName,
      Item: {
        ...input.marker,
        userId: input.userId,
        markerId: input.eventId,
        eventId: input.eventId,
        eventType: input.eventType,
        sentAt: input.now.toISOString(),
        ...(input.markerExpiresAt === undefined ? {} : { [TABLE.ttlAttribute]: input.markerExpiresAt }),
      },
      ...conditionParams(webhookConditions.eventMarkerAsRead(input.markerRead)),
    },
  };
}

/** An account event's marker as the caller read it (`accountEventMarkerPut` without the time). */
export type MarkerPutInput = Omit<Parameters<typeof accountEventMarkerPut>[1], 'now'>;
