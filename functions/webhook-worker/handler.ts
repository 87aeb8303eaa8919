/**
 * The webhook worker, fed by the table's stream (deployed: an event source mapping whose filters keep
 * only the two kinds of record below; locally: local/stream-poller.ts). A task that just ended gets its
 * delivery opened; a delivery whose attempt was just claimed gets that attempt. A record whose handling
 * threw (a table fault; a failed attempt is not a fault, it is recorded) is reported and redelivered
 * alone, and after the retries goes to the dead-letter queue; a claim whose worker gave up is claimed
 * again by the sweeper two minutes later.
 */
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { attemptDelivery, type ClaimedDeliveryRef, type EndedTaskRef, openDelivery } from '../lifecycle/webhooks';
import { logger, withInvocation } from '../observability/logger';
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
  const taskId = image.taskId?.S;
  return userId && taskId ? { userId, taskId, claimId } : undefined;
}

async function handleBatch(
  event: DynamoDBStreamEvent,
  _context?: Pick<Context, 'awsRequestId'>,
): Promise<DynamoDBBatchResponse> {
  const log = logger.child({ function: 'webhook-worker' });
  const lc = webhookLifecycleFromEnv();
  const failures: DynamoDBBatchResponse['batchItemFailures'] = [];
  if (!lc) {
    log.warn('Webhooks are off (no WEBHOOK_SECRETS_KEY_ARN); records ignored', { records: event.Records?.length });
    return { batchItemFailures: failures };
  }
  // Side by side: one slow endpoint (up to its 10 s deadline) holds up no other record of the batch.
  await Promise.all(
    (event.Records ?? []).map(async (record) => {
      const ended = endedTaskOf(record);
      const claimed = ended ? undefined : claimedDeliveryOf(record);
      if (!ended && !claimed) return;
      try {
        if (ended) await openDelivery(lc, ended, log);
        else if (claimed) await attemptDelivery(lc, claimed, log);
      } catch (error) {
        log.error('Webhook record failed; it will be redelivered', {
          taskId: (ended ?? claimed)?.taskId,
          error,
        });
        const id = record.dynamodb?.SequenceNumber;
        if (id) failures.push({ itemIdentifier: id });
      }
    }),
  );
  return { batchItemFailures: failures };
}

/** The Lambda entry; the local stream poller and the tests call it without a context. */
export const handler: (
  event: DynamoDBStreamEvent,
  context?: Pick<Context, 'awsRequestId'>,
) => Promise<DynamoDBBatchResponse> = withInvocation(handleBatch, (_event, context) => context?.awsRequestId);
