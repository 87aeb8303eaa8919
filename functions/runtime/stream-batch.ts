/**
 * The batch loop both stream workers share (media worker, webhook worker): every record of a batch is
 * handled side by side, so one slow record holds up no other, and only the records whose handling threw
 * are reported back, so that the event source mapping (`ReportBatchItemFailures`) redelivers those
 * alone and, after its retries, sends them to the dead-letter queue.
 */
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';

/**
 * Runs `handle` on each record at once. `handle` answers undefined for a record it ignores; a record
 * whose promise rejects is passed to `failed` (to log it) and reported by its sequence number.
 */
export async function handleRecordsSideBySide(
  event: DynamoDBStreamEvent,
  handle: (record: DynamoDBRecord) => Promise<unknown> | undefined,
  failed: (record: DynamoDBRecord, error: unknown) => void,
): Promise<DynamoDBBatchResponse> {
  const failures: DynamoDBBatchResponse['batchItemFailures'] = [];
  await Promise.all(
    (event.Records ?? []).map(async (record) => {
      try {
        await handle(record);
      } catch (error) {
        failed(record, error);
        const id = record.dynamodb?.SequenceNumber;
        if (id) failures.push({ itemIdentifier: id });
      }
    }),
  );
  return { batchItemFailures: failures };
}
