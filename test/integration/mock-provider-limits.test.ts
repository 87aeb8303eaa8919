/**
 * The mock provider's capacity limits over real HTTP: a create rate per sliding window (Kie.ai's 20 per
 * 10 s, the excess answered 429 with Retry-After and not queued) and a cap on tasks in flight. The
 * mock's clock is moved by the test, never slept on.
 */
import { parseCreateRateLimit, parseMaxInFlight } from '../../functions/core/provider-capacity';
import { createHttpProvider } from '../../functions/provider/http-provider';
import { ProviderUnavailableError } from '../../functions/provider/port';
import { type MockProvider, startMockProvider } from '../../local/mock-provider';
import { localSettingsFromEnv } from '../../local/settings';

const KEY = 'limits-provider-key';
let mock: MockProvider | undefined;
let clock = 1_767_268_800_000;

afterEach(async () => {
  await mock?.stop();
  mock = undefined;
});

async function start(options: Parameters<typeof startMockProvider>[0] = {}): Promise<MockProvider> {
  mock = await startMockProvider({ apiKey: KEY, now: () => clock, ...options });
  return mock;
}

function createTask(provider: MockProvider, input: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${provider.url}/api/v1/jobs/createTask`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'image-model-1', input: { prompt: 'a lighthouse', ...input } }),
  });
}

describe('the create rate limit', () => {
  it('takes the declared number of creates per window and answers the excess 429 with Retry-After', async () => {
    // Prepare
    const provider = await start({ createRateLimit: { requests: 3, windowSeconds: 10 } });

    // Act
    const answers = await Promise.all(Array.from({ length: 5 }, () => createTask(provider)));

    // Assert
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const refused = answers.find((answer) => answer.status === 429);
    expect(refused?.headers.get('retry-after')).toBe('10');
    expect(await refused?.json()).toEqual({ code: 429, msg: 'Rate limit exceeded: at most 3 new tasks per 10 s' });
    expect(provider.stats.createTaskCalls).toBe(5);
    expect(provider.stats.createTaskRefused).toBe(2);
    expect(provider.stats.tasksCreated).toBe(3);
  });

  it('slides: a call counts for exactly one window, refused calls do not count, Retry-After shrinks', async () => {
    // Prepare
    const provider = await start({ createRateLimit: { requests: 2, windowSeconds: 10 } });
    expect((await createTask(provider)).status).toBe(200);
    clock += 4_000;
    expect((await createTask(provider)).status).toBe(200);

    // Act
    clock += 2_500;
    const atFull = await createTask(provider);
    clock += 3_500; // the first call is now exactly 10 s old: out of the window
    const afterFirstLeft = await createTask(provider);
    const againFull = await createTask(provider);

    // Assert
    expect(atFull.status).toBe(429);
    expect(atFull.headers.get('retry-after')).toBe('4'); // 3.5 s, rounded up
    expect(afterFirstLeft.status).toBe(200);
    expect(againFull.status).toBe(429);
    expect(againFull.headers.get('retry-after')).toBe('4'); // the second call leaves the window in 4 s
  });

  it('surfaces to the service as a transient failure, never a refusal of the input', async () => {
    // Prepare
    const provider = await start({ createRateLimit: { requests: 1, windowSeconds: 10 } });
    const http = createHttpProvider({ baseUrl: provider.url, apiKey: async () => KEY, timeoutMs: 5_000 });
    await http.createTask({ model: 'image-model-1', input: { prompt: 'first' } });

    // Act
    const second = http.createTask({ model: 'image-model-1', input: { prompt: 'second' } });

    // Assert
    await expect(second).rejects.toBeInstanceOf(ProviderUnavailableError);
  });
});

describe('the cap on tasks in flight', () => {
  it('refuses a create while the cap is reached and takes it once a task has ended', async () => {
    // Prepare
    const provider = await start({ maxInFlight: 2 });
    await createTask(provider, { mockDelayMs: 5_000 });
    await createTask(provider, { mockDelayMs: 8_000 });

    // Act
    const atCap = await createTask(provider, { mockDelayMs: 1_000 });
    clock += 5_000; // the first task ends
    const afterOneEnded = await createTask(provider, { mockDelayMs: 1_000 });

    // Assert
    expect(atCap.status).toBe(429);
    expect(atCap.headers.get('retry-after')).toBe('5');
    expect(await atCap.json()).toEqual({ code: 429, msg: 'Too many tasks in flight: at most 2 at once' });
    expect(afterOneEnded.status).toBe(200);
    expect(provider.stats.peakInFlight).toBe(2);
    expect(provider.stats.createTaskRefused).toBe(1);
  });

  it('counts only created tasks: a refused input takes no place', async () => {
    // Prepare
    const provider = await start({ maxInFlight: 1 });

    // Act
    const rejected = await createTask(provider, { mockOutcome: 'reject' });
    const created = await createTask(provider, { mockDelayMs: 60_000 });

    // Assert
    expect(rejected.status).toBe(422);
    expect(created.status).toBe(200);
  });
});

describe('switching limits', () => {
  it('sets and lifts them at run time through POST /__control and reports them in /__stats', async () => {
    // Prepare
    const provider = await start();
    const control = (body: unknown) =>
      fetch(`${provider.url}/__control`, { method: 'POST', body: JSON.stringify(body) });

    // Act
    const set = await control({ createRateLimit: '1/60', maxInFlight: 5 });
    const first = await createTask(provider);
    const second = await createTask(provider);
    const stats = (await (await fetch(`${provider.url}/__stats`)).json()) as Record<string, unknown>;
    const lifted = await control({ createRateLimit: null, maxInFlight: null });
    const third = await createTask(provider);
    const bad = await control({ createRateLimit: '20 per 10' });

    // Assert
    expect(set.status).toBe(200);
    expect([first.status, second.status, third.status]).toEqual([200, 429, 200]);
    expect(stats).toMatchObject({
      createTaskCalls: 2,
      createTaskRefused: 1,
      tasksCreated: 1,
      limits: { createRateLimit: '1/60', maxInFlight: 5 },
    });
    expect(lifted.status).toBe(200);
    expect(provider.limits).toMatchObject({ createRateLimit: null, maxInFlight: null });
    expect(bad.status).toBe(400);
  });
});

describe('the settings', () => {
  it('reads MOCK_PROVIDER_CREATE_RATE_LIMIT and MOCK_PROVIDER_MAX_IN_FLIGHT and refuses malformed values', () => {
    // Prepare
    const env = { MOCK_PROVIDER_CREATE_RATE_LIMIT: '20/10', MOCK_PROVIDER_MAX_IN_FLIGHT: '8' };

    // Act
    const settings = localSettingsFromEnv(env);

    // Assert
    expect(settings.mockProviderCreateRateLimit).toEqual({ requests: 20, windowSeconds: 10 });
    expect(settings.mockProviderMaxInFlight).toBe(8);
    expect(localSettingsFromEnv({}).mockProviderCreateRateLimit).toBeUndefined();
    expect(() => localSettingsFromEnv({ MOCK_PROVIDER_CREATE_RATE_LIMIT: '20' })).toThrow(
      'MOCK_PROVIDER_CREATE_RATE_LIMIT must be <requests>/<seconds>',
    );
    expect(() => localSettingsFromEnv({ MOCK_PROVIDER_MAX_IN_FLIGHT: '0' })).toThrow(
      'MOCK_PROVIDER_MAX_IN_FLIGHT must be a whole number from 1',
    );
    expect(parseCreateRateLimit(' 20 / 10 ', 'x')).toEqual({ requests: 20, windowSeconds: 10 });
    expect(() => parseCreateRateLimit('0/10', 'x')).toThrow();
    expect(() => parseCreateRateLimit('5/0', 'x')).toThrow();
    expect(() => parseMaxInFlight('1.5', 'x')).toThrow();
  });
});
