/**
 * The HTTP provider adapter against the mock provider over real HTTP on 127.0.0.1, and the provider
 * key source against a local stand-in for Secrets Manager.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signRequest } from '../../functions/aws/signer';
import { providerApiKeyFromEnv } from '../../functions/provider/api-key-source';
import { createHttpProvider } from '../../functions/provider/http-provider';
import {
  type GenerationProvider,
  ProviderRejectedError,
  type ProviderTaskStatus,
  ProviderUnavailableError,
} from '../../functions/provider/port';
import { type MockFault, type MockProvider, startMockProvider } from '../../local/mock-provider';

const KEY = 'test-provider-key';
let mock: MockProvider;
let provider: GenerationProvider;
/**
 * The adapter's deadline where nothing hangs: generous, so that a loaded machine's slow answer is
 * never mistaken for the `timeout` fault (which is then counted as one call, not retried).
 */
const ANSWER_TIMEOUT_MS = 10_000;
/** The deadline where the mock hangs (the `timeout` fault): short, since the product times out here. */
const HANG_TIMEOUT_MS = 300;
/** An adapter for checking `fault`: the short deadline only where the fault is the hang. */
const adapterFor = (fault: MockFault) =>
  createHttpProvider({
    baseUrl: mock.url,
    apiKey: async () => KEY,
    timeoutMs: fault === 'timeout' || fault === 'answer_hangs' ? HANG_TIMEOUT_MS : ANSWER_TIMEOUT_MS,
  });

beforeAll(async () => {
  mock = await startMockProvider({ apiKey: KEY });
  provider = createHttpProvider({ baseUrl: mock.url, apiKey: async () => KEY, timeoutMs: ANSWER_TIMEOUT_MS });
});

afterAll(async () => {
  await mock.stop();
});

afterEach(() => {
  mock.clearFaults();
  mock.stats.reset();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until the task leaves the non-terminal states, returning every status seen. */
async function pollToEnd(id: string): Promise<ProviderTaskStatus[]> {
  const seen: ProviderTaskStatus[] = [];
  for (let i = 0; i < 100; i++) {
    const status = await provider.getTask(id);
    seen.push(status);
    if (status.state === 'success' || status.state === 'fail') return seen;
    await sleep(50);
  }
  throw new Error(`task ${id} did not finish`);
}

function isOrderedSubsequence(states: string[], order: string[]): boolean {
  let at = 0;
  for (const state of states) {
    const index = order.indexOf(state, at);
    if (index < 0) return false;
    at = index;
  }
  return true;
}

describe('createTask and getTask against the mock provider', () => {
  it('takes an image task from creation to success with one URL per requested image', async () => {
    // Prepare
    const request = { model: 'image-model-1', input: { prompt: 'a cat', num_images: 2, mockDelayMs: 300 } };

    // Act
    const { providerTaskId } = await provider.createTask(request);
    const seen = await pollToEnd(providerTaskId);

    // Assert
    const last = seen.at(-1);
    expect(last?.state).toBe('success');
    expect(last?.resultUrls).toHaveLength(2);
    expect(
      isOrderedSubsequence(
        seen.map((s) => s.state),
        ['waiting', 'generating', 'success'],
      ),
    ).toBe(true);
    const file = await fetch(last?.resultUrls[1] ?? '');
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  });

  it('takes a video task to success with one MP4 URL', async () => {
    // Prepare
    const request = { model: 'video-d3_fast', input: { prompt: 'waves', mockDelayMs: 0 } };

    // Act
    const { providerTaskId } = await provider.createTask(request);
    const status = await provider.getTask(providerTaskId);

    // Assert
    expect(status.state).toBe('success');
    expect(status.resultUrls).toHaveLength(1);
    const file = await fetch(status.resultUrls[0] ?? '');
    expect(file.headers.get('content-type')).toBe('video/mp4');
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.subarray(4, 8).toString('ascii')).toBe('ftyp');
  });

  it('reports a failed task with the provider code and message', async () => {
    // Prepare
    const request = { model: 'image-model-2', input: { mockOutcome: 'fail', mockDelayMs: 0, mockFailMsg: 'nsfw' } };

    // Act
    const { providerTaskId } = await provider.createTask(request);
    const status = await provider.getTask(providerTaskId);

    // Assert
    expect(status).toEqual({ state: 'fail', resultUrls: [], failCode: 'MOCK_FAILURE', failMessage: 'nsfw' });
  });

  it('turns a refused input into ProviderRejectedError with the provider code and message', async () => {
    // Prepare
    const request = { model: 'image-model-1', input: { mockOutcome: 'reject' } };

    // Act
    const result = provider.createTask(request);

    // Assert
    await expect(result).rejects.toBeInstanceOf(ProviderRejectedError);
    await expect(result).rejects.toMatchObject({ providerCode: '422', message: expect.stringContaining('refused') });
  });

  it('sends the callback URL when given and still answers with a task id', async () => {
    // Prepare
    const request = { model: 'image-model-1', input: {}, callBackUrl: 'https://example.test/callback' };

    // Act
    const { providerTaskId } = await provider.createTask(request);

    // Assert
    expect(providerTaskId).toMatch(/^mock_/);
    expect(mock.stats.createTaskCalls).toBe(1);
  });

  it('treats a state outside the protocol as unavailable', async () => {
    // Prepare
    const { providerTaskId } = await provider.createTask({
      model: 'image-model-1',
      input: { mockOutcome: 'unknown_state', mockDelayMs: 0 },
    });

    // Act
    const result = provider.getTask(providerTaskId);

    // Assert
    await expect(result).rejects.toBeInstanceOf(ProviderUnavailableError);
    await expect(result).rejects.toThrow(/unknown state/);
  });

  it('treats an unknown provider task id as unavailable', async () => {
    // Prepare
    const id = 'mock_does_not_exist';

    // Act
    const result = provider.getTask(id);

    // Assert
    await expect(result).rejects.toBeInstanceOf(ProviderUnavailableError);
  });
});

describe('createTask under server faults (never retried)', () => {
  const faults: MockFault[] = [
    'http_500',
    'http_429',
    'http_401',
    'malformed_json',
    'connection_reset',
    'missing_fields',
    'timeout',
  ];

  it.each(faults)('%s -> ProviderUnavailableError after exactly one call', async (fault) => {
    // Prepare
    mock.setFaults({ createFault: fault });
    const quick = adapterFor(fault);

    // Act
    const result = quick.createTask({ model: 'image-model-1', input: {} });

    // Assert
    await expect(result).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(mock.stats.createTaskCalls).toBe(1);
  });

  it.each<[MockFault, boolean]>([
    ['answer_lost', true],
    ['answer_hangs', true],
    ['timeout', true],
    ['connection_reset', true],
    ['http_500', false],
    ['http_429', false],
    // A success status that names no task does not say the upstream did not create it.
    ['missing_fields', true],
    ['malformed_json', true],
  ])('%s: whether the create may have happened upstream (outcomeUnknown) is %s', async (fault, unknown) => {
    // Prepare
    mock.setFaults({ createFault: fault });
    const created = mock.stats.tasksCreated;

    // Act
    const error = await adapterFor(fault)
      .createTask({ model: 'image-model-1', input: {} })
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );

    // Assert: an unanswered create is flagged; the answer faults did create the task upstream
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as ProviderUnavailableError).outcomeUnknown === true).toBe(unknown);
    expect(mock.stats.tasksCreated - created).toBe(fault.startsWith('answer_') ? 1 : 0);
  });

  it('a connection refused is a create never sent: not flagged outcomeUnknown', async () => {
    // Prepare: a port nothing listens on
    const closed = createServer();
    await new Promise<void>((ready) => closed.listen(0, '127.0.0.1', () => ready()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((done) => closed.close(() => done()));
    const adapter = createHttpProvider({ baseUrl: `http://127.0.0.1:${port}`, apiKey: async () => KEY });

    // Act
    const error = await adapter.createTask({ model: 'image-model-1', input: {} }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );

    // Assert
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as ProviderUnavailableError).outcomeUnknown).toBeUndefined();
  });

  it('reports a timeout as such', async () => {
    // Prepare
    mock.setFaults({ createFault: 'timeout' });
    const quick = createHttpProvider({ baseUrl: mock.url, apiKey: async () => KEY, timeoutMs: 200 });

    // Act
    const result = quick.createTask({ model: 'image-model-1', input: {} });

    // Assert
    await expect(result).rejects.toThrow('createTask: no answer within 200 ms');
  });

  it('is unreachable when nothing listens', async () => {
    // Prepare
    const idle = await startMockProvider();
    const url = idle.url;
    await idle.stop();
    const orphan = createHttpProvider({ baseUrl: url, apiKey: async () => KEY, timeoutMs: ANSWER_TIMEOUT_MS });

    // Act
    const result = orphan.createTask({ model: 'image-model-1', input: {} });

    // Assert
    await expect(result).rejects.toThrow(/^createTask: connection failed$/);
  });
});

describe("createTask refused for capacity: the refusal's status and Retry-After, whatever its body", () => {
  /** What the adapter threw. */
  async function thrown(result: Promise<unknown>): Promise<ProviderUnavailableError> {
    const error = await result.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    return error as ProviderUnavailableError;
  }

  it.each<[MockFault, 429 | 503]>([
    ['http_503', 503],
    ['maintenance_html', 503],
    ['http_429', 429],
  ])('%s with Retry-After: 3600 -> a refusal (%d) asking 3600 s, unbounded here', async (fault, status) => {
    // Prepare
    mock.setFaults({ createFault: fault, faultRetryAfter: '3600' });

    // Act
    const error = await thrown(provider.createTask({ model: 'image-model-1', input: {} }));

    // Assert
    expect(error.throttled).toEqual({ status, retryAfterSeconds: 3600 });
    expect(error.message).toBe(`createTask: provider answered HTTP ${status}`);
    expect(mock.stats.createTaskCalls).toBe(1);
  });

  it('reads an HTTP date as the seconds until it', async () => {
    // Prepare: a date two minutes ahead (HTTP dates have whole seconds)
    mock.setFaults({ createFault: 'http_503', faultRetryAfter: new Date(Date.now() + 120_000).toUTCString() });

    // Act
    const error = await thrown(provider.createTask({ model: 'image-model-1', input: {} }));

    // Assert
    expect(error.throttled?.retryAfterSeconds).toBeGreaterThanOrEqual(100);
    expect(error.throttled?.retryAfterSeconds).toBeLessThanOrEqual(120);
  });

  it("refuses only the named model's creates, switched through POST /__control", async () => {
    // Prepare
    const control = await fetch(`${mock.url}/__control`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ createFault: 'maintenance_html', createFaultModel: 'model-a' }),
    });

    // Act
    const refused = thrown(provider.createTask({ model: 'model-a', input: {} }));
    const other = await provider.createTask({ model: 'model-b', input: { mockDelayMs: 0 } });

    // Assert
    expect(control.status).toBe(200);
    expect((await refused).throttled).toEqual({ status: 503 });
    expect(other.providerTaskId).toMatch(/^mock_/);
  });
});

describe('getTask under server faults', () => {
  let taskId: string;

  beforeEach(async () => {
    ({ providerTaskId: taskId } = await provider.createTask({ model: 'image-model-1', input: { mockDelayMs: 0 } }));
  });

  it.each<[MockFault, number]>([
    ['http_500', 2],
    ['connection_reset', 2],
    ['http_429', 1],
    ['http_401', 1],
    ['malformed_json', 1],
    ['missing_fields', 1],
    ['timeout', 1],
  ])('persistent %s -> ProviderUnavailableError after %i call(s)', async (fault, calls) => {
    // Prepare
    mock.setFaults({ getFault: fault });
    const quick = adapterFor(fault);

    // Act
    const result = quick.getTask(taskId);

    // Assert
    await expect(result).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(mock.stats.getTaskCalls(taskId)).toBe(calls);
  });

  it.each<MockFault>(['http_500', 'connection_reset'])('one %s is absorbed by the single retry', async (fault) => {
    // Prepare
    mock.setFaults({ getFault: fault, getFaultTimes: 1 });

    // Act
    const status = await provider.getTask(taskId);

    // Assert
    expect(status.state).toBe('success');
    expect(mock.stats.getTaskCalls(taskId)).toBe(2);
  });

  it('accepts faults through POST /__control as well', async () => {
    // Prepare
    const control = await fetch(`${mock.url}/__control`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ getFault: 'malformed_json' }),
    });

    // Act
    const result = provider.getTask(taskId);

    // Assert
    expect(control.status).toBe(200);
    await expect(result).rejects.toThrow('getTask: response is not a JSON object');
  });
});

describe('the provider key', () => {
  it('is required by the mock: a wrong key makes the provider unavailable, not a rejection', async () => {
    // Prepare
    const wrong = createHttpProvider({ baseUrl: mock.url, apiKey: async () => 'not-the-key' });

    // Act
    const result = wrong.createTask({ model: 'image-model-1', input: {} });

    // Assert
    await expect(result).rejects.toThrow(/^createTask: provider answered HTTP 401$/);
  });

  it('maps a failing key source to ProviderUnavailableError without calling the provider', async () => {
    // Prepare
    const failing = createHttpProvider({
      baseUrl: mock.url,
      apiKey: async () => {
        throw new Error('secret read failed');
      },
    });

    // Act
    const result = failing.getTask('anything');

    // Assert
    await expect(result).rejects.toThrow(/^Provider key unavailable$/);
    expect(mock.stats.totalGetTaskCalls).toBe(0);
  });
});

describe('providerApiKeyFromEnv', () => {
  it('uses PROVIDER_API_KEY when set', async () => {
    // Prepare
    const source = providerApiKeyFromEnv({ PROVIDER_API_KEY: 'local-key', PROVIDER_SECRET_ARN: 'arn:ignored' });

    // Act
    const key = await source();

    // Assert
    expect(key).toBe('local-key');
  });

  it('refuses to start without any key configuration', () => {
    // Prepare
    const env = {};

    // Act
    const act = () => providerApiKeyFromEnv(env);

    // Assert
    expect(act).toThrow('set PROVIDER_API_KEY or PROVIDER_SECRET_ARN');
  });

  describe('from Secrets Manager (a local stand-in)', () => {
    let server: Server;
    let endpoint: string;
    let requests: { headers: IncomingMessage['headers']; body: string; url: string | undefined }[];
    let answer: { status: number; body: unknown };

    beforeAll(async () => {
      server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), url: req.url });
          res.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.1' });
          res.end(JSON.stringify(answer.body));
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    beforeEach(() => {
      requests = [];
      answer = { status: 200, body: { SecretString: '{"apiKey":"from-the-secret"}' } };
    });

    const env = () => ({
      PROVIDER_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:provider-AbCdEf',
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'session-token',
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
    });

    it('sends a signed GetSecretValue and reads the apiKey field', async () => {
      // Prepare
      const source = providerApiKeyFromEnv(env());

      // Act
      const key = await source();

      // Assert
      expect(key).toBe('from-the-secret');
      expect(requests).toHaveLength(1);
      const [request] = requests;
      expect(request?.url).toBe('/');
      expect(request?.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
      expect(request?.headers['content-type']).toBe('application/x-amz-json-1.1');
      expect(request?.headers['x-amz-security-token']).toBe('session-token');
      expect(request?.headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/secretsmanager\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, Signature=[0-9a-f]{64}$/,
      );
      expect(JSON.parse(request?.body ?? '')).toEqual({ SecretId: env().PROVIDER_SECRET_ARN });
      // What arrived (host included) must be what was signed: recompute from the received request.
      const amzDate = String(request?.headers['x-amz-date']);
      const date = new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
      const expected = await signRequest({
        method: 'POST',
        url: `http://${request?.headers.host}/`,
        headers: {
          'content-type': String(request?.headers['content-type']),
          'x-amz-target': String(request?.headers['x-amz-target']),
        },
        body: request?.body ?? '',
        service: 'secretsmanager',
        region: 'eu-west-1',
        credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'session-token' },
        date,
      });
      expect(request?.headers.authorization).toBe(expected.authorization);
    });

    it('caches the key for five minutes, then reads it again', async () => {
      // Prepare
      let now = 1_000_000;
      const source = providerApiKeyFromEnv(env(), { now: () => now });

      // Act
      await Promise.all([source(), source()]);
      now += 5 * 60 * 1000 - 1;
      await source();
      const readsWithinTtl = requests.length;
      now += 2;
      await source();

      // Assert
      expect(readsWithinTtl).toBe(1);
      expect(requests).toHaveLength(2);
    });

    it('accepts a plain-string secret', async () => {
      // Prepare
      answer = { status: 200, body: { SecretString: 'plain-key\n' } };
      const source = providerApiKeyFromEnv(env());

      // Act
      const key = await source();

      // Assert
      expect(key).toBe('plain-key');
    });

    it('fails with the AWS error type, and does not cache the failure', async () => {
      // Prepare
      answer = { status: 400, body: { __type: 'ResourceNotFoundException', message: 'no such secret' } };
      const source = providerApiKeyFromEnv(env());

      // Act
      const first = source();
      await expect(first).rejects.toThrow('HTTP 400 ResourceNotFoundException');
      answer = { status: 200, body: { SecretString: 'now-there' } };
      const second = await source();

      // Assert
      expect(second).toBe('now-there');
      expect(requests).toHaveLength(2);
    });
  });
});
