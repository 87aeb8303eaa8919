/**
 * The media worker: invoked with the task table's stream records of tasks whose results just became
 * ready to copy (the event source mapping's filter), it copies each task's results into media storage
 * and completes the task. Deployed with `ReportBatchItemFailures` and bisect-on-error: a record whose
 * copy threw (a table fault, not a failed copy: that ends the task with STORAGE_ERROR) is redelivered
 * alone, and after the retries goes to the dead-letter queue. The local stack feeds it the same stream
 * (local/stream-poller.ts).
 */
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { copyResults } from '../lifecycle/copy-results';
import { logger, withInvocation } from '../observability/logger';
import { handleRecordsSideBySide } from '../runtime/stream-batch';
import { workerLifecycleFromEnv } from '../runtime/worker-lifecycle-from-env';

/** The task a record announces as ready to copy, or undefined when the record is anything else. */
export function readyTaskOf(record: DynamoDBRecord): { userId: string; taskId: string } | undefined {
  const image = record.dynamodb?.NewImage;
  // A transition only: the write that recorded the results (the old image had none).
  if (!image?.resultsReadyAt?.N || record.dynamodb?.OldImage?.resultsReadyAt !== undefined) return undefined;
  if (image.status?.N !== '0') return undefined;
  const userId = image.userId?.S;
  const taskId = image.taskId?.S;
  return userId && taskId ? { userId, taskId } : undefined;
}

async function copyBatch(
  event: DynamoDBStreamEvent,
  _context?: Pick<Context, 'awsRequestId'>,
): Promise<DynamoDBBatchResponse> {
  const log = logger.child({ function: 'media-worker' });
  const lc = workerLifecycleFromEnv();
  // One task's copy never waits for another's: the batch's records are copied side by side.
  return handleRecordsSideBySide(
    event,
    (record) => {
      const ref = readyTaskOf(record);
      return ref && copyResults(lc, ref, log);
    },
    (record, error) =>
      log.error('Copying results failed; the record will be redelivered', {
        taskId: readyTaskOf(record)?.taskId,
        error,
      }),
  );
}

/** The Lambda entry; the local stream poller and the tests call it without a context. */
export const handler: (
  event: DynamoDBStreamEvent,
  context?: Pick<Context, 'awsRequestId'>,
) => Promise<DynamoDBBatchResponse> = withInvocation(copyBatch, (_event, context) => context?.awsRequestId);
