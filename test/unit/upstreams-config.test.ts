/**
 * Upstreams as configuration (functions/core/upstreams.ts, local/upstream-settings.ts): one parser for
 * synth, start and the functions, each problem naming the upstream and the field; `MOCK_UPSTREAMS`
 * mocks named mock-1 ... mock-N on consecutive ports, declared with the service's capacity settings.
 */
import { parseUpstreams } from '../../functions/core/upstreams';
import { localSettingsFromEnv } from '../../local/settings';
import { localUpstreamsList } from '../../local/upstream-settings';

const RULES = { profiles: ['mock', 'kie'], models: ['image-model-1', 'image-model-2'], keysInline: true };

describe('parseUpstreams', () => {
  it('reads a list in priority order, the list breaking ties', () => {
    // Act
    const upstreams = parseUpstreams(
      JSON.stringify([
        { name: 'b', profile: 'kie', baseUrl: 'https://b', priority: 2 },
        {
          name: 'a',
          profile: 'mock',
          baseUrl: 'http://a',
          createRateLimit: '20/10',
          maxInFlight: 5,
          models: ['image-model-1'],
          apiKey: 'k',
        },
      ]),
      'PROVIDER_UPSTREAMS',
      RULES,
    );

    // Assert
    expect(upstreams.map((upstream) => upstream.name)).toEqual(['a', 'b']);
    expect(upstreams[0]).toMatchObject({
      createRateLimit: { requests: 20, windowSeconds: 10 },
      maxInFlight: 5,
      models: ['image-model-1'],
      apiKey: 'k',
    });
  });

  it('names every problem with its upstream and field, all at once', () => {
    // Act
    const attempt = () =>
      parseUpstreams(
        [
          { name: 'Bad Name', profile: 'x', baseUrl: '' },
          { name: 'ok', profile: 'kie', baseUrl: 'https://x', maxInFlight: 0, extra: 1 },
        ],
        'upstreams',
        RULES,
      );

    // Assert
    expect(attempt).toThrow(/upstream 1: name: required/);
    expect(attempt).toThrow(/upstream 1: profile: must be one of mock, kie/);
    expect(attempt).toThrow(/upstream 1: baseUrl: required/);
    expect(attempt).toThrow(/upstream "ok": extra: unknown field/);
    expect(attempt).toThrow(/upstream "ok": maxInFlight: must be a whole number from 1/);
  });
});

describe('MOCK_UPSTREAMS', () => {
  it('puts N mocks on consecutive ports, moves the OpenID provider past them, and declares each with the capacity settings', () => {
    // Act
    const settings = localSettingsFromEnv({
      MOCK_UPSTREAMS: '3',
      MOCK_PROVIDER_PORT: '5001',
      PROVIDER_CREATE_RATE_LIMIT: '20/10',
    });
    const list = localUpstreamsList({
      settings,
      mockUrls: ['http://127.0.0.1:5001', 'http://127.0.0.1:5002', 'http://127.0.0.1:5003'],
      apiKey: 'key',
      profile: 'mock',
      createRateLimit: settings.providerCreateRateLimit,
    });

    // Assert
    expect(settings).toMatchObject({ mockUpstreams: 3, mockProviderPort: 5001 });
    expect(settings.oidcProviderPort).not.toBe(5002);
    expect(settings.oidcProviderPort).not.toBe(5003);
    const upstreams = parseUpstreams(list, 'PROVIDER_UPSTREAMS', RULES);
    expect(upstreams.map((upstream) => [upstream.name, upstream.baseUrl, upstream.createRateLimit])).toEqual([
      ['mock-1', 'http://127.0.0.1:5001', { requests: 20, windowSeconds: 10 }],
      ['mock-2', 'http://127.0.0.1:5002', { requests: 20, windowSeconds: 10 }],
      ['mock-3', 'http://127.0.0.1:5003', { requests: 20, windowSeconds: 10 }],
    ]);
  });

  it('keeps one upstream without a list by default, and refuses bad values naming the variable', () => {
    // Act
    const settings = localSettingsFromEnv({});

    // Assert
    expect(settings.mockUpstreams).toBe(1);
    expect(
      localUpstreamsList({ settings, mockUrls: ['http://127.0.0.1:3001'], apiKey: 'k', profile: 'mock' }),
    ).toBeUndefined();
    expect(() => localSettingsFromEnv({ MOCK_UPSTREAMS: '0' })).toThrow(
      'MOCK_UPSTREAMS must be a whole number from 1 to 16',
    );
    expect(() =>
      localSettingsFromEnv({
        PROVIDER_UPSTREAMS: '[{"name":"a","profile":"mock","baseUrl":"http://a","models":["nope"]}]',
      }),
    ).toThrow('upstream "a": models: unknown model ids: nope');
  });
});
