/**
 * The account's event feed (GET /api/events, docs/api/webhooks.md#the-event-feed): every event of the
 * account, numbered in the order it was recorded, kept 30 days (TTL), whether or not the account has a
 * webhook endpoint. Items, all in the account's partition:
 *
 * - `EVENTSEQ`: the last number given (`seq`);
 * - `EVENT#<seq, 12 digits>`: one event (`id` = the webhook's `webhook-id`, `type`, `timestamp`, `data`);
 * - `EVENTOF#<source>`: what makes it once-only: the source (a task id, an account event's crossing) is
 *   recorded once, and says which number and id it got.
 *
 * Events get their numbers in one transaction with the counter moving from the number read to the
 * number after the batch (a compare-and-set) and with each source's marker put only when missing. So a
 * number is never given twice nor skipped, an event is never recorded twice, and an event is visible
 * only together with every event numbered before it: a reader that has read up to n never later finds
 * an event below n (docs/decisions/0017-event-feed.md measures why this and not a write in the task's
 * own ending transaction).
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { WebhookEventType } from '../core/webhooks';
import * as conditions from './condition-fragments';
import { attr, conditionParams, update, updateParams, withCondition } from './conditions';
import {
  backoffDelay,
  cancellationReasons,
  isRetryable,
  isThrottled,
  lostCondition,
  type RetryingStoreContext,
  realSleep,
  withRetry,
} from './errors';
import { type ItemKey, webhookKeys } from './keys';
import { decodeCursor, encodeCursor } from './pages';
import { TABLE } from './table';
import * as webhookConditions from './webhook-condition-fragments';

/** How long events stay in the feed (TTL), as delivery records. */
export const EVENT_FEED_DAYS = 30;

/** Events recorded in one transaction at most: the counter and two items each stay under DynamoDB's 100. */
export const EVENTS_PER_TRANSACTION = 40;

/** Rounds of recording one batch may take (lost compare-and-sets to other recorders, conflicts). */
const MAX_ROUNDS = 40;

const SEQ_DIGITS = 12;

/** The feed's items (an object of their own, as `webhookKeys`). */
export const eventFeedKeys = {
  counter: (userId: string): ItemKey => ({ PK: `USER#${userId}`, SK: 'EVENTSEQ' }),
  event: (userId: string, seq: number): ItemKey => ({
    PK: `USER#${userId}`,
    SK: `EVENT#${String(seq).padStart(SEQ_DIGITS, '0')}`,
  }),
  source: (userId: string, sourceId: string): ItemKey => ({ PK: `USER#${userId}`, SK: `EVENTOF#${sourceId}` }),
} as const;

/** One event to record. */
export interface FeedEventInput {
  /** What makes it once-only: a task's id, or an account event's crossing. */
  sourceId: string;
  type: WebhookEventType;
  /** When it happened (ISO 8601): the payload's `timestamp`. */
  timestamp: string;
  data: Record<string, unknown>;
  /**
   * When the event's deliveries must have been opened by (ISO 8601): its source marker then sits in the
   * webhooks' due index under that time until `markDeliveriesOpened`, and the sweeper opens what a lost
   * worker record left unopened (lifecycle/webhooks.ts `claimDueDeliveries`). Absent: nothing to open.
   */
  openBy?: string;
}

/** An event as the feed lists it. */
export interface FeedEvent {
  /** The same as the webhook's `webhook-id` for this event. */
  id: string;
  type: WebhookEventType;
  timestamp: string;
  data: Record<string, unknown>;
}

/** Where a recorded event stands: its id and its number. */
export interface RecordedEvent {
  id: string;
  seq: number;
}

/** What recording took, for the decision record and the bench. */
export interface RecordingStats {
  /** Transactions sent (won and lost). */
  transactions: number;
  /** Rounds lost to another recorder's compare-and-set or a conflict. */
  lost: number;
}

function seqOf(item: Record<string, unknown> | undefined): number {
  const seq = item?.seq;
  return typeof seq === 'number' ? seq : 0;
}

async function readCounter(ctx: RetryingStoreContext, userId: string): Promise<number> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({ TableName: ctx.tableName, Key: eventFeedKeys.counter(userId), ConsistentRead: true }),
      ),
    ctx.retry,
  );
  return seqOf(out.Item);
}

async function readSource(
  ctx: RetryingStoreContext,
  userId: string,
  sourceId: string,
): Promise<RecordedEvent | undefined> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: eventFeedKeys.source(userId, sourceId),
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  const id = out.Item?.eventFeedId;
  return typeof id === 'string' ? { id, seq: seqOf(out.Item) } : undefined;
}

/**
 * Records `inputs` (in the order given) in the account's feed, each once: a source recorded before
 * keeps its number and id. Returns every input's id and number by source. Throws only when the table
 * keeps failing (the caller's record is then redelivered, and what was recorded stays recorded).
 */
export async function recordFeedEvents(
  ctx: RetryingStoreContext,
  userId: string,
  inputs: readonly FeedEventInput[],
  now: Date,
  stats: RecordingStats = { transactions: 0, lost: 0 },
): Promise<Map<string, RecordedEvent>> {
  const recorded = new Map<string, RecordedEvent>();
  const ttl = Math.floor(now.getTime() / 1000) + EVENT_FEED_DAYS * 86_400;
  // One id per source for the whole call: a retried round writes the same ids.
  const ids = new Map(inputs.map((input) => [input.sourceId, `msg_${randomUUID().replaceAll('-', '')}`]));
  let remaining = [...new Map(inputs.map((input) => [input.sourceId, input])).values()];
  let last = await readCounter(ctx, userId);
  for (let round = 1; remaining.length > 0; round++) {
    if (round > MAX_ROUNDS) throw new Error(`Recording ${remaining.length} feed event(s) lost ${MAX_ROUNDS} rounds`);
    const batch = remaining.slice(0, EVENTS_PER_TRANSACTION);
    const next = last + batch.length;
    stats.transactions++;
    try {
      await ctx.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: ctx.tableName,
                Key: eventFeedKeys.counter(userId),
                ...withCondition(
                  {
                    UpdateExpression: 'SET #seq = :next, #userId = :userId',
                    ExpressionAttributeNames: { '#seq': 'seq', '#userId': 'userId' },
                    ExpressionAttributeValues: { ':next': next, ':userId': userId },
                  },
                  webhookConditions.feedCounterAt(last),
                ),
              },
            },
            ...batch.flatMap((input, n) => {
              const seq = last + n + 1;
              const id = ids.get(input.sourceId) ?? '';
              return [
                {
                  Put: {
                    TableName: ctx.tableName,
                    Item: {
                      ...eventFeedKeys.event(userId, seq),
                      userId,
                      seq,
                      eventFeedId: id,
                      sourceId: input.sourceId,
                      type: input.type,
                      timestamp: input.timestamp,
                      data: input.data,
                      [TABLE.ttlAttribute]: ttl,
                    },
                  },
                },
                {
                  Put: {
                    TableName: ctx.tableName,
                    Item: {
                      ...eventFeedKeys.source(userId, input.sourceId),
                      userId,
                      seq,
                      eventFeedId: id,
                      ...(input.openBy === undefined
                        ? {}
                        : webhookKeys.due(feedOpeningDueId(input.sourceId), input.openBy)),
                      [TABLE.ttlAttribute]: ttl,
                    },
                    ...conditionParams(conditions.itemIsNew()),
                  },
                },
              ];
            }),
          ],
        }),
      );
      batch.forEach((input, n) => {
        recorded.set(input.sourceId, { id: ids.get(input.sourceId) ?? '', seq: last + n + 1 });
      });
      remaining = remaining.slice(batch.length);
      last = next;
      continue;
    } catch (error) {
      if (isThrottled(error)) throw error;
      const reasons = cancellationReasons(error);
      if (!reasons && !isRetryable(error)) throw error;
      stats.lost++;
      // A source whose marker is there was recorded before (a redelivered record): it keeps what it got.
      const existing = batch.filter((_, n) => reasons?.[2 + 2 * n]?.Code === 'ConditionalCheckFailed');
      for (const input of existing) {
        const found = await readSource(ctx, userId, input.sourceId);
        if (found) recorded.set(input.sourceId, found);
      }
      remaining = remaining.filter((input) => !recorded.has(input.sourceId));
    }
    // Another recorder moved the counter, or a conflict: read it again after a short random wait.
    await (ctx.retry?.sleep ?? realSleep)(backoffDelay(Math.min(round, 4), ctx.retry));
    last = await readCounter(ctx, userId);
  }
  return recorded;
}

/** The prefix of a source marker's sort key: the due index tells a feed opening from a delivery by it. */
export const FEED_SOURCE_PREFIX = 'EVENTOF#';

/** The id a source's opening is listed under in the due index (`<time>#<id>`). */
function feedOpeningDueId(sourceId: string): string {
  return `${FEED_SOURCE_PREFIX}${sourceId}`;
}

/** The source a due-index entry names when it is a feed event awaiting its deliveries (else undefined). */
export function feedOpeningOf(dueKey: string): string | undefined {
  const at = dueKey.indexOf(`#${FEED_SOURCE_PREFIX}`);
  return at < 0 ? undefined : dueKey.slice(at + 1 + FEED_SOURCE_PREFIX.length);
}

/**
 * Takes the event of `sourceId` out of the due index: its deliveries are opened (or it needs none).
 * Nothing is written when the marker is gone or was never listed.
 */
export async function markDeliveriesOpened(ctx: RetryingStoreContext, userId: string, sourceId: string): Promise<void> {
  const index = TABLE.pendingIndex;
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: eventFeedKeys.source(userId, sourceId),
            ...updateParams(
              update({ remove: [index.partitionKey, index.sortKey] }),
              webhookConditions.listedInDueIndex(),
            ),
          }),
        ),
      ctx.retry,
    );
  } catch (error) {
    lostCondition(error);
  }
}

/** Feed sort keys: `EVENT#<12 digits>`. */
const EVENT_SORT_KEY = /^EVENT#\d{12}$/;

/** The sort key in a feed cursor, or undefined when it is not one this feed returned. */
export function decodeEventCursor(cursor: string): string | undefined {
  return decodeCursor(cursor, EVENT_SORT_KEY);
}

/** A page of the feed, oldest first. */
export interface FeedPage {
  events: FeedEvent[];
  /**
   * Where the next read starts: after the last event this page looked at (one the type filter left
   * out included), or the `after` given when there was nothing new. Undefined only for an empty feed
   * read from its start.
   */
  next?: string;
  /** More events were there to read when this page was read. */
  hasMore: boolean;
}

/**
 * Up to `limit` of the account's events after `afterSortKey` (or from the first), oldest first, only
 * of `types` when given: one consistent Query on the account's partition.
 */
export async function listFeedEvents(
  ctx: RetryingStoreContext,
  userId: string,
  options: { limit: number; afterSortKey?: string; types?: readonly WebhookEventType[] },
): Promise<FeedPage> {
  const first = eventFeedKeys.event(userId, 0);
  const typeFilter = options.types && options.types.length > 0 ? options.types : undefined;
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          KeyConditionExpression: `${attr('pk')} = :pk AND ${attr('sk')} BETWEEN :from AND :to`,
          ExpressionAttributeNames: {
            [attr('pk')]: TABLE.partitionKey,
            [attr('sk')]: TABLE.sortKey,
            ...(typeFilter ? { [attr('type')]: 'type' } : {}),
          },
          ExpressionAttributeValues: {
            ':pk': first.PK,
            // BETWEEN is inclusive: the cursor's own event is left out by starting after it.
            ':from': options.afterSortKey ? `${options.afterSortKey}!` : first.SK,
            ':to': 'EVENT#:',
            ...(typeFilter ? Object.fromEntries(typeFilter.map((type, n) => [`:type${n}`, type])) : {}),
          },
          ...(typeFilter
            ? { FilterExpression: `${attr('type')} IN (${typeFilter.map((_, n) => `:type${n}`).join(', ')})` }
            : {}),
          ScanIndexForward: true,
          ConsistentRead: true,
          Limit: options.limit,
        }),
      ),
    ctx.retry,
  );
  const items = out.Items ?? [];
  const events = items.map((item) => ({
    id: String(item.eventFeedId),
    type: item.type as WebhookEventType,
    timestamp: String(item.timestamp),
    data: (item.data ?? {}) as Record<string, unknown>,
  }));
  const lastKey = out.LastEvaluatedKey?.[TABLE.sortKey] ?? items[items.length - 1]?.[TABLE.sortKey];
  const nextSortKey = typeof lastKey === 'string' ? lastKey : options.afterSortKey;
  return {
    events,
    ...(nextSortKey === undefined ? {} : { next: encodeCursor(nextSortKey) }),
    hasMore: out.LastEvaluatedKey !== undefined,
  };
}
