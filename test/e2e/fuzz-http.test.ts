/**
 * Fuzzing the HTTP surface (fast-check), black box: generated bodies, headers, paths and methods on
 * the three routes and on unknown ones. Properties: never a 5xx, never a hung request, every error body
 * is JSON with a string `error` and the documented shape for its status (docs/api/errors.md), and
 * no credit moves on a rejected request (the dedicated fuzz user's balance, read from a 402, equals its
 * start balance minus what the accepted and not refunded tasks cost).
 *
 * Requests go through node:http, not fetch, so that paths reach the server as generated (`..`, broken
 * percent-encoding) and headers can be repeated or cased oddly. The seed is fixed so a run is
 * reproducible; FUZZ_SEED=<n> explores another part of the space.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import fc from 'fast-check';
import { createApi, IMAGE_PATH, REFERENCE_IMAGE, VIDEO_PATH } from './support/api';
import { checkAgainstContract } from './support/contract';
import { loadTarget } from './support/target';

jest.setTimeout(240_000);

const target = loadTarget();
const api = createApi(target);
/** The dedicated user where the target has one; elsewhere the main user (credits then unchecked). */
const FUZZ_KEY = target.keys.fuzz?.apiKey ?? target.key('main').apiKey;
/**
 * Generated headers name the key by these placeholders, filled in only when a request is sent, so that
 * no counterexample or failure message ever shows the key itself.
 */
const KEY = '<key>';
const KEY_UPPER = '<key-upper>';
const KEY_TRUNCATED = '<key-truncated>';
const KEY_BASIC = '<key-basic>';
const KEY_VALUES: Record<string, string> = {
  [KEY]: FUZZ_KEY,
  [KEY_UPPER]: FUZZ_KEY.toUpperCase(),
  [KEY_TRUNCATED]: FUZZ_KEY.slice(0, -1),
  [KEY_BASIC]: Buffer.from(`user:${FUZZ_KEY}`).toString('base64'),
};
const withKey = (value: string): string => value.replace(/<key(-[a-z]+)?>/g, (token) => KEY_VALUES[token] ?? token);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_108);
/** A request that takes longer than this counts as hung (the gateway's own limit is 29 s). */
const REQUEST_TIMEOUT_MS = 30_000;
const MAX_BODY_BYTES = 10 * 1024 * 1024;
const TASK_ROUTE = '/api/ai/tasks/';

/** The most expensive request in the catalog (320 credits): its 402 answer tells a user's balance. */
const PROBE = { model: 'video-a/v2-1-master-text-to-video', prompt: 'probe', inputMode: 'text_to_video', duration: 10 };

// ---------------------------------------------------------------------------------------------------
// A raw HTTP client
// ---------------------------------------------------------------------------------------------------

interface RawRequest {
  method: string;
  /** Sent exactly as given, after the base URL's own path (a stage prefix on AWS). */
  path: string;
  /** Name/value pairs in order; repeats and odd casing are kept. */
  headers: [string, string][];
  body?: Buffer;
}

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Parsed JSON, or undefined when the body is empty or not JSON. */
  body: unknown;
}

const base = new URL(target.baseUrl);
const basePath = base.pathname.replace(/\/+$/, '');

/** Sends one request on a fresh connection; rejects (the property fails) when it hangs. */
function send(req: RawRequest): Promise<RawAnswer> {
  const body = req.body ?? Buffer.alloc(0);
  const flat: string[] = ['Host', base.host];
  for (const [name, value] of req.headers) flat.push(name, withKey(value));
  if (body.length > 0 || req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH') {
    flat.push('Content-Length', String(body.length));
  }
  const requestFn = base.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolveAnswer, reject) => {
    const outgoing = requestFn(
      {
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port || undefined,
        method: req.method,
        path: `${basePath}${req.path}`,
        headers: flat,
        agent: false,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text === '' ? undefined : (JSON.parse(text) as unknown);
          } catch {
            parsed = undefined;
          }
          resolveAnswer({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
        });
      },
    );
    outgoing.on('error', (error) =>
      reject(new Error(`${req.method} ${req.path.slice(0, 200)} failed: ${error.message}`, { cause: error })),
    );
    outgoing.end(body);
  });
}

// ---------------------------------------------------------------------------------------------------
// What every answer must look like
// ---------------------------------------------------------------------------------------------------

/** Tasks the fuzzer got accepted (202), by id: their cost counts unless they end refunded. */
const accepted = new Map<string, number>();
let answers = 0;
const statusesSeen = new Map<number, number>();

/** Statuses whose body the gateway itself makes (absent on targets that drop gateway bodies). */
const GATEWAY_STATUSES = new Set([401, 403, 404, 413]);

const ERROR_BODIES: Record<number, (body: Record<string, unknown>) => void> = {
  400: (body) => {
    expect(Object.keys(body).sort()).toEqual(['details', 'error']);
    expect(body.error).toBe('Invalid request');
    const details = body.details as Record<string, unknown>;
    expect(Object.keys(details).sort()).toEqual(['fieldErrors', 'formErrors']);
    const { fieldErrors, formErrors } = details as { fieldErrors: unknown; formErrors: unknown };
    expect(Array.isArray(formErrors) && formErrors.every((m) => typeof m === 'string')).toBe(true);
    expect(typeof fieldErrors === 'object' && fieldErrors !== null && !Array.isArray(fieldErrors)).toBe(true);
    for (const messages of Object.values(fieldErrors as Record<string, unknown>)) {
      expect(Array.isArray(messages) && messages.length > 0 && messages.every((m) => typeof m === 'string')).toBe(true);
    }
    expect(Object.keys(fieldErrors as object).length + (formErrors as string[]).length).toBeGreaterThan(0);
  },
  401: (body) => expect(body).toEqual({ error: 'Unauthorized' }),
  402: (body) => {
    expect(body).toEqual({ error: 'Insufficient credits', required: expect.any(Number), balance: expect.any(Number) });
    expect(body.required as number).toBeGreaterThan(body.balance as number);
    expect(body.balance as number).toBeGreaterThanOrEqual(0);
  },
  403: (body) => expect(body).toEqual({ error: 'Forbidden' }),
  404: (body) => expect([{ error: 'Task not found' }, { error: 'Not found' }]).toContainEqual(body),
  409: (body) => expect(body).toEqual({ error: 'Idempotency key reused with a different request' }),
  413: (body) => expect(body).toEqual({ error: 'Payload too large' }),
  415: (body) => expect(body).toEqual({ error: 'Unsupported Media Type' }),
};

function describeRequest(req: RawRequest): string {
  // Placeholders only; anything shaped like a key is masked as well.
  const headers = req.headers
    .map(([n, v]) => `${n}: ${v.length > 80 ? `${v.slice(0, 80)}...` : v}`)
    .join(' | ')
    .replace(/gsk_[a-z]+_[A-Za-z0-9_-]+/g, 'gsk_<masked>');
  const body = req.body ? req.body.subarray(0, 200).toString('utf8') : '';
  return `${req.method} ${req.path.slice(0, 300)} [${headers}] ${body}${(req.body?.length ?? 0) > 200 ? '...' : ''}`;
}

/** Sends the request and checks the answer against the documented shapes. */
async function sendAndCheck(req: RawRequest): Promise<RawAnswer> {
  const answer = await send(req);
  answers++;
  statusesSeen.set(answer.status, (statusesSeen.get(answer.status) ?? 0) + 1);
  const where = `${describeRequest(req)}\n-> ${answer.status} ${answer.text.slice(0, 300)}`;
  if (answer.status >= 500) throw new Error(`5xx answer to ${where}`);
  checkAgainstContract(req.method, req.path, answer.status, answer.headers['content-type'] ?? '', answer.body);

  if (answer.status === 202) {
    // Only a submit with a valid body and key is accepted; it carries the submission response.
    const submitted = answer.body as { taskId?: unknown; status?: unknown; creditsUsed?: unknown };
    if (
      req.method !== 'POST' ||
      typeof submitted?.taskId !== 'string' ||
      ![0, 2].includes(submitted.status as number) ||
      typeof submitted.creditsUsed !== 'number' ||
      submitted.creditsUsed <= 0
    ) {
      throw new Error(`Unexpected 202 answer to ${where}`);
    }
    accepted.set(submitted.taskId, submitted.creditsUsed);
    return answer;
  }
  if (answer.status === 200) {
    const task = answer.body as { taskId?: unknown; status?: unknown };
    if (req.method !== 'GET' || typeof task?.taskId !== 'string' || ![0, 1, 2].includes(task.status as number)) {
      throw new Error(`Unexpected 200 answer to ${where}`);
    }
    return answer;
  }
  const check = ERROR_BODIES[answer.status];
  if (!check) throw new Error(`Undocumented status answering ${where}`);
  // HEAD answers carry no body; some targets drop the bodies of the gateway's own answers.
  if (req.method === 'HEAD') return answer;
  if (GATEWAY_STATUSES.has(answer.status) && !target.can('gatewayBodies')) return answer;
  try {
    expect(answer.headers['content-type'] ?? '').toMatch(/^application\/json/i);
    expect(typeof answer.body === 'object' && answer.body !== null && !Array.isArray(answer.body)).toBe(true);
    expect(typeof (answer.body as { error?: unknown }).error).toBe('string');
    check(answer.body as Record<string, unknown>);
  } catch (error) {
    throw new Error(`Error body of the wrong shape answering ${where}\n${(error as Error).message}`);
  }
  return answer;
}

// ---------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value) ?? 'null', 'utf8');
const jsonHeaders = (): [string, string][] => [
  ['Authorization', `Bearer ${KEY}`],
  ['Content-Type', 'application/json'],
];

/** Valid requests; tasks get a short mock delay so the accepted ones end quickly. */
const VALID_IMAGE: Record<string, unknown>[] = [
  { model: 'image-model-1', prompt: 'a lighthouse', providerInput: { mockDelayMs: 0 } },
  { model: 'image-model-2', prompt: 'a fox', width: 2048, height: 1024, numOutputs: 2, seed: '42' },
  { model: 'image-model-3', prompt: 'a city', aspectRatio: '16:9', providerInput: { resolution: '2K' } },
  { model: 'image-model-4', prompt: 'a boat', inputImageUrls: [REFERENCE_IMAGE], guidanceScale: 7.5 },
];
const VALID_VIDEO: Record<string, unknown>[] = [
  { model: 'video-b-2-text-to-video', prompt: 'waves', inputMode: 'text_to_video', providerInput: { mockDelayMs: 0 } },
  { model: 'video-d3', prompt: 'rain', inputMode: 'image_to_video', inputImageUrls: [REFERENCE_IMAGE], duration: 8 },
  { model: 'video-a/v2-1-standard', prompt: 'a cat', inputMode: 'image_to_video', inputImageUrls: [REFERENCE_IMAGE] },
];

const FIELDS = [
  'prompt',
  'model',
  'negativePrompt',
  'width',
  'height',
  'aspectRatio',
  'numOutputs',
  'seed',
  'guidanceScale',
  'numInferenceSteps',
  'inputImageUrls',
  'providerInput',
  'inputMode',
  'duration',
  'fps',
  'motionStrength',
  'cameraMotion',
  '__proto__',
  'constructor',
  '',
];

const unicodeText = fc.string({ unit: 'binary', maxLength: 40 });
const weirdStrings = fc.oneof(
  fc.constantFrom('', ' ', '\u0000', '\ud800', '\udfff x', '\u202e', '🙂'.repeat(5001), 'a'.repeat(20_001), '%s%n'),
  unicodeText,
  fc.string({ unit: 'grapheme', maxLength: 30 }),
);
const weirdNumbers = fc.oneof(
  fc.constantFrom(0, -1, 1, 63, 64, 4096, 4097, 1.5, 1e308, -1e308, 5e-324, 2 ** 53, 60, 61, 150, 151, 100, 100.01),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);
/** Deeply nested arrays/objects, built as text so any depth is cheap. */
const deepNesting = fc.record({ depth: fc.integer({ min: 10, max: 200_000 }), open: fc.constantFrom('[', '{"a":') });

/** A value for a mutated field: wrong types, boundaries, odd text, nested junk, provider controls. */
const mutatedValue: fc.Arbitrary<unknown> = fc.oneof(
  weirdStrings,
  weirdNumbers,
  fc.constantFrom(null, true, false, [], {}, [REFERENCE_IMAGE], Array(15).fill(REFERENCE_IMAGE), ['ftp://x', 'x']),
  fc.jsonValue({ maxDepth: 3 }),
  fc.record({
    mockOutcome: fc.constantFrom('success', 'fail', 'reject', 'broken_result', 'unknown_state', 'nonsense'),
    mockDelayMs: fc.integer({ min: 0, max: 500 }),
  }),
  fc.constantFrom('1K', '2K', '4K', 'auto', '1:1', '21:9', 'text_to_video', 'image_to_video', 'image-model-3'),
);

type Mutation = { kind: 'set'; field: string; value: unknown } | { kind: 'delete'; field: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('set' as const), field: fc.constantFrom(...FIELDS), value: mutatedValue }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), field: fc.constantFrom(...FIELDS) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('set' as const),
      field: fc.string({ maxLength: 12 }),
      value: mutatedValue,
    }),
  },
);

function applyMutation(request: Record<string, unknown>, change: Mutation): Record<string, unknown> {
  // A copy with defineProperty, so `__proto__` becomes an own field as a JSON body would have it.
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(request)) {
    Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  }
  if (change.kind === 'delete') delete copy[change.field];
  else
    Object.defineProperty(copy, change.field, {
      value: change.value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return copy;
}

const IMAGE_ROUTE = { path: IMAGE_PATH, valid: VALID_IMAGE };
const VIDEO_ROUTE = { path: VIDEO_PATH, valid: VALID_VIDEO };
const submitRoute = fc.constantFrom(IMAGE_ROUTE, VIDEO_ROUTE);

/** Header values Node will send (no CR/LF/controls, at most U+00FF). */
const headerText = fc.string({
  unit: fc
    .integer({ min: 0x20, max: 0xff })
    .filter((c) => c !== 0x7f)
    .map((c) => String.fromCharCode(c)),
  maxLength: 60,
});

const randomCase = (text: string) =>
  fc
    .array(fc.boolean(), { minLength: text.length, maxLength: text.length })
    .map((flags) => [...text].map((ch, i) => (flags[i] ? ch.toUpperCase() : ch.toLowerCase())).join(''));

const contentType = fc.oneof(
  fc
    .constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'application/json ; q=1',
      'application/vnd.api+json',
      'application/problem+json; x="y"',
      'application/jsonx',
      'application/json5',
      'text/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=xyz',
      '*/*',
      '',
      ' ',
      'application/',
      ';',
    )
    .chain(randomCase),
  headerText,
);

const authorization = fc.oneof(
  { weight: 3, arbitrary: fc.constant(`Bearer ${KEY}`) },
  fc.constantFrom(
    `Bearer ${KEY}`,
    `bearer ${KEY}`,
    `BEARER ${KEY}`,
    `Bearer  ${KEY}`,
    `Bearer ${KEY} `,
    `Bearer ${KEY}x`,
    `Bearer ${KEY_TRUNCATED}`,
    `Bearer ${KEY_UPPER}`,
    `Bearer ${KEY},Bearer ${KEY}`,
    KEY,
    `Basic ${KEY_BASIC}`,
    'Bearer',
    'Bearer ',
    '',
    'gsk_live_',
    `Bearer gsk_live_${'A'.repeat(43)}`,
    `Bearer gsk_test_${'A'.repeat(43)}`,
    `Bearer ${'x'.repeat(8000)}`,
  ),
  headerText,
  headerText.map((text) => `Bearer ${text}`),
);

/** 0 to 2 Authorization headers, names in any case: repeats must never authenticate as someone else. */
const authorizationHeaders: fc.Arbitrary<[string, string][]> = fc.oneof(
  { weight: 1, arbitrary: fc.constant<[string, string][]>([]) },
  {
    weight: 6,
    arbitrary: fc.array(fc.tuple(randomCase('authorization'), authorization), { minLength: 1, maxLength: 1 }),
  },
  {
    weight: 2,
    arbitrary: fc.array(fc.tuple(randomCase('authorization'), authorization), { minLength: 2, maxLength: 2 }),
  },
);

const idempotencyKey = fc.option(
  fc.oneof(
    fc.uuid(),
    fc.constantFrom('', ' ', 'a b', 'k'.repeat(255), 'k'.repeat(256), '\u00e9t\u00e9', 'x\ty'),
    headerText,
  ),
  { nil: undefined },
);

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PURGE', 'PROPFIND'] as const;

/** Percent-encoded, dotted, long, and plain-random path pieces. */
const pathSegment = fc.oneof(
  fc.webSegment(),
  fc.constantFrom(
    '..',
    '.',
    '',
    '%2e%2e',
    '%2F',
    '%00',
    '%',
    '%G1',
    '%E0%A4%A',
    '%ED%A0%80',
    '%C0%AF',
    '%F0%9F%99%82',
    '%20',
    '~',
    'a:b',
    '*',
    '{id}',
    'tasks',
    'generate',
  ),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map((text) => encodeURIComponent(text)),
  fc.integer({ min: 200, max: 6000 }).map((length) => 'i'.repeat(length)),
);

const rawPath = fc.oneof(
  // Around the real routes.
  fc
    .tuple(
      fc.constantFrom(IMAGE_PATH, VIDEO_PATH, '/api/ai/tasks', '/api/ai', '/api', ''),
      fc.array(pathSegment, { maxLength: 3 }),
    )
    .map(([prefix, segments]) => [prefix, ...segments].join('/') || '/'),
  // A task id of any shape.
  pathSegment.map((segment) => `${TASK_ROUTE}${segment}`),
  // Anything.
  fc.array(pathSegment, { minLength: 1, maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
  // Query strings and fragments-in-path on real routes.
  fc
    .tuple(
      fc.constantFrom(IMAGE_PATH, VIDEO_PATH, `${TASK_ROUTE}x`),
      fc.constantFrom('?', '?a=1&a=2', '?%zz', '#x', `?x=${'q'.repeat(3000)}`),
    )
    .map(([path, query]) => `${path}${query}`),
);

// ---------------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------------

/** A user's balance, read from the 402 answer to a request that costs more than it has. */
async function balanceOf(apiKey: string): Promise<number> {
  const response = await api.request(VIDEO_PATH, { apiKey, json: PROBE });
  if (response.status !== 402) {
    throw new Error(`The balance probe answered ${response.status}: ${response.text}`);
  }
  return (response.body as { balance: number }).balance;
}

/**
 * Runs a property with the fixed seed; `examples` (inputs that once broke the service) run first on
 * every seed. Shrinking a failure is bounded in time.
 */
function run<Ts extends [unknown, ...unknown[]]>(
  property: fc.IAsyncProperty<Ts>,
  numRuns: number,
  examples: Ts[] = [],
): Promise<void> {
  return fc.assert(property, { numRuns, seed: SEED, examples, interruptAfterTimeLimit: 90_000 });
}

describe('HTTP fuzzing: never a 5xx, every error body documented', () => {
  let startBalance: number | undefined;

  beforeAll(async () => {
    if (target.runs('fuzzCredits')) startBalance = await balanceOf(FUZZ_KEY);
  });

  it('arbitrary JSON values and arbitrary text as the body of both submit routes', async () => {
    // Prepare
    const body = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }).map(json),
      fc.string({ unit: 'binary', maxLength: 200 }).map((text) => Buffer.from(text, 'utf8')),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      deepNesting.map(({ depth, open }) =>
        Buffer.from(`${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)}`),
      ),
    );

    // Act + Assert
    await run(
      fc.asyncProperty(submitRoute, body, async (route, payload) => {
        const answer = await sendAndCheck({ method: 'POST', path: route.path, headers: jsonHeaders(), body: payload });
        expect(answer.status).toBe(400);
      }),
      40,
    );
  });

  it('valid requests with one field mutated (wrong types, boundaries, unicode, nesting, provider controls)', async () => {
    // Prepare
    const scenario = submitRoute.chain((route) =>
      fc.record({
        path: fc.constant(route.path),
        request: fc.constantFrom(...route.valid),
        change: mutation,
        idempotency: idempotencyKey,
      }),
    );

    // Act + Assert
    await run(
      fc.asyncProperty(scenario, async ({ path, request, change, idempotency }) => {
        const headers = jsonHeaders();
        if (idempotency !== undefined) headers.push(['Idempotency-Key', idempotency]);
        await sendAndCheck({ method: 'POST', path, headers, body: json(applyMutation(request, change)) });
      }),
      90,
    );
  });

  it('providerInput that buys more than was priced, numbers DynamoDB cannot store, empty keys: 400', async () => {
    // Prepare: bodies built as text, so numbers JSON.stringify cannot write (1e400, 40 digits) are sent as is.
    const rawNumber = fc.constantFrom(
      '1e300',
      '-1e300',
      '1e-200',
      '1e400',
      '-1e400',
      '123456789012345678901234567890123456789012',
      '12345678901234567890',
      '9007199254740993',
    );
    const billedKey = fc.constantFrom(
      'num_images',
      'numOutputs',
      'n',
      'NUM-OUTPUTS',
      'width',
      'size',
      'duration',
      'seconds',
    );
    const where = fc.constantFrom('top', 'providerInput', 'nested');
    const placed = (text: string, at: string) =>
      at === 'top'
        ? `"guidanceScale":${text}`
        : at === 'providerInput'
          ? `"providerInput":{${text}}`
          : `"providerInput":{"p":[{${text}}]}`;
    const hostile = fc.oneof(
      fc.tuple(rawNumber, where).map(([n, at]) => placed(at === 'top' ? n : `"x":${n}`, at)),
      fc
        .tuple(billedKey, fc.integer({ min: 2, max: 100 }), fc.constantFrom('providerInput', 'nested'))
        .map(([key, n, at]) => placed(`"${key}":${n}`, at)),
      fc.constantFrom('providerInput', 'nested').map((at) => placed('"":1', at)),
      fc
        .constantFrom('"4K "', '"1080"', '"8K"', '4', '"hd"')
        .map((token) => placed(`"resolution":${token}`, 'providerInput')),
    );
    const send = async (route: { path: string }, fields: string) => {
      const model =
        route.path === IMAGE_PATH
          ? '"model":"image-model-2"'
          : '"model":"video-b-2-text-to-video","inputMode":"text_to_video"';
      const body = Buffer.from(`{${model},"prompt":"x",${fields}}`, 'utf8');
      return sendAndCheck({ method: 'POST', path: route.path, headers: jsonHeaders(), body });
    };
    const image = IMAGE_ROUTE;
    const video = VIDEO_ROUTE;

    // Act + Assert
    await run(
      fc.asyncProperty(submitRoute, hostile, async (route, fields) => {
        const answer = await send(route, fields);
        expect(answer.status).toBe(400);
      }),
      40,
      [
        // The shapes that once were 500s, or bought more than they paid for.
        [image, '"providerInput":{"num_images":10}'],
        [image, '"providerInput":{"width":4096,"height":4096}'],
        [image, '"providerInput":{"resolution":"4K "}'],
        [video, '"providerInput":{"resolution":"1080"}'],
        [video, '"providerInput":{"duration":10}'],
        [video, '"providerInput":{"num_frames":240}'],
        [image, '"providerInput":{"a":1e300}'],
        [image, '"providerInput":{"a":1e-200}'],
        [image, '"providerInput":{"a":1e400}'],
        [image, '"providerInput":{"a":123456789012345678901234567890123456789012}'],
        [image, '"seed":123456789012345678901234567890123456789012'],
        [image, '"guidanceScale":1e-200'],
        [image, '"providerInput":{"":1}'],
        [image, '"providerInput":{"b":{"":1}}'],
      ],
    );
  });

  it('odd Content-Type, Authorization and Idempotency-Key headers on valid bodies', async () => {
    // Prepare
    const scenario = fc.record({
      route: submitRoute,
      index: fc.nat(),
      contentTypes: fc.array(fc.tuple(randomCase('content-type'), contentType), { maxLength: 2 }),
      authorizations: authorizationHeaders,
      idempotency: idempotencyKey,
      idempotencyName: randomCase('idempotency-key'),
    });

    // Act + Assert
    await run(
      fc.asyncProperty(
        scenario,
        async ({ route, index, contentTypes, authorizations, idempotency, idempotencyName }) => {
          const request = route.valid[index % route.valid.length] ?? {};
          const headers: [string, string][] = [...authorizations, ...contentTypes];
          if (idempotency !== undefined) headers.push([idempotencyName, idempotency]);
          const answer = await sendAndCheck({ method: 'POST', path: route.path, headers, body: json(request) });
          // Only the fuzz user's own key, sent as a Bearer token, may get a task accepted.
          const carriesKey = authorizations.some(([, value]) => {
            const [scheme, token, ...rest] = value.trim().split(/\s+/);
            return scheme?.toLowerCase() === 'bearer' && token === KEY && rest.length === 0;
          });
          if (authorizations.length === 0) expect(answer.status).toBe(401);
          if (answer.status === 202) expect(carriesKey).toBe(true);
        },
      ),
      70,
    );
  });

  it('random methods and paths (dot segments, broken percent-encoding, very long ids) on every route', async () => {
    // Prepare
    const knownTask = fc.nat(4).map((n) => [...accepted.keys()][n] ?? 'none');
    const scenario = fc.record({
      method: fc.oneof(
        { weight: 3, arbitrary: fc.constant('GET') },
        { weight: 2, arbitrary: fc.constant('POST') },
        { weight: 3, arbitrary: fc.constantFrom(...HTTP_METHODS) },
      ),
      path: fc.oneof(
        { weight: 4, arbitrary: rawPath },
        { weight: 3, arbitrary: pathSegment.map((segment) => `${TASK_ROUTE}${segment}`) },
        { weight: 1, arbitrary: knownTask.map((id) => `${TASK_ROUTE}${encodeURIComponent(id)}`) },
      ),
      authorized: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      withBody: fc.boolean(),
    });
    type Scenario = { method: string; path: string; authorized: boolean; withBody: boolean };
    const get = (path: string): [Scenario] => [{ method: 'GET', path, authorized: true, withBody: false }];

    // Act + Assert
    await run(
      fc.asyncProperty(scenario, async ({ method: drawn, path, authorized, withBody }) => {
        const headers: [string, string][] = authorized ? jsonHeaders() : [['Content-Type', 'application/json']];
        const body = withBody ? json(VALID_IMAGE[0]) : undefined;
        // A DELETE of one of this file's own tasks would take it out of the money check below (deleting is
        // tested in test/integration/delete-data.test.ts): such a draw is sent as a GET.
        const ownTask = [...accepted.keys()].some((id) => path === `${TASK_ROUTE}${encodeURIComponent(id)}`);
        const method = drawn === 'DELETE' && ownTask ? 'GET' : drawn;
        const answer = await sendAndCheck({ method, path, headers, body });
        if (!authorized) expect([401, 404]).toContain(answer.status);
      }),
      80,
      [
        // A task id longer than a DynamoDB sort key may be (1024 bytes).
        get(`${TASK_ROUTE}${'i'.repeat(1100)}`),
        get(`${TASK_ROUTE}${'%F0%9F%99%82'.repeat(300)}`),
        // Percent-escapes that do not decode (truncated UTF-8, an encoded lone surrogate).
        get(`${TASK_ROUTE}%E0%A4%A`),
        get(`${TASK_ROUTE}%ED%A0%80`),
        get(`${TASK_ROUTE}%`),
        // Request targets that are not paths.
        get('http://['),
        get('*'),
        get(`//${TASK_ROUTE}x`),
        get(`${TASK_ROUTE}../../ai/image/generate`),
      ],
    );
  });

  it('bodies around the 10 MB limit: 400 or 413, never a 5xx or a cut connection', async () => {
    // Prepare
    const size = fc.constantFrom(
      1024 * 1024,
      MAX_BODY_BYTES - 64,
      MAX_BODY_BYTES,
      MAX_BODY_BYTES + 1,
      MAX_BODY_BYTES + 4096,
    );
    const filler = fc.constantFrom('a', 'é', '🙂', '\\u0000');

    // Act + Assert
    await run(
      fc.asyncProperty(size, filler, submitRoute, async (bytes, unit, route) => {
        const head = `{"model":"image-model-1","prompt":"`;
        const tail = '"}';
        const unitBytes = Buffer.byteLength(unit);
        const count = Math.max(0, Math.floor((bytes - head.length - tail.length) / unitBytes));
        const body = Buffer.from(`${head}${unit.repeat(count)}${tail}`, 'utf8');
        const answer = await sendAndCheck({ method: 'POST', path: route.path, headers: jsonHeaders(), body });
        expect(answer.status).toBe(body.length > MAX_BODY_BYTES ? 413 : 400);
      }),
      6,
    );
  });

  if (target.runs('fuzzCredits')) {
    it('moved no credit on any rejected request: balance = start - cost of accepted, unrefunded tasks', async () => {
      // Prepare: every accepted task ends (the mock finishes it, fails it, or it times out).
      const finished = [];
      for (const taskId of accepted.keys()) finished.push(await api.pollUntilDone(taskId, { apiKey: FUZZ_KEY }));

      // Act
      const balance = await balanceOf(FUZZ_KEY);

      // Assert
      const charged = finished
        .filter((task) => !task.creditsRefunded)
        .reduce((sum, task) => sum + (accepted.get(task.taskId) ?? Number.NaN), 0);
      for (const task of finished) expect(task.creditsUsed).toBe(accepted.get(task.taskId));
      expect(finished.filter((task) => task.status === 2).every((task) => task.creditsRefunded)).toBe(true);
      expect(balance).toBe((startBalance ?? Number.NaN) - charged);
    });
  }

  it('reached the service with enough requests and every kind of answer', () => {
    // Assert: a run that never got past the gateway, or never got a task accepted, proves little.
    expect(answers).toBeGreaterThanOrEqual(150);
    for (const status of [202, 400, 401, 404, 413, 415])
      expect([status, statusesSeen.get(status) ?? 0]).not.toEqual([status, 0]);
  });
});
