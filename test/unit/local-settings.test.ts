/**
 * The local stack's settings (local/settings.ts) check what the handlers would refuse at start, naming
 * the variable: here the queue bound (`MAX_QUEUED_TASKS_PER_ACCOUNT`, docs/design/dispatching.md).
 */
import { localSettingsFromEnv } from '../../local/settings';

describe('local settings: MAX_QUEUED_TASKS_PER_ACCOUNT', () => {
  test('is the deployed default, 1000, when unset or empty', () => {
    // Act
    const unset = localSettingsFromEnv({});
    const empty = localSettingsFromEnv({ MAX_QUEUED_TASKS_PER_ACCOUNT: '' });

    // Assert
    expect(unset.maxQueuedTasksPerAccount).toBe(1000);
    expect(empty.maxQueuedTasksPerAccount).toBe(1000);
  });

  test('takes a whole number from 1 to 10000', () => {
    // Act
    const small = localSettingsFromEnv({ MAX_QUEUED_TASKS_PER_ACCOUNT: '3' });
    const largest = localSettingsFromEnv({ MAX_QUEUED_TASKS_PER_ACCOUNT: '10000' });

    // Assert
    expect(small.maxQueuedTasksPerAccount).toBe(3);
    expect(largest.maxQueuedTasksPerAccount).toBe(10_000);
  });

  test.each(['0', '-1', '10001', '2.5', 'many', '1e3'])(
    'refuses %j at start, naming the variable and the value',
    (text) => {
      // Act
      const read = () => localSettingsFromEnv({ MAX_QUEUED_TASKS_PER_ACCOUNT: text });

      // Assert
      expect(read).toThrow(`MAX_QUEUED_TASKS_PER_ACCOUNT must be a whole number from 1 to 10000, got "${text}"`);
    },
  );
});

describe('local settings: EXIT_WITH_PID', () => {
  test('is unset when absent or empty, and a process id when given', () => {
    // Act
    const unset = localSettingsFromEnv({});
    const empty = localSettingsFromEnv({ EXIT_WITH_PID: '' });
    const given = localSettingsFromEnv({ EXIT_WITH_PID: '4242' });

    // Assert
    expect(unset.exitWithPid).toBeUndefined();
    expect(empty.exitWithPid).toBeUndefined();
    expect(given.exitWithPid).toBe(4242);
  });

  test.each(['0', '-1', '2.5', '01', 'me'])('refuses %j at start, naming the variable and the value', (text) => {
    // Act
    const read = () => localSettingsFromEnv({ EXIT_WITH_PID: text });

    // Assert
    expect(read).toThrow(`EXIT_WITH_PID must be a process id (a whole number from 1), got "${text}"`);
  });
});
