/**
 * Named condition fragments of the webhook items (deliveries, their queue and counter, endpoints, the
 * event feed, account events' markers), one export each (`import * as webhookConditions from
 * './webhook-condition-fragments'`), as store/condition-fragments.ts holds the money paths': a bundle
 * keeps only the fragments its code uses, so the request path carries none of these. Each fragment owns
 * distinct value placeholders, so fragments combine without clashes (store/conditions.ts `and`).
 */
import { attr, type Expr, namesOf } from './conditions';
import { TABLE } from './table';

/**
 * An account event's once-only marker is as the caller read it: missing (`markerRead` undefined), or
 * re-armed (no `sentAt`) with the `markerId` read. Any write since (another event, a re-arm) changed
 * `markerId`, so the put fails and the event counts as opened (store/account-events.ts).
 */
export const eventMarkerAsRead = (markerRead: string | undefined): Expr =>
  markerRead === undefined
    ? {
        expression: `attribute_not_exists(${attr('markerPk')})`,
        names: { [attr('markerPk')]: TABLE.partitionKey },
        values: {},
      }
    : {
        expression: `${attr('markerId')} = :markerRead AND attribute_not_exists(${attr('sentAt')})`,
        names: namesOf('markerId', 'sentAt'),
        values: { ':markerRead': markerRead },
      };

/** An account event's marker counts (`sentAt`) and is still the version `markerId` read: a re-arm's check. */
export const eventMarkerSentAs = (markerId: string): Expr => ({
  expression: `attribute_exists(${attr('sentAt')}) AND ${attr('markerId')} = :markerId`,
  names: namesOf('sentAt', 'markerId'),
  values: { ':markerId': markerId },
});

/**
 * The account may open a delivery straight away: below its bound, and nothing queued ahead (a missing
 * counter is none of either; store/webhook-queue.ts).
 */
export const openNow = (limit: number): Expr => ({
  expression:
    `(attribute_not_exists(${attr('openDeliveries')}) OR ${attr('openDeliveries')} < :openLimit) AND ` +
    `(attribute_not_exists(${attr('queuedDeliveries')}) OR ${attr('queuedDeliveries')} <= :noneQueued)`,
  names: namesOf('openDeliveries', 'queuedDeliveries'),
  values: { ':openLimit': limit, ':noneQueued': 0 },
});

/** The delivery waits `queued` (nobody promoted it since its entry was read). */
export const deliveryQueued = (): Expr => ({
  expression: `${attr('deliveryState')} = :queuedState`,
  names: namesOf('deliveryState'),
  values: { ':queuedState': 'queued' },
});

/**
 * The delivery is as the caller read it: the same state, not updated since (`updatedAt`). A redelivery
 * claims only what the caller saw (store/webhook-endpoints.ts `claimRedelivery`).
 */
export const deliveryAsRead = (state: string, updatedAt: string): Expr => ({
  expression: `${attr('deliveryState')} = :stateRead AND ${attr('updatedAt')} = :updatedRead`,
  names: namesOf('deliveryState', 'updatedAt'),
  values: { ':stateRead': state, ':updatedRead': updatedAt },
});

/**
 * The account's open-delivery counter is listed in the sweeper's index of accounts with queued
 * deliveries, and none is queued any more: it may leave the list.
 */
export const listedWithNoneQueued = (): Expr => ({
  expression: `attribute_exists(${attr(TABLE.pendingIndex.partitionKey)}) AND (attribute_not_exists(${attr('queuedDeliveries')}) OR ${attr('queuedDeliveries')} <= :noneQueued)`,
  names: namesOf(TABLE.pendingIndex.partitionKey, 'queuedDeliveries'),
  values: { ':noneQueued': 0 },
});

/** The item sits in the due index (a feed event's source marker awaiting its deliveries). */
export const listedInDueIndex = (): Expr => ({
  expression: `attribute_exists(${attr(TABLE.pendingIndex.partitionKey)})`,
  names: namesOf(TABLE.pendingIndex.partitionKey),
  values: {},
});

/** The account has fewer than `max` webhook endpoints (a missing counter is none). */
export const endpointsBelow = (max: number): Expr => ({
  expression: `attribute_not_exists(${attr('endpoints')}) OR ${attr('endpoints')} < :maxEndpoints`,
  names: namesOf('endpoints'),
  values: { ':maxEndpoints': max },
});

/**
 * The feed's counter still holds `last`, the number read (a missing counter holds 0): recording a batch
 * is a compare-and-set on it (store/event-feed.ts).
 */
export const feedCounterAt = (last: number): Expr =>
  last === 0
    ? { expression: `attribute_not_exists(${attr('seq')})`, names: namesOf('seq'), values: {} }
    : { expression: `${attr('seq')} = :last`, names: namesOf('seq'), values: { ':last': last } };
