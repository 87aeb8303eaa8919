import type { DynamoDBRecord } from 'aws-lambda';
import { handleRecordsSideBySide } from '../../functions/runtime/stream-batch';

function record(sequence: string): DynamoDBRecord {
  return { dynamodb: { SequenceNumber: sequence } };
}

describe('handleRecordsSideBySide (the stream workers’ batch loop)', () => {
  it('reports only the records whose handling threw, and passes each to the failure callback', async () => {
    // Prepare
    const records = [record('1'), record('2'), record('3'), record('4')];
    const failed: Array<[string | undefined, string]> = [];

    // Act
    const answer = await handleRecordsSideBySide(
      { Records: records },
      (item) => {
        const sequence = item.dynamodb?.SequenceNumber;
        if (sequence === '1') return undefined; // ignored
        if (sequence === '3') return Promise.reject(new Error('table fault'));
        return Promise.resolve('done');
      },
      (item, error) => failed.push([item.dynamodb?.SequenceNumber, (error as Error).message]),
    );

    // Assert
    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: '3' }] });
    expect(failed).toEqual([['3', 'table fault']]);
  });

  it('starts every record before any finishes: one slow record holds up no other', async () => {
    // Prepare
    const events: string[] = [];
    let releaseFirst: () => void = () => undefined;
    const firstHeld = new Promise<void>((release) => {
      releaseFirst = release;
    });

    // Act
    const answer = handleRecordsSideBySide(
      { Records: [record('1'), record('2')] },
      async (item) => {
        const sequence = item.dynamodb?.SequenceNumber ?? '?';
        events.push(`start ${sequence}`);
        if (sequence === '1') await firstHeld;
        events.push(`end ${sequence}`);
      },
      () => undefined,
    );
    await new Promise((resolve) => setImmediate(resolve));
    const beforeRelease = [...events];
    releaseFirst();

    // Assert
    expect(beforeRelease).toEqual(['start 1', 'start 2', 'end 2']);
    await expect(answer).resolves.toEqual({ batchItemFailures: [] });
    expect(events).toEqual(['start 1', 'start 2', 'end 2', 'end 1']);
  });

  it('answers an empty report for an event without records', async () => {
    // Act
    const answer = await handleRecordsSideBySide(
      {} as { Records: DynamoDBRecord[] },
      () => undefined,
      () => undefined,
    );

    // Assert
    expect(answer).toEqual({ batchItemFailures: [] });
  });
});
