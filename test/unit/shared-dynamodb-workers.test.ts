/**
 * How many DynamoDB Local JVMs a run's global setup starts for the workers
 * (test/support/shared-dynamodb.ts): one per worker that can run a file at once.
 */
import * as path from 'node:path';
import { concurrentWorkers } from '../support/shared-dynamodb';

const ROOT = path.resolve(__dirname, '../..');

describe('concurrentWorkers', () => {
  test('a whole run gets one per worker', () => {
    // Prepare / Act
    const workers = concurrentWorkers({ maxWorkers: 4, nonFlagArgs: [] }, ROOT);

    // Assert
    expect(workers).toBe(4);
  });

  test('one named file runs in band: one', () => {
    // Prepare / Act
    const workers = concurrentWorkers(
      { maxWorkers: 4, nonFlagArgs: ['test/unit/shared-dynamodb-workers.test.ts'] },
      ROOT,
    );

    // Assert
    expect(workers).toBe(1);
  });

  test('--runInBand: one', () => {
    // Prepare / Act
    const workers = concurrentWorkers({ maxWorkers: 4, runInBand: true, nonFlagArgs: ['store-'] }, ROOT);

    // Assert
    expect(workers).toBe(1);
  });

  test('a pattern, a folder or two files may match many: one per worker', () => {
    // Prepare / Act
    const counts = [
      ['store-'],
      ['test/integration'],
      ['test/unit/shared-dynamodb-workers.test.ts', 'test/unit/idle-backoff.test.ts'],
    ].map((nonFlagArgs) => concurrentWorkers({ maxWorkers: 4, nonFlagArgs }, ROOT));

    // Assert
    expect(counts).toEqual([4, 4, 4]);
  });
});
