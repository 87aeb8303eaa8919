import { MEDIA_WORKER_FILTER } from '../../lib/routes';
import { matchesFilter } from '../../local/stream-poller';

/** A stream record as DynamoDB Streams delivers it (only the fields the filter looks at). */
function record(eventName: string, newImage: Record<string, unknown>) {
  return { eventName, dynamodb: { NewImage: newImage } };
}

describe("the media worker's stream filter, as the local poller applies it", () => {
  test('passes a pending task whose results are ready', () => {
    // Act
    const passed = matchesFilter(
      record('MODIFY', { status: { N: '0' }, resultsReadyAt: { N: '1700000000000' } }),
      MEDIA_WORKER_FILTER,
    );

    // Assert
    expect(passed).toBe(true);
  });

  test.each([
    ['a pending task without results', record('MODIFY', { status: { N: '0' } })],
    ['a completed task', record('MODIFY', { status: { N: '1' }, resultsReadyAt: { N: '1' } })],
    ['a new item', record('INSERT', { status: { N: '0' }, resultsReadyAt: { N: '1' } })],
    ['a removal', record('REMOVE', {})],
    ['a record without images', { eventName: 'MODIFY' }],
  ])('drops %s', (_name, candidate) => {
    // Act
    const passed = matchesFilter(candidate, MEDIA_WORKER_FILTER);

    // Assert
    expect(passed).toBe(false);
  });

  test('`exists: false` matches a missing field only', () => {
    // Act / Assert
    expect(matchesFilter({}, { a: [{ exists: false }] })).toBe(true);
    expect(matchesFilter({ a: 1 }, { a: [{ exists: false }] })).toBe(false);
  });
});
