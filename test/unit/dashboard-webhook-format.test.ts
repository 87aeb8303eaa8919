/** The Webhooks pages' choices and texts, without a browser (dashboard/src/webhook-format.ts). */
import {
  attemptText,
  DELIVERY_STATES,
  deliveryStateDetail,
  deliveryStateName,
  endpointEventsText,
  TEST_EVENT_TYPE,
  WEBHOOK_EVENT_TYPES,
} from '../../dashboard/src/webhook-format';
import { TEST_EVENT_TYPE as API_TEST_EVENT_TYPE, ENDPOINT_EVENT_TYPES } from '../../functions/core/webhook-endpoints';

type Delivery = Parameters<typeof deliveryStateDetail>[0];

const delivery: Delivery = {
  id: 'dlv_x',
  endpointId: 'ep_x',
  eventId: 'msg_x',
  eventType: 'webhook.test',
  eventAt: '2026-11-27T12:00:00.000Z',
  state: 'delivered',
  attempts: [],
  nextAttemptAt: null,
  deliveredAt: '2026-11-27T12:00:01.000Z',
  gaveUpAt: null,
  reason: null,
  createdAt: '2026-11-27T12:00:00.000Z',
};

describe('the choices the Webhooks pages offer', () => {
  it('every event type the API takes, in its order, and its test event (the dashboard cannot import them)', () => {
    // Act / Assert
    expect(WEBHOOK_EVENT_TYPES.map(({ type }) => type)).toEqual([...ENDPOINT_EVENT_TYPES]);
    expect(TEST_EVENT_TYPE).toBe(API_TEST_EVENT_TYPE);
  });

  it('the five states of the delivery log, each with a word', () => {
    // Act / Assert
    expect(DELIVERY_STATES.map(({ state }) => state)).toEqual(['queued', 'sending', 'waiting', 'delivered', 'failed']);
    expect(deliveryStateName('waiting')).toBe('Waiting to retry');
  });
});

describe('what the Webhooks pages say', () => {
  it('an endpoint taking every event type, or some', () => {
    // Act / Assert
    expect(endpointEventsText(null)).toBe('All event types');
    expect(endpointEventsText(['task.completed', 'credits.low'])).toBe('task.completed, credits.low');
  });

  it('an answered attempt, and one without an answer, with its error', () => {
    // Act
    const answered = attemptText({ attempt: 1, at: delivery.eventAt, statusCode: 200, durationMs: 35, error: null });
    const unanswered = attemptText({
      attempt: 3,
      at: delivery.eventAt,
      statusCode: null,
      durationMs: 10_000,
      error: 'timed out after 10 s',
    });

    // Assert
    expect(answered).toMatch(/^#1 · .+ · HTTP 200 · 35 ms$/);
    expect(unanswered).toMatch(/^#3 · .+ · no answer · 10000 ms · timed out after 10 s$/);
  });

  it('beside the state: the next attempt of a waiting delivery, when a failed one gave up, why one was never tried', () => {
    // Act
    const waiting = deliveryStateDetail({ ...delivery, state: 'waiting', nextAttemptAt: '2026-11-27T13:00:00.000Z' });
    const gaveUp = deliveryStateDetail({ ...delivery, state: 'failed', gaveUpAt: '2026-11-28T12:00:00.000Z' });
    const dropped = deliveryStateDetail({
      ...delivery,
      state: 'failed',
      reason: 'Dropped: the account already has 100',
    });
    const delivered = deliveryStateDetail(delivery);

    // Assert
    expect(waiting).toMatch(/^next attempt /);
    expect(gaveUp).toMatch(/^gave up /);
    expect(dropped).toBe('Dropped: the account already has 100');
    expect(delivered).toBe('');
  });
});
