/**
 * Account events' pure rules (functions/core/account-events.ts): which thresholds a key's spending has
 * reached, when the balance counts as low, the event ids and the threshold setting; and the webhook
 * worker's reading of an account event's claimed delivery.
 */
import {
  isAccountEventId,
  isCreditsLow,
  lowBalanceThresholdProblem,
  newAccountEventId,
  spendEventType,
  spendThresholdsReached,
} from '../../functions/core/account-events';
import { webhookPayload } from '../../functions/core/webhooks';
import { claimedDeliveryOf } from '../../functions/webhook-worker/handler';

describe('spend thresholds', () => {
  it.each([
    [0, 10, []],
    [7, 10, []],
    [8, 10, [80]],
    [9, 10, [80]],
    [10, 10, [80, 100]],
    [12, 10, [80, 100]],
    // 80% of 3 is 2.4: 2 is below it, 3 reaches both.
    [2, 3, []],
    [3, 3, [80, 100]],
    // 80% of 1,000,000,000 exactly, without rounding.
    [799_999_999, 1_000_000_000, []],
    [800_000_000, 1_000_000_000, [80]],
    // A limit of 0 never spends: nothing to cross.
    [0, 0, []],
  ])('spent %d of %d reaches %j', (spent, limit, expected) => {
    // Act
    const reached = spendThresholdsReached(spent, limit);

    // Assert
    expect(reached).toEqual(expected);
  });

  it('names the event of each threshold', () => {
    // Act / Assert
    expect(spendEventType(80)).toBe('key.spend_limit.warning');
    expect(spendEventType(100)).toBe('key.spend_limit.reached');
  });
});

describe('low balance', () => {
  it.each([
    [9, 10, true],
    [10, 10, false],
    [11, 10, false],
    [0, 0, false],
    [-1, 0, true],
    [5, undefined, false],
  ])('a balance of %d with a threshold of %s is low: %s', (balance, threshold, low) => {
    // Act / Assert
    expect(isCreditsLow(balance, threshold)).toBe(low);
  });

  it.each([[0], [1], [250], [1_000_000_000], [null]])('the threshold %s is accepted', (value) => {
    // Act / Assert
    expect(lowBalanceThresholdProblem(value)).toBeUndefined();
  });

  it.each([[-1], [1.5], ['10'], [1_000_000_001], [Number.NaN], [undefined], [{}]])(
    'the threshold %s is refused',
    (value) => {
      // Act / Assert
      expect(lowBalanceThresholdProblem(value)).toMatch(/whole number of credits from 0 to 1000000000, or null/);
    },
  );
});

describe('account event ids and payloads', () => {
  it('an event id is evt_ and 32 hex digits, new each time, and no task id (a UUID) passes for one', () => {
    // Act
    const ids = [newAccountEventId(), newAccountEventId()];

    // Assert
    for (const id of ids) {
      expect(id).toMatch(/^evt_[0-9a-f]{32}$/);
      expect(isAccountEventId(id)).toBe(true);
    }
    expect(ids[0]).not.toBe(ids[1]);
    expect(isAccountEventId('0f6c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f')).toBe(false);
  });

  it('the payload is the envelope every delivery has', () => {
    // Act
    const payload = webhookPayload('credits.low', '2026-11-25T10:00:00.000Z', { balance: 8, threshold: 10 });

    // Assert
    expect(payload).toEqual({
      type: 'credits.low',
      timestamp: '2026-11-25T10:00:00.000Z',
      data: { balance: 8, threshold: 10 },
    });
  });

  it('the worker takes a claimed account event delivery by its event id', () => {
    // Prepare
    const record = {
      eventName: 'INSERT' as const,
      dynamodb: {
        NewImage: {
          SK: { S: 'WEBHOOK#evt_0123' },
          deliveryState: { S: 'sending' },
          claimId: { S: 'c1' },
          userId: { S: 'u' },
          eventId: { S: 'evt_0123' },
        },
      },
    };

    // Act
    const claimed = claimedDeliveryOf(record);

    // Assert
    expect(claimed).toEqual({ userId: 'u', taskId: 'evt_0123', claimId: 'c1' });
  });
});
