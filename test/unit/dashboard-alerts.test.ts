/** The Credits page's low-balance alert, without a browser: the field's reading and the status text. */
import { alertStatusText, thresholdFromInput } from '../../dashboard/src/alert-settings';

describe('the low-balance threshold field', () => {
  it.each([
    ['25', 25],
    [' 0 ', 0],
    ['1000000000', 1_000_000_000],
    ['', null],
    ['   ', null],
  ])('%j is sent as %j', (text, value) => {
    // Act / Assert
    expect(thresholdFromInput(text)).toEqual({ value });
  });

  it.each([['-1'], ['2.5'], ['1e3'], ['ten'], ['1000000001']])('%j is refused before anything is sent', (text) => {
    // Act / Assert
    expect(thresholdFromInput(text)).toEqual({
      message: 'Enter a whole number of credits from 0 to 1000000000, or leave it empty for no alert.',
    });
  });
});

describe('what the page says about the alert', () => {
  it('none set, armed, and sent for the current crossing', () => {
    // Act
    const none = alertStatusText({ lowBalanceThreshold: null, lowBalanceSent: false });
    const armed = alertStatusText({ lowBalanceThreshold: 50, lowBalanceSent: false });
    const sent = alertStatusText({ lowBalanceThreshold: 50, lowBalanceSent: true });

    // Assert
    expect(none).toBe('No low-balance alert is set.');
    expect(armed).toBe('Your webhook endpoint gets credits.low when the balance falls below 50 credits.');
    expect(sent).toBe(
      'Your webhook endpoint gets credits.low when the balance falls below 50 credits. It was sent; it is sent again after the balance is topped up above it.',
    );
  });
});
