/**
 * The cap on tasks in flight as a setting (docs/design/dispatching.md): `PROVIDER_MAX_IN_FLIGHT`
 * in the environment contract, as the dispatcher and the finishing functions read it, and as `npm start`
 * checks it; the profile's `capacity.maxInFlight` (the CDK context is checked at synth, test/infra).
 */

import { DEFAULT_LIFECYCLE_CONFIG } from '../../functions/core/lifecycle';
import { parseMaxInFlight } from '../../functions/core/provider-capacity';
import { dispatchSettingsFromEnv } from '../../functions/dispatcher/handler';
import { PROVIDER_MAX_IN_FLIGHT, readEnv } from '../../functions/environment/environment';
import { withMaxInFlightFromEnv } from '../../functions/runtime/provider-lifecycle-from-env';
import { localSettingsFromEnv } from '../../local/settings';

describe('PROVIDER_MAX_IN_FLIGHT', () => {
  test('reads a whole number from 1; unset or empty is no cap', () => {
    // Act
    const values = ['1', '4', ' 20 ', '1000000', '', undefined].map((text) =>
      readEnv(PROVIDER_MAX_IN_FLIGHT, { PROVIDER_MAX_IN_FLIGHT: text }),
    );

    // Assert
    expect(values).toEqual([1, 4, 20, 1_000_000, undefined, undefined]);
    expect(PROVIDER_MAX_IN_FLIGHT.setBy).toBe('stack-when-configured');
  });

  test.each(['0', '-1', '1.5', 'four', '1000001', '4 tasks'])('refuses "%s", naming the variable', (text) => {
    // Act
    const attempt = () => readEnv(PROVIDER_MAX_IN_FLIGHT, { PROVIDER_MAX_IN_FLIGHT: text });

    // Assert
    expect(attempt).toThrow(`PROVIDER_MAX_IN_FLIGHT must be a whole number from 1 to 1000000, got "${text}"`);
  });

  test('accepts exactly what the shared parser accepts (the context and the profile use that one)', () => {
    // Prepare
    const texts = ['1', '8', '1000000', '0', '1000001', '2.5', 'x'];
    const parses = (read: () => unknown) => {
      try {
        read();
        return true;
      } catch {
        return false;
      }
    };

    // Act
    const byContract = texts.map((text) =>
      parses(() => readEnv(PROVIDER_MAX_IN_FLIGHT, { PROVIDER_MAX_IN_FLIGHT: text })),
    );
    const byParser = texts.map((text) => parses(() => parseMaxInFlight(text, 'x')));

    // Assert
    expect(byContract).toEqual(byParser);
  });
});

describe('who reads it', () => {
  test('the dispatcher keeps to it, with or without a create rate', () => {
    // Act
    const both = dispatchSettingsFromEnv({ PROVIDER_CREATE_RATE_LIMIT: '20/10', PROVIDER_MAX_IN_FLIGHT: '3' });
    const capOnly = dispatchSettingsFromEnv({ PROVIDER_MAX_IN_FLIGHT: '3' });
    const neither = dispatchSettingsFromEnv({});

    // Assert
    expect(both).toEqual({ createRateLimit: { requests: 20, windowSeconds: 10 }, maxInFlight: 3 });
    expect(capOnly).toEqual({ maxInFlight: 3 });
    expect(neither).toEqual({});
    expect(() => dispatchSettingsFromEnv({ PROVIDER_MAX_IN_FLIGHT: '0' })).toThrow('PROVIDER_MAX_IN_FLIGHT');
  });

  test("the finishing functions' lifecycle carries it only when it is set", () => {
    // Act
    const capped = withMaxInFlightFromEnv(DEFAULT_LIFECYCLE_CONFIG, { PROVIDER_MAX_IN_FLIGHT: '5' });
    const uncapped = withMaxInFlightFromEnv(DEFAULT_LIFECYCLE_CONFIG, {});

    // Assert
    expect(capped).toEqual({ ...DEFAULT_LIFECYCLE_CONFIG, maxInFlight: 5 });
    expect(uncapped).toBe(DEFAULT_LIFECYCLE_CONFIG);
    expect(uncapped).not.toHaveProperty('maxInFlight');
  });

  test('npm start checks it at once and passes it on; a malformed value stops the start naming it', () => {
    // Act
    const set = localSettingsFromEnv({ PROVIDER_MAX_IN_FLIGHT: '6' });
    const unset = localSettingsFromEnv({});

    // Assert
    expect(set.providerMaxInFlight).toBe(6);
    expect(unset).not.toHaveProperty('providerMaxInFlight');
    expect(() => localSettingsFromEnv({ PROVIDER_MAX_IN_FLIGHT: '0' })).toThrow(
      'PROVIDER_MAX_IN_FLIGHT must be a whole number from 1',
    );
    expect(() => localSettingsFromEnv({ PROVIDER_MAX_IN_FLIGHT: 'many' })).toThrow('PROVIDER_MAX_IN_FLIGHT');
  });
});
