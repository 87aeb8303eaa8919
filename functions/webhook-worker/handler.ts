/**
 * The webhook worker, fed by the table's stream (deployed: an event source mapping whose filters keep
 * only the two kinds of record below; locally: local/stream-poller.ts). A task that just ended gets its
 * delivery opened; a delivery whose attempt was just claimed (a task's, or an account event's, which
 * the dispatcher opens: lifecycle/account-events.ts) gets that attempt. A record whose handling
 * threw (a table fault; a failed attempt is not a fault, it is recorded) is reported and redelivered
 * alone, and after the retries goes to the dead-letter queue; a claim whose worker gave up is claimed
 * again by the sweeper two minutes later.
 */
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { attemptEndpointDelivery, isEndpointDelivery } from '../lifecycle/endpoint-deliveries';
import { attemptDelivery, type ClaimedDeliveryRef, type EndedTaskRef, openDelivery } from '../lifecycle/webhooks';
import { logger, withInvocation } from '../observability/logger';
import { handleRecordsSideBySide } from '../runtime/stream-batch';
import { webhookLifecycleFromEnv } from '../runtime/webhook-lifecycle-from-env';

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

async function handleBatch(
  event: DynamoDBStreamEvent,
  _context?: Pick<Context, 'awsRequestId'>,
): Promise<DynamoDBBatchResponse> {
  const log = logger.child({ function: 'webhook-worker' });
  const lc = webhookLifecycleFromEnv();
  if (!lc) {
    log.warn('Webhooks are off (no WEBHOOK_SECRETS_KEY_ARN); records ignored', { records: event.Records?.length });
    return { batchItemFailures: [] };
  }
  // Side by side: one slow endpoint (up to its 10 s deadline) holds up no other record of the batch.
  return handleRecordsSideBySide(
    event,
    (record) => {
      const ended = endedTaskOf(record);
      if (ended) return openDelivery(lc, ended, log);
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
