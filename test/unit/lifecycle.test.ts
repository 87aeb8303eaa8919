import { DEFAULT_LIFECYCLE_CONFIG, isRefreshDue, nextRefreshStep } from '../../functions/core/lifecycle';
import type { TaskRecord } from '../../functions/core/task';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const config = { refreshIntervalMs: 30_000, maxPendingMs: 1_800_000, maxSendAttempts: 5 };

function pending(extra: Partial<TaskRecord> = {}): TaskRecord {
  return {
    userId: 'u',
    taskId: 't',
    type: 'image',
    status: 0,
    model: 'image-model-1',
    prompt: 'p',
    request: {},
    creditsUsed: 3,
    creditsRefunded: false,
    createdAt: T0.toISOString(),
    updatedAt: T0.toISOString(),
    attempts: 0,
    lastCheckedAt: T0.getTime(),
    ...extra,
  };
}

describe('isRefreshDue', () => {
  test.each([
    [0, false],
    [29_999, false],
    [30_000, true],
  ])('at acceptance + %i ms: %s', (offset, expected) => {
    // Act
    const due = isRefreshDue(pending(), at(offset), config);

    // Assert
    expect(due).toBe(expected);
  });

  test('a task never checked is due', () => {
    // Act
    const due = isRefreshDue(pending({ lastCheckedAt: undefined }), T0, config);

    // Assert
    expect(due).toBe(true);
  });
});

describe('nextRefreshStep', () => {
  test('a task at the maximum age fails with TIMEOUT, even with a provider id', () => {
    // Act
    const step = nextRefreshStep(pending({ providerTaskId: 'p-1' }), at(config.maxPendingMs), config);

    // Assert
    expect(step).toMatchObject({ kind: 'fail', errorCode: 'TIMEOUT' });
  });

  test('a task with a provider id is queried', () => {
    // Act
    const step = nextRefreshStep(pending({ providerTaskId: 'p-1' }), at(60_000), config);

    // Assert
    expect(step).toEqual({ kind: 'query', providerTaskId: 'p-1' });
  });

  test.each([
    [config.maxSendAttempts, { kind: 'send' }],
    [config.maxSendAttempts + 1, { kind: 'fail', errorCode: 'PROVIDER_UNAVAILABLE' }],
  ])('a task never sent, claimed %i times: %o', (attempts, expected) => {
    // Act
    const step = nextRefreshStep(pending({ attempts }), at(60_000), config);

    // Assert
    expect(step).toMatchObject(expected);
  });

  test('the defaults are the spec and design figures', () => {
    // Assert
    expect(DEFAULT_LIFECYCLE_CONFIG).toEqual({
      refreshIntervalMs: 30_000,
      maxPendingMs: 1_800_000,
      maxSendAttempts: 5,
    });
  });
});
