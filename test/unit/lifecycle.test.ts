import {
  DEFAULT_LIFECYCLE_CONFIG,
  isRefreshDue,
  nextRefreshStep,
  resultsExpireAt,
  toTaskResource,
} from '../../functions/core/lifecycle';
import { isCancellable, paidOutputs, type TaskRecord } from '../../functions/core/task';

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
  test('a task at the maximum age that the provider has gets one last, final query', () => {
    // Act
    const step = nextRefreshStep(pending({ providerTaskId: 'p-1' }), at(config.maxPendingMs), config);

    // Assert
    expect(step).toEqual({ kind: 'query', providerTaskId: 'p-1', final: true });
  });

  test('a task at the maximum age that never reached the provider fails with TIMEOUT', () => {
    // Act
    const step = nextRefreshStep(pending(), at(config.maxPendingMs), config);

    // Assert
    expect(step).toEqual({ kind: 'fail', errorCode: 'TIMEOUT', errorMessage: 'The task did not finish in time' });
  });

  test('a task with a provider id is queried', () => {
    // Act
    const step = nextRefreshStep(pending({ providerTaskId: 'p-1' }), at(60_000), config);

    // Assert
    expect(step).toEqual({ kind: 'query', providerTaskId: 'p-1', final: false });
  });

  test('a queued task is left to the dispatcher: polls never send', () => {
    // Act
    const step = nextRefreshStep(pending({ stage: 'queued', attempts: 50 }), at(60_000), config);

    // Assert
    expect(step).toEqual({ kind: 'wait' });
  });

  test.each([
    [{ sendClaimedAt: 1_000 }, { kind: 'wait' }],
    // Lost past its lease, maybe after the request went out: its outcome is unknown, never resent.
    [{ sendClaimedAt: -1_000 }, { kind: 'unknown' }],
    [{ sendClaimedAt: -1_000, sendRequeues: 1 }, { kind: 'unknown' }],
  ])('a send claimed at %o (lease 60 s, now 60 s): %o', (fields, expected) => {
    // Prepare
    const created = Date.parse(pending().createdAt);
    const task = pending({ stage: 'sending', ...fields, sendClaimedAt: created + fields.sendClaimedAt });

    // Act
    const step = nextRefreshStep(task, at(60_000), config);

    // Assert
    expect(step).toMatchObject(expected);
  });

  test.each([
    [599_999, { kind: 'wait' }],
    [600_000, { kind: 'fail', errorCode: 'PROVIDER_UNAVAILABLE' }],
  ])('an outcome unknown for %i ms (limit 10 minutes): %o', (elapsedMs, expected) => {
    // Prepare
    const created = Date.parse(pending().createdAt);
    const task = pending({ stage: 'unknown', unknownOutcomeSince: created });

    // Act
    const step = nextRefreshStep(task, at(elapsedMs), { ...config, maxPendingMs: 3_600_000 });

    // Assert
    expect(step).toMatchObject(expected);
  });

  test('an outcome unknown waits for its own limit when one is set', () => {
    // Prepare
    const created = Date.parse(pending().createdAt);
    const task = pending({ stage: 'unknown', unknownOutcomeSince: created });

    // Act
    const step = nextRefreshStep(task, at(5_000), { ...config, unknownOutcomeLimitMs: 5_000 });

    // Assert
    expect(step).toMatchObject({ kind: 'fail', errorCode: 'PROVIDER_UNAVAILABLE' });
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

describe('resultsExpireAt', () => {
  const completedAt = (iso: string) => pending({ status: 1, updatedAt: iso, resultKeys: ['k.png'] });

  test.each([
    // S3 deletes at the first midnight UTC at least N days after creation; the bound is never later.
    ['2026-03-01T10:15:00.000Z', 30, '2026-03-31T00:00:00.000Z'],
    ['2026-03-01T23:59:59.000Z', 1, '2026-03-02T00:00:00.000Z'],
    ['2026-03-01T00:00:00.000Z', 7, '2026-03-08T00:00:00.000Z'],
  ])('completed at %s with %i days of retention: %s', (completed, days, expected) => {
    // Act
    const expires = resultsExpireAt(completedAt(completed), days);

    // Assert
    expect(expires?.toISOString()).toBe(expected);
  });

  test('no retention (local storage) or a task not completed: no expiry', () => {
    // Act
    const kept = resultsExpireAt(completedAt('2026-03-01T10:15:00.000Z'), undefined);
    const notDone = resultsExpireAt(pending(), 30);

    // Assert
    expect(kept).toBeUndefined();
    expect(notDone).toBeUndefined();
  });
});

describe('toTaskResource', () => {
  test('a completed task says until when its results exist', () => {
    // Prepare
    const task = pending({ status: 1, resultKeys: ['a.png'] });
    const expires = new Date('2026-02-01T00:00:00.000Z');

    // Act
    const resource = toTaskResource(task, ['https://m/a.png'], expires);

    // Assert
    expect(resource).toMatchObject({ imageUrls: ['https://m/a.png'], resultsExpireAt: '2026-02-01T00:00:00.000Z' });
  });

  test('a failed task shows the provider code, and only stable text for codes the provider did not word', () => {
    // Prepare: records stored before messages were cleaned carried URLs and object keys.
    const byProvider = pending({
      status: 2,
      errorCode: 'PROVIDER_ERROR',
      errorMessage: 'The provider could not generate the result: Prompt flagged',
      providerErrorCode: 'NSFW',
    });
    const legacy = pending({
      status: 2,
      errorCode: 'STORAGE_ERROR',
      errorMessage: 'The result could not be stored: Source http://127.0.0.1:3001/files/x answered HTTP 404',
    });

    // Act
    const shown = toTaskResource(byProvider);
    const cleaned = toTaskResource(legacy);

    // Assert
    expect(shown).toMatchObject({
      errorCode: 'PROVIDER_ERROR',
      errorMessage: 'The provider could not generate the result: Prompt flagged',
      providerErrorCode: 'NSFW',
    });
    expect(cleaned.errorMessage).toBe('The result could not be stored');
    expect(cleaned).not.toHaveProperty('providerErrorCode');
  });
});

describe('stage, as callers see it', () => {
  test('a pending task is queued while it waits here (also while being sent), running at the provider; an ended one has no stage', () => {
    // Act
    const stages = [
      toTaskResource(pending({ stage: 'queued' })).stage,
      toTaskResource(pending({ stage: 'sending', sendClaimedAt: T0.getTime() })).stage,
      toTaskResource(pending({ stage: 'running', providerTaskId: 'p-1' })).stage,
      // Accepted before the dispatcher: sent inside its submission.
      toTaskResource(pending()).stage,
      toTaskResource(pending({ status: 1, stage: 'running', resultKeys: [] })).stage,
      toTaskResource(pending({ status: 2, stage: 'queued', errorCode: 'CANCELLED' })).stage,
    ];

    // Assert
    expect(stages).toEqual(['queued', 'queued', 'running', 'running', undefined, undefined]);
    expect(toTaskResource(pending({ stage: 'queued' }))).not.toHaveProperty('queuedAhead');
  });

  test('only a pending task still queued, with no provider id, may be cancelled', () => {
    // Act
    const verdicts = [
      isCancellable(pending({ stage: 'queued' })),
      isCancellable(pending({ stage: 'sending' })),
      isCancellable(pending({ stage: 'running', providerTaskId: 'p-1' })),
      isCancellable(pending({ stage: 'queued', providerTaskId: 'p-1' })),
      isCancellable(pending()),
      isCancellable(pending({ status: 2, stage: 'queued' })),
    ];

    // Assert
    expect(verdicts).toEqual([true, false, false, false, false, false]);
  });

  test('a cancelled task reads the stable cancel message', () => {
    // Act
    const shown = toTaskResource(pending({ status: 2, errorCode: 'CANCELLED', errorMessage: 'anything stored' }));

    // Assert
    expect(shown).toMatchObject({ errorCode: 'CANCELLED', errorMessage: 'The task was cancelled before it started' });
  });
});

describe('paidOutputs', () => {
  test.each([
    ['an image task with outputs recorded', pending({ request: { outputs: 4 } }), 4],
    [
      'an older image task (from its provider input)',
      pending({ request: { providerRequest: { input: { num_outputs: 2 } } } }),
      2,
    ],
    ['a video task', pending({ type: 'video', request: { outputs: 3 } }), 1],
    ['a record with nonsense', pending({ request: { outputs: 'many' } }), 1],
  ])('%s', (_case, task, expected) => {
    // Act
    const paid = paidOutputs(task);

    // Assert
    expect(paid).toBe(expected);
  });
});
