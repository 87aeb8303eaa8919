/**
 * The dispatcher's shortest backoff and an upstream's first cool-off as settings
 * (PROVIDER_MIN_BACKOFF_MS, PROVIDER_COOL_OFF_MS): unset, the deployed defaults apply; set, within
 * their bounds, the dispatcher takes them; outside them, the read fails naming the variable.
 */
import { dispatchSettingsFromEnv } from '../../functions/dispatcher/handler';
import { COOL_OFF_MS, MIN_BACKOFF_MS } from '../../functions/lifecycle/dispatch';

describe("the dispatcher's backoff and cool-off settings", () => {
  it('reads both from the environment; unset, the code defaults (1 s and 5 s) apply', () => {
    // Act
    const set = dispatchSettingsFromEnv({ PROVIDER_MIN_BACKOFF_MS: '200', PROVIDER_COOL_OFF_MS: '300' });
    const unset = dispatchSettingsFromEnv({});

    // Assert
    expect(set).toMatchObject({ minBackoffMs: 200, coolOffMs: 300 });
    expect(unset).not.toHaveProperty('minBackoffMs');
    expect(unset).not.toHaveProperty('coolOffMs');
    expect({ MIN_BACKOFF_MS, COOL_OFF_MS }).toEqual({ MIN_BACKOFF_MS: 1000, COOL_OFF_MS: 5000 });
  });

  it.each([
    ['PROVIDER_MIN_BACKOFF_MS', '9'],
    ['PROVIDER_MIN_BACKOFF_MS', '60001'],
    ['PROVIDER_MIN_BACKOFF_MS', '1s'],
    ['PROVIDER_COOL_OFF_MS', '0'],
    ['PROVIDER_COOL_OFF_MS', '60001'],
  ])('refuses %s=%s, naming the variable', (name, text) => {
    // Act
    const read = () => dispatchSettingsFromEnv({ [name]: text });

    // Assert
    expect(read).toThrow(name);
  });
});
