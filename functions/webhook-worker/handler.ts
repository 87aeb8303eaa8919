/**
 * The webhook worker, fed by the table's stream (deployed: an event source mapping whose filters keep
 * only the two kinds of record below; locally: local/stream-poller.ts). A task that just ended gets its
 * delivery opened; a delivery whose attempt was just claimed (a task's, or an account event's, which
 * the dispatcher opens: lifecycle/account-events.ts) gets that attempt. A record whose handling
 * threw (a table fault; a failed attempt is not a fault, it is recorded) is reported and redelivered
 * alone, and after the retries goes to the dead-letter queue; a claim whose worker gave up is claimed
 * again by the sweeper two minutes later.
 *
 * Before any of that, the ended tasks of the batch go into their accounts' event feeds
 * (lifecycle/event-feed.ts): all of one account's in one transaction, in the order they ended, so
 * concurrent endings contend once per batch, not once per task. This runs with webhooks off too: the
 * feed does not need an endpoint.
 */
import type { AttributeValue, Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { TaskStatus, TaskType } from '../core/task';
import { attemptEndpointDelivery, isEndpointDelivery } from '../lifecycle/endpoint-deliveries';
import { type EndedTask, recordTaskEvents, taskEventKey } from '../lifecycle/event-feed';
import { attemptDelivery, type ClaimedDeliveryRef, type EndedTaskRef, openDelivery } from '../lifecycle/webhooks';
import { logger, withInvocation } from '../observability/logger';
import { handleRecordsSideBySide } from '../runtime/stream-batch';
import { webhookLifecycleFromEnv } from '../runtime/webhook-lifecycle-from-env';
import { storeFromEnv } from '../store/from-env';

/** The task a record shows ending (its status left 0), or undefined for any other record. */
export function endedTaskOf(record: DynamoDBRecord): EndedTaskRef | undefined {
  const image = record.dynamodb?.NewImage;
  const before = record.dynamodb?.OldImage;
  if (!image?.SK?.S?.startsWith('TASK#')) return undefined;
  if (before?.status?.N !== '0' || (image.status?.N !== '1' && image.status?.N !== '2')) return undefined;
  const userId = image.userId?.S;
  const taskId = image.taskId?.S;
  return userId && taskId ? { userId, taskId } : undefined;
}

/** The ended task a record shows, as much as its feed event needs, or undefined. */
export function endedTaskSummaryOf(record: DynamoDBRecord): EndedTask | undefined {
  const ref = endedTaskOf(record);
  const image: Record<string, AttributeValue> = record.dynamodb?.NewImage ?? {};
  if (!ref) return undefined;
  const text = (name: string) => image[name]?.S ?? '';
  const errorCode = image.errorCode?.S;
  return {
    ...ref,
    type: text('type') as TaskType,
    status: Number(image.status?.N) as TaskStatus,
    model: text('model'),
    creditsUsed: Number(image.creditsUsed?.N ?? 0),
    creditsRefunded: image.creditsRefunded?.BOOL === true,
    createdAt: text('createdAt'),
    updatedAt: text('updatedAt'),
    ...(errorCode === undefined ? {} : { errorCode }),
  };
}

/** The delivery attempt a record claims (a new claim id in state `sending`), or undefined. */
export function claimedDeliveryOf(record: DynamoDBRecord): ClaimedDeliveryRef | undefined {
  const image = record.dynamodb?.NewImage;
  const claimId = image?.claimId?.S;
  if (image?.deliveryState?.S !== 'sending' || !claimId) return undefined;
  if (record.dynamodb?.OldImage?.claimId?.S === claimId) return undefined;
  const userId = image.userId?.S;
  // An endpoint's delivery (keyed by its `dlv_...` id), a task's, or an account event's (its `evt_...` id).
  const taskId = image.deliveryId?.S ?? image.taskId?.S ?? image.eventId?.S;
  return userId && taskId ? { userId, taskId, claimId } : undefined;
}

/**
 * Runs the openings of one account's deliveries one after another, in the batch's order (the order the
 * tasks ended), and different accounts' side by side. Why: every opening is a transaction on the
 * account's counter of open deliveries; a batch's openings of one account side by side contended with
 * each other until their retries ran out (measured in CI: of 120 endings at once through the conflict
 * layer, 29 got a delivery), and a record that keeps failing ends in the dead-letter queue. One after another
 * they contend only with other batches'; an opening takes a few milliseconds, an attempt (side by side
 * still) up to the endpoint's deadline.
 */
function openingsInTurn(): <T>(userId: string, open: () => Promise<T>) => Promise<T> {
  const last = new Map<string, Promise<unknown>>();
  return (userId, open) => {
    const turn = (last.get(userId) ?? Promise.resolve()).catch(() => undefined).then(open);
    last.set(userId, turn);
    return turn;
  };
}

async function handleBatch(
  event: DynamoDBStreamEvent,
  _context?: Pick<Context, 'awsRequestId'>,
): Promise<DynamoDBBatchResponse> {
  const log = logger.child({ function: 'webhook-worker' });
  const lc = webhookLifecycleFromEnv();
  // The batch's endings into the feeds, at once; a failure fails (and redelivers) only the endings.
  const ended = (event.Records ?? []).map(endedTaskSummaryOf).filter((task) => task !== undefined);
  const feed =
    ended.length === 0
      ? undefined
      : recordTaskEvents(lc?.store ?? storeFromEnv(), ended, new Date(), undefined, lc !== undefined);
  feed?.catch(() => undefined);
  if (!lc) {
    log.warn('Webhooks are off (no WEBHOOK_SECRETS_KEY_ARN); only the event feed is written', {
      records: event.Records?.length,
    });
  }
  const openings = openingsInTurn();
  // Side by side: one slow endpoint (up to its 10 s deadline) holds up no other record of the batch.
  return handleRecordsSideBySide(
    event,
    async (record) => {
      const ended = endedTaskOf(record);
      if (ended) {
        const recorded = await feed;
        if (!lc) return undefined;
        const event = recorded?.get(taskEventKey(ended.userId, ended.taskId));
        return openings(ended.userId, () => openDelivery(lc, ended, log, event));
      }
      if (!lc) return undefined;
      const claimed = claimedDeliveryOf(record);
      if (claimed && isEndpointDelivery(claimed)) return attemptEndpointDelivery(lc, claimed, log);
      return claimed && attemptDelivery(lc, claimed, log);
    },
    (record, error) =>
      log.error('Webhook record failed; it will be redelivered', {
        taskId: (endedTaskOf(record) ?? claimedDeliveryOf(record))?.taskId,
        error,
      }),
  );
}

/** The Lambda entry; the local stream poller and the tests call it without a context. */
export const handler: (
  event: DynamoDBStreamEvent,
  context?: Pick<Context, 'awsRequestId'>,
) => Promise<DynamoDBBatchResponse> = withInvocation(handleBatch, (_event, context) => context?.awsRequestId);
