import { idleBackoff } from '../../local/idle-backoff';

describe('the local loops’ idle backoff', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('doubles the idle pause up to its longest and starts again at the base after work', () => {
    // Prepare
    const backoff = idleBackoff(50, 400);

    // Act
    const pauses = [
      backoff.nextIdleMs(),
      backoff.nextIdleMs(),
      backoff.nextIdleMs(),
      backoff.nextIdleMs(),
      backoff.nextIdleMs(),
    ];
    backoff.reset();
    const afterWork = backoff.nextIdleMs();

    // Assert
    expect(pauses).toEqual([50, 100, 200, 400, 400]);
    expect(afterWork).toBe(50);
  });

  it('a nudge cuts a long idle pause to the base pause, but never a capacity wait', async () => {
    // Prepare
    const backoff = idleBackoff(50, 2000);
    let idleWoke = false;
    let waitWoke = false;
    void backoff.sleep(2000, true).then(() => {
      idleWoke = true;
    });

    // Act: nudged, the idle sleep ends after the base pause
    backoff.nudge();
    await jest.advanceTimersByTimeAsync(60);
    void backoff.sleep(2000, false).then(() => {
      waitWoke = true;
    });
    backoff.nudge();
    await jest.advanceTimersByTimeAsync(60);

    // Assert
    expect(idleWoke).toBe(true);
    expect(waitWoke).toBe(false);
    await jest.advanceTimersByTimeAsync(2000);
    expect(waitWoke).toBe(true);
  });
});
