import { boundRetryAfter, DEFAULT_MAX_RETRY_AFTER_SECONDS, parseRetryAfter } from '../../functions/core/retry-after';
import { dispatchSettingsFromEnv } from '../../functions/dispatcher/handler';

const NOW = Date.parse('2026-11-27T12:00:00Z');

describe('parseRetryAfter', () => {
  it.each([
    ['3', 3],
    [' 3600 ', 3600],
    ['0', 0],
    ['86400', 86_400],
    ['99999999999999999999', Number.MAX_SAFE_INTEGER],
    ['Fri, 27 Nov 2026 12:01:00 GMT', 60],
    ['Fri, 27 Nov 2026 13:00:00 GMT', 3600],
    ['Fri, 27 Nov 2026 12:00:00 GMT', 0],
    ['Thu, 26 Nov 2026 12:00:00 GMT', 0],
  ])('reads %j as %d seconds', (header, seconds) => {
    // Act
    const parsed = parseRetryAfter(header, NOW);

    // Assert
    expect(parsed).toBe(seconds);
  });

  it.each([
    [null],
    [undefined],
    [''],
    ['  '],
    ['-5'],
    ['1.5'],
    ['soon'],
    ['2026-11-27T13:00:00Z'],
    ['Mon, 99 Foo 2026 99:99:99 GMT'],
  ])('reads %j as no Retry-After', (header) => {
    // Act
    const parsed = parseRetryAfter(header, NOW);

    // Assert
    expect(parsed).toBeUndefined();
  });
});

describe('boundRetryAfter', () => {
  it.each([
    [3600, DEFAULT_MAX_RETRY_AFTER_SECONDS, { seconds: 60, cut: true }],
    [86_400, 5, { seconds: 5, cut: true }],
    [61, 60, { seconds: 60, cut: true }],
    [60, 60, { seconds: 60, cut: false }],
    [3, 60, { seconds: 3, cut: false }],
    [0, 60, { seconds: 0, cut: false }],
  ])('honours %d s under a bound of %d s as %j', (asked, bound, expected) => {
    // Act
    const bounded = boundRetryAfter(asked, bound);

    // Assert
    expect(bounded).toEqual(expected);
  });

  it('cuts an HTTP date an hour ahead to the default bound', () => {
    // Act
    const bounded = boundRetryAfter(parseRetryAfter('Fri, 27 Nov 2026 13:00:00 GMT', NOW) ?? 0, 60);

    // Assert
    expect(bounded).toEqual({ seconds: 60, cut: true });
  });
});

describe("the dispatcher's backoff settings", () => {
  it('reads the bound and the refusals per task from the environment; unset, the code defaults apply', () => {
    // Act
    const set = dispatchSettingsFromEnv({
      PROVIDER_MAX_RETRY_AFTER_SECONDS: '30',
      PROVIDER_MAX_REFUSALS_PER_TASK: '3',
    });
    const unset = dispatchSettingsFromEnv({});

    // Assert
    expect(set).toMatchObject({ maxRetryAfterSeconds: 30, maxRefusalsPerTask: 3 });
    expect(unset).not.toHaveProperty('maxRetryAfterSeconds');
    expect(unset).not.toHaveProperty('maxRefusalsPerTask');
  });

  it.each([
    ['PROVIDER_MAX_RETRY_AFTER_SECONDS', '0'],
    ['PROVIDER_MAX_RETRY_AFTER_SECONDS', '86401'],
    ['PROVIDER_MAX_RETRY_AFTER_SECONDS', '1h'],
    ['PROVIDER_MAX_REFUSALS_PER_TASK', '0'],
    ['PROVIDER_MAX_REFUSALS_PER_TASK', 'many'],
  ])('refuses %s=%s, naming the variable', (name, text) => {
    // Act
    const read = () => dispatchSettingsFromEnv({ [name]: text });

    // Assert
    expect(read).toThrow(name);
  });
});
