/** The Usage page's account-wide monthly limit, without a browser: the field's reading and the line shown. */
import { accountLimitText, limitFromInput, utcDay } from '../../dashboard/src/account-limit';

describe('the monthly limit field', () => {
  it.each([
    ['500', 500],
    [' 0 ', 0],
    ['1000000001', 1_000_000_001],
  ])('%j is sent as %j (the largest limit is the API’s to judge)', (text, value) => {
    // Act / Assert
    expect(limitFromInput(text)).toEqual({ value });
  });

  it.each([[''], ['   '], ['-1'], ['2.5'], ['1e3'], ['ten']])('%j is refused before anything is sent', (text) => {
    // Act / Assert
    expect(limitFromInput(text)).toEqual({
      message: 'Enter a whole number of credits (0 or more), or use Remove limit for none.',
    });
  });
});

describe('what the panel says about the limit', () => {
  it('a limit, with what was spent this month and the UTC day it resets', () => {
    // Act
    const text = accountLimitText({
      credits: 500,
      period: 'month',
      spent: 120,
      resetsAt: '2026-12-01T00:00:00.000Z',
    });

    // Assert
    expect(text).toBe('120 of 500 credits spent this month; resets 1 Dec 2026 (UTC)');
  });

  it('a limit of one credit, and none', () => {
    // Act
    const one = accountLimitText({ credits: 1, period: 'month', spent: 0, resetsAt: '2027-01-01T00:00:00Z' });
    const none = accountLimitText(null);

    // Assert
    expect(one).toBe('0 of 1 credit spent this month; resets 1 Jan 2027 (UTC)');
    expect(none).toBe('No limit');
  });

  it.each([
    ['2026-12-01T00:00:00Z', '1 Dec 2026'],
    // The UTC day, whatever the reader's zone: 23:30 UTC is still the 31st.
    ['2026-12-31T23:30:00Z', '31 Dec 2026'],
    ['not a time', 'not a time'],
  ])('%j is the UTC day %j', (iso, day) => {
    // Act / Assert
    expect(utcDay(iso)).toBe(day);
  });
});
