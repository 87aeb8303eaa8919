/**
 * Webhooks in DynamoDB: an account's settings (default endpoint, sealed signing secret), one delivery
 * per ended task or account event (keyed by the task's id, or the event's `evt_...` id), and one item
 * per attempt. A delivery moves between states only by conditional
 * writes, so a redelivered stream record, two workers or a worker and the sweeper never record one
 * attempt twice:
 *
 * - `sending`: an attempt is claimed (`claimId`). The write that claims it (creation, or the sweeper's
 *   claim) is what the table's stream hands to the webhook worker. Until the claim runs out
 *   (`leaseUntil`), it sits in the due index under that time, so a claim whose worker died is taken
 *   again by the sweeper.
 * - `waiting`: the last attempt failed; in the due index under the time of the next one.
 * - `delivered` or `failed` (the schedule is spent): out of the index, kept for 30 days.
 *
 * An account has at most `maxOpen` deliveries `sending` or `waiting` at once: a counter item
 * (`webhookKeys.openDeliveries`) goes up in the transaction that opens a delivery, on the condition
 * that it is below the bound and nothing is queued, and down in the one that records its last attempt.
 * A delivery over the bound waits `queued`, in order (store/webhook-queue.ts).
 */
import { GetCommand, QueryCommand, type TransactWriteCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ACCOUNT_EVENT_ID_PREFIX, type AccountEventData, isAccountEventId } from '../core/account-events';
import { UsageError } from '../core/errors';
import type { WebhookEventType } from '../core/webhooks';
import * as conditions from './condition-fragments';
import { attr, conditionParams, deliveryConditions, update, updateParams } from './conditions';
import {
  attemptRecordLost,
  type DeliveryOpenFailure,
  deliveryOpenFailure,
  lostCondition,
  type RetryingStoreContext,
  withRetry,
} from './errors';
import { type ItemKey, userIdFromPk, webhookDueShardKey, webhookKeys } from './keys';
import { TABLE } from './table';
import { transact } from './transaction';
import { openNowCounterUpdate, queueDelivery } from './webhook-queue';

/** How long delivery and attempt records are kept after the delivery is created (TTL). */
export const WEBHOOK_RECORD_DAYS = 30;

/** An account's webhook settings. */
export interface WebhookSettings {
  userId: string;
  /** The default endpoint, for tasks submitted without a `webhookUrl`. */
  url?: string;
  /** The signing secret sealed by `webhooks/secret-box.ts`; never the secret itself. */
  sealedSecret?: string;
  secretCreatedAt?: string;
  updatedAt: string;
}

export type DeliveryState = 'queued' | 'sending' | 'waiting' | 'delivered' | 'failed';

/** A task's webhook delivery, or an account event's (`eventId` and `data` in place of `taskId`). */
export interface WebhookDelivery {
  userId: string;
  /** The task whose end it announces; absent on an account event's delivery. */
  taskId?: string;
  /** An account event's id (`evt_...`): its delivery is keyed by it. */
  eventId?: string;
  /** An account event's `data`, as every attempt sends it. */
  data?: AccountEventData;
  /** `webhook-id`: the same on every attempt. */
  webhookId: string;
  /** The endpoint, fixed when the task ended (or the account event was seen). */
  url: string;
  eventType: WebhookEventType;
  /** When the task ended (ISO 8601): the payload's `timestamp`. */
  eventAt: string;
  deliveryState: DeliveryState;
  /** The claim of the attempt under way (`sending`). */
  claimId?: string;
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due (`waiting`) or the running claim runs out (`sending`), ISO 8601. */
  dueAt?: string;
  createdAt: string;
  updatedAt: string;
  deliveredAt?: string;
  gaveUpAt?: string;
  /** Counted in the account's open deliveries while `sending` or `waiting` (released when it ends). */
  countsOpen?: boolean;
  /** Why the delivery was never tried: the bound dropped it, before deliveries past it waited (old records). */
  dropReason?: string;
}

/** One recorded attempt. */
export interface WebhookAttempt {
  attempt: number;
  /** When it started (ISO 8601). */
  at: string;
  durationMs: number;
  statusCode?: number;
  error?: string;
}

/** What comes after an attempt. */
export type AfterAttempt = { state: 'delivered' } | { state: 'waiting'; dueAt: Date } | { state: 'failed' };

/** A delivery the due index lists: enough to claim it. */
export interface DueDeliveryRef {
  userId: string;
  /** The delivery's key: its task's id, or an account event's id (`evt_...`). */
  taskId: string;
  /** Its due-index sort key as listed; the claim requires it unchanged. */
  dueKey: string;
}

const KEY_ATTRIBUTES = [
  TABLE.partitionKey,
  TABLE.sortKey,
  TABLE.pendingIndex.partitionKey,
  TABLE.pendingIndex.sortKey,
  TABLE.ttlAttribute,
];

function withoutKeys<T>(item: Record<string, unknown>): T {
  const record: Record<string, unknown> = { ...item };
  for (const name of KEY_ATTRIBUTES) delete record[name];
  return record as T;
}

function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/** The account's webhook settings, or undefined when it has none. */
export async function getWebhookSettings(
  ctx: RetryingStoreContext,
  userId: string,
): Promise<WebhookSettings | undefined> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: webhookKeys.settings(userId) })),
    ctx.retry,
  );
  return out.Item ? withoutKeys<WebhookSettings>(out.Item) : undefined;
}

async function updateSettings(
  ctx: RetryingStoreContext,
  userId: string,
  spec: Parameters<typeof update>[0],
): Promise<WebhookSettings> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: webhookKeys.settings(userId),
          ...updateParams(update({ ...spec, set: { userId, ...spec.set } })),
          ReturnValues: 'ALL_NEW',
        }),
      ),
    ctx.retry,
  );
  return withoutKeys<WebhookSettings>(out.Attributes ?? {});
}

/** Sets the account's default endpoint (the caller has checked it). */
export function setWebhookUrl(
  ctx: RetryingStoreContext,
  input: { userId: string; url: string; now: Date },
): Promise<WebhookSettings> {
  return updateSettings(ctx, input.userId, { set: { url: input.url, updatedAt: input.now.toISOString() } });
}

/** Removes the account's default endpoint (tasks' own `webhookUrl`s still get their deliveries). */
export function clearWebhookUrl(
  ctx: RetryingStoreContext,
  input: { userId: string; now: Date },
): Promise<WebhookSettings> {
  return updateSettings(ctx, input.userId, { set: { updatedAt: input.now.toISOString() }, remove: ['url'] });
}

/** Stores a new sealed signing secret, replacing the previous one (a rotation). */
export function putWebhookSecret(
  ctx: RetryingStoreContext,
  input: { userId: string; sealedSecret: string; now: Date },
): Promise<WebhookSettings> {
  const at = input.now.toISOString();
  return updateSettings(ctx, input.userId, {
    set: { sealedSecret: input.sealedSecret, secretCreatedAt: at, updatedAt: at },
  });
}

/** What opening a delivery did (`queued`: past the bound, it waits its turn). */
export type DeliveryOpened = 'opened' | 'exists' | 'queued';

/** What every delivery is opened with, whatever its event. */
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
  return openDeliveryItem(ctx, opening, taskId, { taskId });
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
  // The marker exactly as the caller read it: missing, or re-armed (`sentAt` removed by an update, never
  // a delete, so the functions that re-arm need no DeleteItem) with the `markerId` read. Any write since
  // (another event, a re-arm) changed `markerId`, and this one finds the event opened ('exists').
  const condition =
    markerRead === undefined
      ? {
          ConditionExpression: `attribute_not_exists(${attr('markerPk')})`,
          names: { [attr('markerPk')]: TABLE.partitionKey },
          values: undefined,
        }
      : {
          ConditionExpression: `${attr('markerId')} = :markerRead AND attribute_not_exists(${attr('sentAt')})`,
          names: { [attr('markerId')]: 'markerId', [attr('sentAt')]: 'sentAt' },
          values: { ':markerRead': markerRead },
        };
  const markerPut: TransactItem = {
    Put: {
      TableName: ctx.tableName,
      Item: {
        ...marker,
        userId: input.userId,
        markerId: eventId,
        eventId,
        eventType: input.eventType,
        sentAt: input.now.toISOString(),
        ...(markerExpiresAt === undefined ? {} : { [TABLE.ttlAttribute]: markerExpiresAt }),
      },
      ConditionExpression: condition.ConditionExpression,
      ExpressionAttributeNames: condition.names,
      ...(condition.values ? { ExpressionAttributeValues: condition.values } : {}),
    },
  };
  return openDeliveryItem(ctx, opening, eventId, { eventId, data }, markerPut);
}

/** A write of a transaction (as `TransactWriteCommand` takes it). */
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

async function openDeliveryItem(
  ctx: RetryingStoreContext,
  input: DeliveryOpening,
  id: string,
  subject: Pick<WebhookDelivery, 'taskId' | 'eventId' | 'data'>,
  markerPut?: TransactItem,
): Promise<DeliveryOpened> {
  const leaseIso = input.leaseUntil.toISOString();
  const now = input.now.toISOString();
  const base = {
    userId: input.userId,
    ...subject,
    webhookId: input.webhookId,
    url: input.url,
    eventType: input.eventType,
    eventAt: input.eventAt,
    attempts: 0,
    createdAt: now,
    updatedAt: now,
  };
  const delivery: WebhookDelivery = {
    ...base,
    deliveryState: 'sending',
    claimId: input.claimId,
    dueAt: leaseIso,
    countsOpen: true,
  };
  const ttl = { [TABLE.ttlAttribute]: epochSeconds(input.now) + WEBHOOK_RECORD_DAYS * 86_400 };
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
              ...webhookKeys.delivery(input.userId, id),
              ...webhookKeys.due(id, leaseIso),
              ...delivery,
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
  return queueDelivery(ctx, {
    userId: input.userId,
    id,
    order: input.queueOrder,
    delivery: base,
    ttl,
    maxOpen: input.maxOpen,
    now,
    ...(markerPut ? { markerPut } : {}),
  });
}

/** The account's open deliveries as counted (0 when it never had one). */
export async function countOpenDeliveries(ctx: RetryingStoreContext, userId: string): Promise<number> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({ TableName: ctx.tableName, Key: webhookKeys.openDeliveries(userId), ConsistentRead: true }),
      ),
    ctx.retry,
  );
  const open = out.Item?.openDeliveries;
  return typeof open === 'number' ? open : 0;
}

/** A task's delivery (consistent read), or undefined. */
export async function getDelivery(
  ctx: RetryingStoreContext,
  userId: string,
  taskId: string,
): Promise<WebhookDelivery | undefined> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new GetCommand({
          TableName: ctx.tableName,
          Key: webhookKeys.delivery(userId, taskId),
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  return out.Item ? withoutKeys<WebhookDelivery>(out.Item) : undefined;
}

/**
 * Claims the next attempt of a due delivery (`waiting` whose time came, or `sending` whose claim ran
 * out): only if it still sits in the index where the sweeper listed it. The write starts the attempt
 * (stream). False when someone else moved it first.
 */
export async function claimDelivery(
  ctx: RetryingStoreContext,
  input: DueDeliveryRef & { claimId: string; leaseUntil: Date; now: Date },
): Promise<boolean> {
  const leaseIso = input.leaseUntil.toISOString();
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: webhookKeys.delivery(input.userId, input.taskId),
            ...updateParams(
              update({
                set: {
                  deliveryState: 'sending',
                  claimId: input.claimId,
                  dueAt: leaseIso,
                  updatedAt: input.now.toISOString(),
                  ...webhookKeys.due(input.taskId, leaseIso),
                },
              }),
              deliveryConditions.dueAt(input.dueKey),
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

/**
 * Records attempt `attempt.attempt` of the delivery claimed by `claimId`, and what comes next, in one
 * transaction: the attempt item and the delivery's new state. False (nothing written) when the claim
 * was lost meanwhile.
 */
export async function recordAttempt(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    /** The delivery's key: its task's id, or an account event's id (`evt_...`). */
    taskId: string;
    claimId: string;
    attempt: WebhookAttempt;
    next: AfterAttempt;
    now: Date;
    /** The delivery is counted in the account's open deliveries (`countsOpen`). */
    countsOpen?: boolean;
  },
): Promise<boolean> {
  const now = input.now.toISOString();
  const { next } = input;
  const change =
    next.state === 'waiting'
      ? update({
          set: {
            deliveryState: 'waiting',
            attempts: input.attempt.attempt,
            dueAt: next.dueAt.toISOString(),
            updatedAt: now,
            ...webhookKeys.due(input.taskId, next.dueAt.toISOString()),
          },
          remove: ['claimId'],
        })
      : update({
          set: {
            deliveryState: next.state,
            attempts: input.attempt.attempt,
            updatedAt: now,
            ...(next.state === 'delivered' ? { deliveredAt: now } : { gaveUpAt: now }),
          },
          remove: ['claimId', 'dueAt', TABLE.pendingIndex.partitionKey, TABLE.pendingIndex.sortKey],
        });
  try {
    await transact(
      ctx,
      [
        {
          Put: {
            TableName: ctx.tableName,
            Item: {
              ...webhookKeys.attempt(input.userId, input.taskId, input.attempt.attempt),
              userId: input.userId,
              ...(isAccountEventId(input.taskId) ? { eventId: input.taskId } : { taskId: input.taskId }),
              ...input.attempt,
              [TABLE.ttlAttribute]: epochSeconds(input.now) + WEBHOOK_RECORD_DAYS * 86_400,
            },
            ...conditionParams(conditions.itemIsNew()),
          },
        },
        {
          Update: {
            TableName: ctx.tableName,
            Key: webhookKeys.delivery(input.userId, input.taskId),
            ...updateParams(change, deliveryConditions.claimedBy(input.claimId)),
          },
        },
        // Delivered or given up: no longer open, so the account may open another.
        ...(next.state !== 'waiting' && input.countsOpen
          ? [
              {
                Update: {
                  TableName: ctx.tableName,
                  Key: webhookKeys.openDeliveries(input.userId),
                  ...updateParams(update({ set: { updatedAt: now }, add: { openDeliveries: -1 } })),
                },
              },
            ]
          : []),
      ],
      ctx.retry,
    );
    return true;
  } catch (error) {
    attemptRecordLost(error);
    return false;
  }
}

/** Deliveries of one due-index shard that are due at `now` (oldest first, at most `limit`). */
export async function listDueDeliveries(
  ctx: RetryingStoreContext,
  input: { shard: number; now: Date; limit?: number },
): Promise<DueDeliveryRef[]> {
  if (!Number.isInteger(input.shard) || input.shard < 0 || input.shard >= TABLE.webhookDueShards) {
    throw new UsageError(`shard must be an integer in 0..${TABLE.webhookDueShards - 1}`);
  }
  const index = TABLE.pendingIndex;
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          IndexName: index.name,
          // `<time>#<taskId>` sorts by time; '$' follows '#', so this takes every key of times up to now.
          KeyConditionExpression: `${attr(index.partitionKey)} = :shard AND ${attr(index.sortKey)} < :upTo`,
          ExpressionAttributeNames: {
            [attr(index.partitionKey)]: index.partitionKey,
            [attr(index.sortKey)]: index.sortKey,
          },
          ExpressionAttributeValues: {
            ':shard': webhookDueShardKey(input.shard),
            ':upTo': `${input.now.toISOString()}$`,
          },
          ScanIndexForward: true,
          Limit: input.limit ?? 100,
        }),
      ),
    ctx.retry,
  );
  const prefix = webhookKeys.delivery('', '').SK;
  return (out.Items ?? []).map((item) => ({
    userId: userIdFromPk(String(item[TABLE.partitionKey])),
    taskId: String(item[TABLE.sortKey]).slice(prefix.length),
    dueKey: String(item[index.sortKey]),
  }));
}

/** A task's delivery and its attempts, oldest first (one Query). */
export async function getDeliveryWithAttempts(
  ctx: RetryingStoreContext,
  userId: string,
  taskId: string,
): Promise<{ delivery?: WebhookDelivery; attempts: WebhookAttempt[] }> {
  const prefix = webhookKeys.deliveryPrefix(userId, taskId);
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          KeyConditionExpression: `${attr(TABLE.partitionKey)} = :pk AND begins_with(${attr(TABLE.sortKey)}, :sk)`,
          ExpressionAttributeNames: {
            [attr(TABLE.partitionKey)]: TABLE.partitionKey,
            [attr(TABLE.sortKey)]: TABLE.sortKey,
          },
          ExpressionAttributeValues: { ':pk': prefix.PK, ':sk': prefix.SK },
          ConsistentRead: true,
        }),
      ),
    ctx.retry,
  );
  const deliverySk = webhookKeys.delivery(userId, taskId).SK;
  let delivery: WebhookDelivery | undefined;
  const attempts: WebhookAttempt[] = [];
  for (const item of out.Items ?? []) {
    const sk = String(item[TABLE.sortKey]);
    if (sk === deliverySk) delivery = withoutKeys<WebhookDelivery>(item);
    // Another task whose id starts with this one's would share the prefix: only this task's attempts.
    else if (sk.startsWith(`${deliverySk}#ATTEMPT#`)) {
      const {
        userId: _u,
        taskId: _t,
        eventId: _e,
        ...attempt
      } = withoutKeys<WebhookAttempt & { userId: string; taskId?: string; eventId?: string }>(item);
      attempts.push(attempt);
    }
  }
  return { ...(delivery ? { delivery } : {}), attempts };
}

/** Every due delivery of every shard (for the sweeper), a page per shard. */
export async function allDueDeliveries(ctx: RetryingStoreContext, now: Date): Promise<DueDeliveryRef[]> {
  const shards = Array.from({ length: TABLE.webhookDueShards }, (_, shard) => shard);
  const pages = await Promise.all(shards.map((shard) => listDueDeliveries(ctx, { shard, now })));
  return pages.flat();
}

/** The account's account-event deliveries (not their attempts), oldest first by id order (one Query per page). */
export async function listAccountEventDeliveries(
  ctx: RetryingStoreContext,
  userId: string,
): Promise<WebhookDelivery[]> {
  const prefix = webhookKeys.deliveryPrefix(userId, ACCOUNT_EVENT_ID_PREFIX);
  const deliveries: WebhookDelivery[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            KeyConditionExpression: `${attr(TABLE.partitionKey)} = :pk AND begins_with(${attr(TABLE.sortKey)}, :sk)`,
            ExpressionAttributeNames: {
              [attr(TABLE.partitionKey)]: TABLE.partitionKey,
              [attr(TABLE.sortKey)]: TABLE.sortKey,
            },
            ExpressionAttributeValues: { ':pk': prefix.PK, ':sk': prefix.SK },
            ConsistentRead: true,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    for (const item of out.Items ?? []) {
      if (!String(item[TABLE.sortKey]).includes('#ATTEMPT#')) deliveries.push(withoutKeys<WebhookDelivery>(item));
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return deliveries;
}
