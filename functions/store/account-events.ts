/**
 * The items behind account events (core/account-events.ts): the account's alert settings
 * (`USER#<id>` / `ALERTS`: `lowBalanceThreshold`), and the markers that make each event once-only. A
 * marker is put only in the transaction that opens the event's delivery, on `attribute_not_exists`
 * (store/webhook-delivery-opening.ts `createEventDelivery`), so however many dispatchers see one crossing at once,
 * exactly one opens its delivery:
 *
 * - a key budget's threshold in a period: `KEYSPEND#<budgetKeyId>#<period>#ALERT<80|100>`, beside the
 *   period's spend counter (one Query reads both); it expires with the counter (a `total` one never);
 * - `credits.low`: `ALERTS#LOWBALANCE`, beside the settings (one Query reads both); re-armed when the
 *   balance is seen at or above the threshold again, or the threshold changes.
 *
 * A marker counts while it has `sentAt`. Re-arming removes that attribute (an update): the item stays,
 * and the next event's put replaces it. So nothing here deletes, and the dispatcher, which re-arms, needs
 * no DeleteItem on the account's items. Every write of the `credits.low` marker sets a new `markerId`,
 * and every write requires the one its writer read: opening an event, re-arming it, opening the next are
 * a chain of compare-and-sets, so a look overtaken by another (a stale balance, a top-up between its
 * reads and its write) writes nothing.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { KeySpendLimit } from '../core/task';
import { attr, withCondition } from './conditions';
import { lostCondition, type RetryingStoreContext, withRetry } from './errors';
import { accountKeys, webhookKeys } from './keys';
import { sumSpentShards } from './spend';
import { TABLE } from './table';
import * as keys from './task-keys';
import { type TransactItem, transact } from './transaction';
import * as webhookConditions from './webhook-condition-fragments';

/** The account's alert settings and whether `credits.low` was sent for the current crossing. */
export interface AccountAlerts {
  lowBalanceThreshold?: number;
  /** The marker of the current crossing is there: `credits.low` was sent, and is not sent again until re-armed. */
  lowBalanceSent: boolean;
  /**
   * The marker's version (`markerId`: the event id that put it, or a fresh id from each re-arm), when
   * there is a marker: opening the next event and re-arming both require it unchanged (compare-and-set).
   */
  lowBalanceMarkerId?: string;
}

/** Items of one partition whose sort keys begin with `prefix` (consistent, one page: a few items). */
async function itemsWithPrefix(
  ctx: RetryingStoreContext,
  key: { PK: string; SK: string },
): Promise<Record<string, unknown>[]> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          KeyConditionExpression: `${attr('PK')} = :pk AND begins_with(${attr('SK')}, :sk)`,
          ExpressionAttributeNames: { [attr('PK')]: TABLE.partitionKey, [attr('SK')]: TABLE.sortKey },
          ExpressionAttributeValues: { ':pk': key.PK, ':sk': key.SK },
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  return out.Items ?? [];
}

/** The account's alerts (one Query of the settings and the `credits.low` marker). */
export async function getAccountAlerts(ctx: RetryingStoreContext, userId: string): Promise<AccountAlerts> {
  const items = await itemsWithPrefix(ctx, webhookKeys.alerts(userId));
  const settings = items.find((item) => item[TABLE.sortKey] === webhookKeys.alerts(userId).SK);
  const threshold = settings?.lowBalanceThreshold;
  const marker = items.find((item) => item[TABLE.sortKey] === webhookKeys.lowBalanceMarker(userId).SK);
  return {
    ...(typeof threshold === 'number' ? { lowBalanceThreshold: threshold } : {}),
    lowBalanceSent: marker?.sentAt !== undefined,
    ...(typeof marker?.markerId === 'string' ? { lowBalanceMarkerId: marker.markerId } : {}),
  };
}

/**
 * Sets (a number) or removes (null) the account's low-balance threshold. Either way the `credits.low`
 * marker is re-armed in the same transaction: a new threshold starts armed (a balance already below it
 * sends the event once, at the next task).
 */
export async function setLowBalanceThreshold(
  ctx: RetryingStoreContext,
  input: { userId: string; threshold: number | null; now: Date },
): Promise<AccountAlerts> {
  const { userId, threshold } = input;
  await transact(
    ctx,
    // Built per try: each try marks with a fresh id.
    (): TransactItem[] => [
      {
        Update: {
          TableName: ctx.tableName,
          Key: webhookKeys.alerts(userId),
          UpdateExpression:
            threshold === null
              ? 'SET #userId = :userId, #updatedAt = :now REMOVE #threshold'
              : 'SET #userId = :userId, #updatedAt = :now, #threshold = :threshold',
          ExpressionAttributeNames: {
            '#userId': 'userId',
            '#updatedAt': 'updatedAt',
            '#threshold': 'lowBalanceThreshold',
          },
          ExpressionAttributeValues: {
            ':userId': userId,
            ':now': input.now.toISOString(),
            ...(threshold === null ? {} : { ':threshold': threshold }),
          },
        },
      },
      {
        // Re-armed, with a new version: an opening that read the marker before this write fails.
        Update: {
          TableName: ctx.tableName,
          Key: webhookKeys.lowBalanceMarker(userId),
          UpdateExpression: 'SET #userId = :userId, #markerId = :markerId REMOVE #sentAt',
          ExpressionAttributeNames: { '#userId': 'userId', '#sentAt': 'sentAt', '#markerId': 'markerId' },
          ExpressionAttributeValues: { ':userId': userId, ':markerId': `rearm_${randomUUID()}` },
        },
      },
    ],
    ctx.retry,
  );
  return { ...(threshold === null ? {} : { lowBalanceThreshold: threshold }), lowBalanceSent: false };
}

/**
 * Re-arms `credits.low`: clears the marker of the crossing it was sent for (the balance was seen at or
 * above the threshold again), only while it is the version `markerId` read: a look whose reads were
 * overtaken by a top-up and a new crossing must not clear the new crossing's marker. The re-armed marker
 * gets a new version. False when the marker changed meanwhile.
 */
export async function rearmLowBalance(ctx: RetryingStoreContext, userId: string, markerId: string): Promise<boolean> {
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: webhookKeys.lowBalanceMarker(userId),
            ...withCondition(
              {
                UpdateExpression: 'SET #markerId = :rearmed REMOVE #sentAt',
                ExpressionAttributeNames: { '#sentAt': 'sentAt', '#markerId': 'markerId' },
                ExpressionAttributeValues: { ':rearmed': `rearm_${randomUUID()}` },
              },
              webhookConditions.eventMarkerSentAs(markerId),
            ),
          }),
        ),
      ctx.retry,
    );
    return true;
  } catch (error) {
    lostCondition(error);
    return false;
  }
}

/** A key budget's period as the events see it: what was spent, and the thresholds already sent. */
export interface BudgetPeriodState {
  spent: number;
  /** The thresholds (percent) whose event was opened in this period. */
  sent: Set<number>;
}

/**
 * The spend counter of `budgetKeyId` for `periodName` and its markers: one consistent Query on the
 * counter's sort key as a prefix (a month's name is a prefix of its days' names: those are left out).
 */
export async function readBudgetPeriod(
  ctx: RetryingStoreContext,
  input: { userId: string; budgetKeyId: string; periodName: string },
): Promise<BudgetPeriodState> {
  const counter = keys.spendCounter(input.userId, input.budgetKeyId, input.periodName);
  const items = await itemsWithPrefix(ctx, counter);
  const state: BudgetPeriodState = { spent: 0, sent: new Set() };
  const markerPrefix = `${counter.SK}#ALERT`;
  // The counter is split over shards (store/spend.ts): what was spent is their sum.
  state.spent = sumSpentShards(counter.SK, items);
  for (const item of items) {
    const sk = String(item[TABLE.sortKey]);
    if (sk.startsWith(markerPrefix) && item.sentAt !== undefined) {
      const threshold = Number(sk.slice(markerPrefix.length));
      if (Number.isSafeInteger(threshold)) state.sent.add(threshold);
    }
  }
  return state;
}

/** The spend limit on a key's listing (what the key list shows), or undefined. */
export async function readKeySpendLimit(
  ctx: RetryingStoreContext,
  userId: string,
  keyId: string,
): Promise<KeySpendLimit | undefined> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: accountKeys.keyListing(userId, keyId),
          ConsistentRead: true,
          ProjectionExpression: '#spendLimit',
          ExpressionAttributeNames: { '#spendLimit': 'spendLimit' },
        }),
      ),
    ctx.retry,
  );
  const limit = out.Item?.spendLimit as Partial<KeySpendLimit> | undefined;
  if (
    typeof limit?.credits !== 'number' ||
    typeof limit.budgetKeyId !== 'string' ||
    (limit.period !== 'day' && limit.period !== 'month' && limit.period !== 'total')
  ) {
    return undefined;
  }
  return { credits: limit.credits, period: limit.period, budgetKeyId: limit.budgetKeyId };
}
