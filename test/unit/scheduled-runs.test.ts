import { startScheduledRuns } from '../../local/scheduled-runs';

/** Runs at each fake-clock time, answering `idle` as `answers` says (idle once the list is spent). */
function recordRuns(answers: boolean[] = []) {
  const at: number[] = [];
  const run = async () => {
    at.push(Date.now());
    return { idle: answers.shift() ?? true };
  };
  return { at, run };
}

describe('the local stack’s scheduled runs (the sweeper’s timer)', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('runs every interval while runs find work, and doubles the pause after idle runs up to the longest', async () => {
    // Prepare: two runs with work, then idle ones
    const { at, run } = recordRuns([false, false]);
    const runs = startScheduledRuns({ run, intervalMs: 1000, idleMaxMs: 8000, log: () => undefined, name: 'sweeper' });

    // Act
    await jest.advanceTimersByTimeAsync(40_000);
    await runs.stop();

    // Assert: work at 1 s and 2 s; idle from 3 s on: pauses 1, 2, 4, 8, 8 ... s
    expect(at.slice(0, 8)).toEqual([1000, 2000, 3000, 4000, 6000, 10_000, 18_000, 26_000]);
  });

  it('a nudge brings the next run within the interval, and the pauses start again from it', async () => {
    // Prepare: idle runs, backed off to 8 s pauses
    const { at, run } = recordRuns();
    const runs = startScheduledRuns({ run, intervalMs: 1000, idleMaxMs: 8000, log: () => undefined, name: 'sweeper' });
    await jest.advanceTimersByTimeAsync(16_000); // runs at 1, 2, 4, 8, 16 s; the next due at 24 s

    // Act
    await jest.advanceTimersByTimeAsync(500);
    runs.nudge();
    await jest.advanceTimersByTimeAsync(4000);
    await runs.stop();

    // Assert: at 16.5 + 1 s, then 1 s and 2 s later (not at 24 s)
    expect(at).toEqual([1000, 2000, 4000, 8000, 16_000, 17_500, 18_500, 20_500]);
  });

  it('a run that throws is logged and counts as work (no backoff)', async () => {
    // Prepare
    const lines: string[] = [];
    const at: number[] = [];
    const run = async () => {
      at.push(Date.now());
      throw new Error('table gone');
    };
    const runs = startScheduledRuns({
      run,
      intervalMs: 1000,
      idleMaxMs: 8000,
      log: (l) => lines.push(l),
      name: 'sweeper',
    });

    // Act
    await jest.advanceTimersByTimeAsync(3000);
    await runs.stop();

    // Assert
    expect(at).toEqual([1000, 2000, 3000]);
    expect(lines[0]).toBe('sweeper failed: table gone');
  });
});
