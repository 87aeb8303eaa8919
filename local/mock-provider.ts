/**
 * A mock of the upstream provider: a real HTTP server speaking exactly the protocol documented at the
 * top of `functions/provider/http-provider.ts`, serving real (small, generated) PNGs and a real MP4 as
 * results. Used by the local stack (`npm start`) and the tests.
 *
 * Per-task controls, read from the task `input` (the API's `providerInput` is merged into it):
 * - `mockOutcome`: `success` (default) | `fail` (state `fail`, `failCode`/`failMsg`; override them
 *   with `mockFailCode`/`mockFailMsg`, and `mockFailMsgRepeat` to send the message that many times, up to
 *   512 KB: an oversized provider answer) | `reject` (createTask answers HTTP 422) | `broken_result`
 *   (success whose result URL answers 404) | `hang_result` (success whose result URL never answers)
 *   | `unknown_state` (recordInfo reports a state outside the protocol) | `redirect_result` (the result
 *   URL answers 302 to `mockRedirectTo`, default the cloud metadata address) | `svg_result` (an SVG
 *   served as `image/svg+xml`) | `disguised_result` (the same SVG served as `image/png`).
 * - `mockExtraResults`: this many result URLs beyond what was asked for (a provider that over-delivers).
 * - `mockResultBytes`: a video result of this many bytes (up to 1 GiB; an MP4 header, then zeros),
 *   streamed, instead of the small sample: large copies for the benchmarks.
 * - `mockDelayMs`: time from creation to the outcome (default 1500); the task reports `waiting` for the
 *   first third of it, then `generating`.
 * - `mockKind`: `image` | `video`, to force the kind of result; otherwise a model name containing
 *   "video" means video, anything else image.
 * - Callbacks: when createTask carried a `callBackUrl`, the mock POSTs the task's record (the
 *   `recordInfo` envelope) to it when the task ends. `mockCallback`: `send` (default) | `drop` (never
 *   called) | `twice` (the same callback twice) | `early` (one callback only, halfway through, whose
 *   body claims success with result URLs while the task is still generating: a lying hint).
 *   `mockCallbackDelayMs`: time from the end to the callback (default 0).
 * - Image result count: the first positive integer among `num_images`, `numOutputs`, `num_outputs`,
 *   `numImages`, `n` (default 1, at most 10).
 *
 * Profile mode (`startMockProvider({ profile })`, `local/mock-profile.ts`): createTask refuses (422)
 * what the upstream the profile describes would refuse: an unknown model name, an input key the model
 * does not declare, a mistyped value. The result kind and image count then follow the profile.
 *
 * Capacity, as an upstream declares it (off unless set; `MockProviderOptions`, `setLimits()`, or
 * `POST /__control` with `{ "createRateLimit": "20/10", "maxInFlight": 4 }`, `null` to lift one):
 * - `createRateLimit`: at most `requests` createTask calls in any sliding window of `windowSeconds`
 *   (Kie.ai documents 20 per 10 s per key). Every call that passes the key check counts, whatever its
 *   answer, except those refused by a limit. The excess is answered HTTP 429 `{ code: 429, msg }` with
 *   `Retry-After` (whole seconds until the oldest counted call leaves the window) and is NOT queued.
 * - `maxInFlight`: at most this many created tasks not yet ended (created less than their
 *   `mockDelayMs` ago); beyond it createTask answers 429 with `Retry-After` (whole seconds until the
 *   next task ends).
 * Refusals are counted in `stats.createTaskRefused`; `stats.peakInFlight` is the most tasks that ran at
 * once.
 *
 * Server-wide faults (tests): `setFaults()` on the returned object, or `POST /__control` with a JSON
 * body of the same shape; `GET /__stats` returns the call counts. The upstream's refusals in front of a
 * model or of the whole service: `http_503` (a JSON 503), `maintenance_html` (a 503 whose body is an
 * HTML maintenance page, as a CDN serves it); `faultRetryAfter` adds a `Retry-After` header (seconds or
 * an HTTP date, e.g. `"3600"`) to them and to `http_429`; `createFaultModel` limits `createFault` to
 * creates of that (provider) model name, the others being served as usual. `referenceFetchDelayMs`
 * makes it an upstream with a queue of its own: it answers the create at once and downloads the
 * reference images that long after (`stats.referenceDownloads` has each download's SHA-256). Creates
 * whose answer is lost (the outcome the caller cannot know): `answer_lost` creates the task (its
 * callback follows as usual) and drops the connection unanswered; `answer_hangs` creates it and never
 * answers, so the caller times out. `stats.tasksCreated` counts every task created, answered or not.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import * as zlib from 'node:zlib';
import type { ProviderProfile } from '../functions/core/profiles/profile';
import {
  type CreateRateLimit,
  formatCreateRateLimit,
  MAX_IN_FLIGHT,
  parseCreateRateLimit,
} from '../functions/core/provider-capacity';
import { checkProfiledCall } from './mock-profile';

/** A fault applied to every matching call while set. */
export type MockFault =
  /** HTTP 500 with a JSON error body. */
  | 'http_500'
  /** HTTP 429 (rate limited). */
  | 'http_429'
  /** HTTP 401, as if the key were wrong. */
  | 'http_401'
  /** The request is read and never answered. */
  | 'timeout'
  /** HTTP 200 with a body that is not JSON. */
  | 'malformed_json'
  /** The connection is destroyed without an answer. */
  | 'connection_reset'
  /** HTTP 200 `{ code: 200 }` without `data` (createTask: no task id; recordInfo: no state). */
  | 'missing_fields'
  /** HTTP 503 with a JSON error body (the upstream cannot take this call now). */
  | 'http_503'
  /** HTTP 503 with an HTML maintenance page (`text/html`), as a CDN in front of the upstream serves it. */
  | 'maintenance_html'
  /** createTask only: the task IS created (and its callback sent), then the connection is dropped unanswered. */
  | 'answer_lost'
  /** createTask only: the task IS created (and its callback sent), and its answer never sent: the caller times out. */
  | 'answer_hangs';

/** Faults that let the create happen and lose its answer: the caller cannot know the task exists. */
const ANSWER_FAULTS: ReadonlySet<MockFault> = new Set(['answer_lost', 'answer_hangs']);

export interface MockFaults {
  /** Fault for `createTask`, or null for none. */
  createFault?: MockFault | null;
  /** Fault for `recordInfo`, or null for none. */
  getFault?: MockFault | null;
  /** Apply `createFault` to this many calls only, then clear it (default: until changed). */
  createFaultTimes?: number | null;
  /** Apply `getFault` to this many calls only, then clear it (default: until changed). */
  getFaultTimes?: number | null;
  /** Apply `createFault` only to creates of this provider model name (default: every create). */
  createFaultModel?: string | null;
  /** `Retry-After` sent with `http_429`, `http_503` and `maintenance_html` (seconds or an HTTP date). */
  faultRetryAfter?: string | null;
  /**
   * An upstream with a queue of its own: createTask answers at once and downloads the reference images
   * this long (ms) after, the task generating no sooner; one that cannot be downloaded then fails the task.
   */
  referenceFetchDelayMs?: number | null;
}

export type MockOutcome =
  | 'success'
  | 'fail'
  | 'reject'
  | 'broken_result'
  | 'hang_result'
  | 'unknown_state'
  | 'redirect_result'
  | 'svg_result'
  | 'disguised_result';

export interface MockProviderStats {
  /** Calls to createTask since the last reset (every call that reached the route). */
  readonly createTaskCalls: number;
  /** createTask calls refused with 429 by `createRateLimit` or `maxInFlight` since the last reset. */
  readonly createTaskRefused: number;
  /** Tasks created (answered with a task id) since the last reset. */
  readonly tasksCreated: number;
  /** The most tasks in flight at once since the last reset. */
  readonly peakInFlight: number;
  /**
   * The tasks created since the last reset (at most the last 1,000), answered or not: the id and the
   * first 40 characters of the prompt, so a test finds the upstream's id of a create whose answer it lost.
   */
  readonly createdTasks: readonly { taskId: string; prompt: string }[];
  /** Calls to recordInfo for one provider task id since the last reset. */
  getTaskCalls(providerTaskId: string): number;
  /** Calls to recordInfo for any task id since the last reset. */
  readonly totalGetTaskCalls: number;
  /** Result-file downloads since the last reset. */
  readonly fileDownloads: number;
  /** Callbacks sent since the last reset, with the status each got (0: no answer). */
  readonly callbacks: readonly { providerTaskId: string; status: number }[];
  /**
   * Reference images on this machine downloaded since the last reset (status 0: no answer), with the
   * SHA-256 (hex) of the bytes received.
   */
  readonly referenceDownloads: readonly ReferenceDownload[];
  reset(): void;
}

/** One reference image download by the mock. */
export interface ReferenceDownload {
  status: number;
  bytes: number;
  sha256: string;
}

export interface MockProviderOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** When set, every protocol call must carry `Authorization: Bearer <apiKey>` (else 401). */
  apiKey?: string;
  /** Base of the result URLs; default the server's own address. */
  publicBaseUrl?: string;
  /** Default `mockDelayMs` for tasks that do not set it; default 1500. */
  defaultDelayMs?: number;
  /** MP4 served for video results; default `local/fixtures/sample.mp4`. */
  videoFile?: string;
  /** Refuse what the upstream described by this profile would refuse (see `local/mock-profile.ts`). */
  profile?: ProviderProfile;
  /** Refuse createTask calls beyond this rate with 429 (see the top of this file); default none. */
  createRateLimit?: CreateRateLimit;
  /** Refuse createTask with 429 while this many tasks are in flight; default no cap. */
  maxInFlight?: number;
  /** The clock (epoch ms) for task ages and the limits; tests move it instead of sleeping. Default `Date.now`. */
  now?: () => number;
}

/** The capacity limits in force; `null` lifts one (`setLimits`). */
export interface MockLimits {
  createRateLimit?: CreateRateLimit | null;
  maxInFlight?: number | null;
  /** Every createTask answer is held this long (ms): a slow upstream (the benchmarks). */
  createLatencyMs?: number | null;
}

export interface MockProvider {
  /** The server's base URL, e.g. `http://127.0.0.1:43123` (no trailing slash). */
  readonly url: string;
  readonly stats: MockProviderStats;
  /** Sets (merges) the server-wide faults; `null` clears one. */
  setFaults(faults: MockFaults): void;
  /** Clears every fault. */
  clearFaults(): void;
  /** Sets (merges) the capacity limits; `null` lifts one. The window and the tasks in flight are kept. */
  setLimits(limits: MockLimits): void;
  /** The capacity limits in force. */
  readonly limits: Readonly<{
    createRateLimit: CreateRateLimit | null;
    maxInFlight: number | null;
    createLatencyMs: number | null;
  }>;
  /** Stops listening and drops every open connection (including hung ones). */
  stop(): Promise<void>;
}

interface MockTask {
  taskId: string;
  model: string;
  kind: 'image' | 'video';
  outcome: MockOutcome;
  count: number;
  delayMs: number;
  createdAt: number;
  failCode: string;
  failMsg: string;
  redirectTo: string;
  extra: number;
  /** Size of a generated video result (`mockResultBytes`), instead of the sample file. */
  resultBytes?: number;
}

/** How the mock calls a task's `callBackUrl` (see the controls above). */
export type MockCallbackMode = 'send' | 'drop' | 'twice' | 'early';
const CALLBACK_MODES: readonly MockCallbackMode[] = ['send', 'drop', 'twice', 'early'];
const CALLBACK_TIMEOUT_MS = 5_000;

const OUTCOMES: readonly MockOutcome[] = [
  'success',
  'fail',
  'reject',
  'broken_result',
  'hang_result',
  'unknown_state',
  'redirect_result',
  'svg_result',
  'disguised_result',
];
/** An SVG that would run script if a browser rendered it from the service's origin. */
const HOSTILE_SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>',
);
const METADATA_URL = 'http://169.254.169.254/latest/meta-data/';
const FAULTS: readonly MockFault[] = [
  'http_500',
  'http_429',
  'http_401',
  'timeout',
  'malformed_json',
  'connection_reset',
  'missing_fields',
  'http_503',
  'maintenance_html',
  'answer_lost',
  'answer_hangs',
];
/** The page `maintenance_html` serves. */
const MAINTENANCE_PAGE =
  '<!DOCTYPE html><html><head><title>Down for maintenance</title></head><body><h1>We&rsquo;ll be back soon</h1></body></html>';
/** No fault set: the state at start and after `clearFaults()`. */
const NO_FAULTS: Required<MockFaults> = {
  createFault: null,
  getFault: null,
  createFaultTimes: null,
  getFaultTimes: null,
  createFaultModel: null,
  faultRetryAfter: null,
  referenceFetchDelayMs: null,
};
const DEFAULT_DELAY_MS = 1500;
const MAX_RESULT_BYTES = 1024 * 1024 * 1024;
const IMAGE_SIZE = 64;
/** From local/ or, bundled (bin/run-ts.cjs), from dist/: one level below the repository either way. */
const SAMPLE_VIDEO = resolve(__dirname, '..', 'local', 'fixtures', 'sample.mp4');

/** Starts the mock provider and resolves once it is listening. */
export async function startMockProvider(options: MockProviderOptions = {}): Promise<MockProvider> {
  const tasks = new Map<string, MockTask>();
  const video = readFileSync(options.videoFile ?? SAMPLE_VIDEO);
  const defaultDelayMs = options.defaultDelayMs ?? DEFAULT_DELAY_MS;
  const expectedAuth = options.apiKey === undefined ? undefined : Buffer.from(`Bearer ${options.apiKey}`);

  const clock = options.now ?? Date.now;
  let limits: { createRateLimit: CreateRateLimit | null; maxInFlight: number | null; createLatencyMs: number | null } =
    {
      createRateLimit: options.createRateLimit ?? null,
      maxInFlight: options.maxInFlight ?? null,
      createLatencyMs: null,
    };
  /** When each createTask call counted by the rate limit arrived (epoch ms), oldest first. */
  let windowCalls: number[] = [];
  /** When each created task ends (epoch ms), ascending. */
  let inFlightEnds: number[] = [];
  let createTaskCalls = 0;
  let createTaskRefused = 0;
  let tasksCreated = 0;
  let peakInFlight = 0;
  /** When the last task was created (epoch ms by the mock's clock), 0 before any. */
  let lastCreatedAt = 0;
  /** The latest createTask answers (at most CREATE_LOG_SIZE): when, created or refused, and the prompt's start. */
  let createLog: CreateLogEntry[] = [];
  let createdTasks: { taskId: string; prompt: string }[] = [];
  let fileDownloads = 0;
  let callbacks: { providerTaskId: string; status: number }[] = [];
  let referenceDownloads: ReferenceDownload[] = [];
  const callbackTimers = new Set<NodeJS.Timeout>();
  let getCalls = new Map<string, number>();
  let faults: Required<MockFaults> = { ...NO_FAULTS };
  let baseUrl = '';

  const stats: MockProviderStats = {
    get createTaskCalls() {
      return createTaskCalls;
    },
    get createTaskRefused() {
      return createTaskRefused;
    },
    get tasksCreated() {
      return tasksCreated;
    },
    get peakInFlight() {
      return peakInFlight;
    },
    get createdTasks() {
      return createdTasks;
    },
    getTaskCalls: (id) => getCalls.get(id) ?? 0,
    get totalGetTaskCalls() {
      let total = 0;
      for (const count of getCalls.values()) total += count;
      return total;
    },
    get fileDownloads() {
      return fileDownloads;
    },
    get callbacks() {
      return callbacks;
    },
    get referenceDownloads() {
      return referenceDownloads;
    },
    reset() {
      createTaskCalls = 0;
      createTaskRefused = 0;
      tasksCreated = 0;
      createLog = [];
      createdTasks = [];
      peakInFlight = inFlightNow(clock());
      fileDownloads = 0;
      callbacks = [];
      referenceDownloads = [];
      getCalls = new Map();
    },
  };

  function logCreate(entry: CreateLogEntry): void {
    createLog.push(entry);
    if (createLog.length > CREATE_LOG_SIZE) createLog = createLog.slice(-CREATE_LOG_SIZE);
  }

  function setFaults(next: MockFaults): void {
    faults = { ...faults, ...next };
  }

  function setLimits(next: MockLimits): void {
    limits = { ...limits, ...next };
  }

  function limitsText(): { createRateLimit: string | null; maxInFlight: number | null } {
    const rate = limits.createRateLimit;
    return { createRateLimit: rate ? formatCreateRateLimit(rate) : null, maxInFlight: limits.maxInFlight };
  }

  /** Tasks created and not yet ended at `now`, dropping the ended ones from the list. */
  function inFlightNow(now: number): number {
    const ended = inFlightEnds.findIndex((end) => end > now);
    inFlightEnds = ended < 0 ? [] : inFlightEnds.slice(ended);
    return inFlightEnds.length;
  }

  /**
   * Applies the capacity limits to one createTask call arriving at `now`: the seconds to wait
   * (`Retry-After`) and the reason when it is refused, undefined when it may go on (it is then counted).
   */
  function overCapacity(now: number): { retryAfterSeconds: number; message: string } | undefined {
    const rate = limits.createRateLimit;
    if (rate) {
      const windowMs = rate.windowSeconds * 1000;
      const firstInWindow = windowCalls.findIndex((at) => at > now - windowMs);
      windowCalls = firstInWindow < 0 ? [] : windowCalls.slice(firstInWindow);
      const oldest = windowCalls[0];
      if (oldest !== undefined && windowCalls.length >= rate.requests) {
        return {
          retryAfterSeconds: wholeSeconds(oldest + windowMs - now),
          message: `Rate limit exceeded: at most ${rate.requests} new tasks per ${rate.windowSeconds} s`,
        };
      }
    }
    const cap = limits.maxInFlight;
    const nextEnd = inFlightEnds[0];
    if (cap !== null && inFlightNow(now) >= cap && nextEnd !== undefined) {
      return {
        retryAfterSeconds: wholeSeconds(nextEnd - now),
        message: `Too many tasks in flight: at most ${cap} at once`,
      };
    }
    if (rate) windowCalls.push(now);
    return undefined;
  }

  /** Counts a created task as in flight until it ends. */
  function startInFlight(task: MockTask): void {
    const end = task.createdAt + task.delayMs;
    if (end <= task.createdAt) return; // ends at once: never in flight
    const at = inFlightEnds.findIndex((other) => other > end);
    if (at < 0) inFlightEnds.push(end);
    else inFlightEnds.splice(at, 0, end);
    peakInFlight = Math.max(peakInFlight, inFlightNow(task.createdAt));
  }

  /**
   * The active fault for one call, consuming one use when it is counted; a create of another model than
   * `createFaultModel` meets none.
   */
  function takeFault(which: 'create' | 'get', model?: string): MockFault | null {
    const fault = which === 'create' ? faults.createFault : faults.getFault;
    if (!fault) return null;
    if (which === 'create' && faults.createFaultModel !== null && faults.createFaultModel !== model) return null;
    const times = which === 'create' ? faults.createFaultTimes : faults.getFaultTimes;
    if (times !== null && times !== undefined) {
      const left = times - 1;
      if (which === 'create') {
        faults.createFaultTimes = left > 0 ? left : null;
        if (left <= 0) faults.createFault = null;
      } else {
        faults.getFaultTimes = left > 0 ? left : null;
        if (left <= 0) faults.getFault = null;
      }
    }
    return fault;
  }

  function authorized(req: IncomingMessage): boolean {
    if (!expectedAuth) return true;
    const given = Buffer.from(req.headers.authorization ?? '');
    return given.length === expectedAuth.length && timingSafeEqual(given, expectedAuth);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://mock.invalid');
    const route = `${req.method} ${url.pathname}`;

    if (route === 'POST /api/v1/jobs/createTask') {
      createTaskCalls++;
      const body = await readBody(req);
      if (!authorized(req)) {
        sendJson(res, 401, { code: 401, msg: 'Unauthorized' });
        return;
      }
      const fault = takeFault('create', modelOf(body));
      const answerFault = fault !== null && ANSWER_FAULTS.has(fault) ? fault : undefined;
      if (!answerFault && applyFault(fault, res, req)) return;
      if (limits.createLatencyMs) await new Promise((resolve) => setTimeout(resolve, limits.createLatencyMs ?? 0));
      // The reference download (the only await) comes before the capacity check, so that the check and
      // the task's start stay one synchronous step: concurrent calls cannot both pass a full cap.
      // An upstream with its own queue reads the references later (`referenceFetchDelayMs`).
      const lateFetchMs = faults.referenceFetchDelayMs;
      const unreadable = lateFetchMs === null ? await unreadableReference(body) : undefined;
      if (unreadable) {
        sendJson(res, 422, { code: 422, msg: unreadable });
        return;
      }
      const refused = overCapacity(clock());
      if (refused) {
        createTaskRefused++;
        logCreate({ at: clock(), created: false, prompt: promptStart(body) });
        sendJson(res, 429, { code: 429, msg: refused.message }, { 'retry-after': String(refused.retryAfterSeconds) });
        return;
      }
      const created = createTask(body, res, lateFetchMs ?? 0, answerFault);
      if (created && lateFetchMs !== null) fetchReferencesLater(created, body, lateFetchMs);
      return;
    }
    if (route === 'GET /api/v1/jobs/recordInfo') {
      const taskId = url.searchParams.get('taskId') ?? '';
      getCalls.set(taskId, (getCalls.get(taskId) ?? 0) + 1);
      if (!authorized(req)) {
        sendJson(res, 401, { code: 401, msg: 'Unauthorized' });
        return;
      }
      if (applyFault(takeFault('get'), res, req)) return;
      recordInfo(taskId, res);
      return;
    }
    if (req.method === 'GET' && url.pathname.startsWith('/files/')) {
      fileDownloads++;
      serveFile(url.pathname.slice('/files/'.length), res);
      return;
    }
    if (route === 'POST /__control') {
      const body = parseJson(await readBody(req));
      const next = parseFaults(body);
      const nextLimits = parseLimits(body);
      if (!next || !nextLimits) {
        sendJson(res, 400, {
          error:
            'expected { createFault?, getFault?, ...Times?, createFaultModel?, faultRetryAfter?, referenceFetchDelayMs?, createRateLimit?: "<n>/<seconds>", maxInFlight?: n }',
        });
        return;
      }
      setFaults(next);
      setLimits(nextLimits);
      if (isRecord(body) && body.resetStats === true) stats.reset();
      sendJson(res, 200, { faults, limits: limitsText() });
      return;
    }
    if (route === 'GET /__stats') {
      sendJson(res, 200, {
        createTaskCalls,
        createTaskRefused,
        tasksCreated,
        lastCreatedAt,
        createLog,
        peakInFlight,
        inFlight: inFlightNow(clock()),
        limits: limitsText(),
        getTaskCalls: Object.fromEntries(getCalls),
        fileDownloads,
        callbacks,
        referenceDownloads,
      });
      return;
    }
    sendJson(res, 404, { code: 404, msg: 'Not found' });
  }

  /**
   * Reference images on this machine (the local stack's signed upload URLs) are downloaded as a real
   * provider would, and a task whose reference cannot be read is refused (422). Other hosts are not
   * fetched: the mock runs offline, and tests name made-up https URLs.
   */
  async function unreadableReference(rawBody: string): Promise<string | undefined> {
    const body = parseJson(rawBody);
    const input = isRecord(body) && isRecord(body.input) ? body.input : {};
    const urls = Object.entries(input)
      .filter(([key]) => /image/i.test(key))
      .flatMap(([, value]) => (Array.isArray(value) ? value : [value]))
      .filter(
        (value): value is string => typeof value === 'string' && /^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(value),
      );
    for (const url of urls) {
      const response = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      const bytes = response ? await response.arrayBuffer().catch(() => new ArrayBuffer(0)) : new ArrayBuffer(0);
      referenceDownloads.push({
        status: response?.status ?? 0,
        bytes: bytes.byteLength,
        sha256: createHash('sha256').update(new Uint8Array(bytes)).digest('hex'),
      });
      if (!response?.ok) return `Reference image could not be downloaded (HTTP ${response?.status ?? 'error'})`;
    }
    return undefined;
  }

  /** Downloads a created task's references `delayMs` after its create; an unreadable one fails the task. */
  function fetchReferencesLater(task: MockTask, rawBody: string, delayMs: number): void {
    const timer = setTimeout(() => {
      callbackTimers.delete(timer);
      void unreadableReference(rawBody).then((problem) => {
        if (!problem) return;
        task.outcome = 'fail';
        task.failCode = 'REFERENCE_UNREADABLE';
        task.failMsg = problem;
      });
    }, delayMs);
    callbackTimers.add(timer);
  }

  /**
   * Creates the task and answers; returns it (undefined when refused). It generates for its
   * `mockDelayMs`, and never ends before `minDelayMs` (a late reference download). `answerFault` loses
   * the answer of a created task (the task exists either way).
   */
  function createTask(
    rawBody: string,
    res: ServerResponse,
    minDelayMs = 0,
    answerFault?: MockFault,
  ): MockTask | undefined {
    const body = parseJson(rawBody);
    if (!isRecord(body)) {
      sendJson(res, 400, { code: 400, msg: 'Body must be a JSON object' });
      return undefined;
    }
    const { model, input } = body;
    if (typeof model !== 'string' || model.length === 0) {
      sendJson(res, 422, { code: 422, msg: 'model is required' });
      return undefined;
    }
    if (!isRecord(input)) {
      sendJson(res, 422, { code: 422, msg: 'input must be an object' });
      return undefined;
    }
    if (body.callBackUrl !== undefined && typeof body.callBackUrl !== 'string') {
      sendJson(res, 422, { code: 422, msg: 'callBackUrl must be a string' });
      return undefined;
    }
    const callbackMode = input.mockCallback ?? 'send';
    if (!CALLBACK_MODES.includes(callbackMode as MockCallbackMode)) {
      sendJson(res, 422, { code: 422, msg: `unknown mockCallback ${String(callbackMode)}` });
      return undefined;
    }

    const profiled = options.profile ? checkProfiledCall(options.profile, model, input) : undefined;
    if (profiled && !profiled.ok) {
      sendJson(res, 422, { code: 422, msg: profiled.message });
      return undefined;
    }

    const outcome = input.mockOutcome ?? 'success';
    if (!OUTCOMES.includes(outcome as MockOutcome)) {
      sendJson(res, 422, { code: 422, msg: `unknown mockOutcome ${String(outcome)}` });
      return undefined;
    }
    if (outcome === 'reject') {
      sendJson(res, 422, { code: 422, msg: 'Input refused by the mock (mockOutcome reject)' });
      return undefined;
    }
    const delay = input.mockDelayMs;
    const task: MockTask = {
      taskId: `mock_${randomUUID().replaceAll('-', '')}`,
      model,
      kind: profiled?.ok ? profiled.call.kind : resultKind(model, input),
      outcome: outcome as MockOutcome,
      count: profiled?.ok ? profiled.call.count : resultCount(input),
      // A late reference download (`minDelayMs`) comes before the task's end; otherwise its own delay.
      delayMs: Math.max(
        minDelayMs > 0 ? minDelayMs + 1 : 0,
        typeof delay === 'number' && Number.isFinite(delay) && delay >= 0 ? delay : defaultDelayMs,
      ),
      createdAt: clock(),
      failCode: typeof input.mockFailCode === 'string' ? input.mockFailCode : 'MOCK_FAILURE',
      failMsg: repeated(
        typeof input.mockFailMsg === 'string' ? input.mockFailMsg : 'Generation failed (mockOutcome fail)',
        input.mockFailMsgRepeat,
      ),
      redirectTo: typeof input.mockRedirectTo === 'string' ? input.mockRedirectTo : METADATA_URL,
      extra:
        typeof input.mockExtraResults === 'number' && Number.isInteger(input.mockExtraResults)
          ? Math.min(Math.max(input.mockExtraResults, 0), 20)
          : 0,
      ...(typeof input.mockResultBytes === 'number' &&
      Number.isInteger(input.mockResultBytes) &&
      input.mockResultBytes >= 16 &&
      input.mockResultBytes <= MAX_RESULT_BYTES
        ? { resultBytes: input.mockResultBytes }
        : {}),
    };
    tasks.set(task.taskId, task);
    tasksCreated++;
    lastCreatedAt = task.createdAt;
    logCreate({ at: task.createdAt, created: true, prompt: promptStart(rawBody) });
    createdTasks.push({ taskId: task.taskId, prompt: promptStart(rawBody) });
    if (createdTasks.length > CREATE_LOG_SIZE) createdTasks = createdTasks.slice(-CREATE_LOG_SIZE);
    startInFlight(task);
    if (typeof body.callBackUrl === 'string') {
      const extraDelay = input.mockCallbackDelayMs;
      scheduleCallbacks(
        task,
        body.callBackUrl,
        callbackMode as MockCallbackMode,
        typeof extraDelay === 'number' && Number.isFinite(extraDelay) && extraDelay >= 0 ? extraDelay : 0,
      );
    }
    if (answerFault === 'answer_lost') res.socket?.destroy();
    else if (answerFault !== 'answer_hangs')
      sendJson(res, 200, { code: 200, msg: 'success', data: { taskId: task.taskId } });
    return task;
  }

  /** Calls the task's callback URL as `mode` says, on timers that `stop()` cancels. */
  function scheduleCallbacks(task: MockTask, url: string, mode: MockCallbackMode, extraDelayMs: number): void {
    if (mode === 'drop') return;
    const at = (delayMs: number, body: () => unknown) => {
      const timer = setTimeout(() => {
        callbackTimers.delete(timer);
        void sendCallback(task.taskId, url, body());
      }, delayMs);
      callbackTimers.add(timer);
    };
    if (mode === 'early') {
      // Claims success with results while the task is still generating: only a provider read can tell.
      const lie = {
        taskId: task.taskId,
        state: 'success',
        resultJson: JSON.stringify({ resultUrls: resultUrls(task) }),
      };
      at(task.delayMs / 2, () => ({ code: 200, msg: 'success', data: lie }));
      return;
    }
    const end = task.delayMs + extraDelayMs;
    at(end, () => recordEnvelope(task));
    if (mode === 'twice') at(end, () => recordEnvelope(task));
  }

  async function sendCallback(providerTaskId: string, url: string, body: unknown): Promise<void> {
    let status = 0;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      });
      status = response.status;
      await response.arrayBuffer();
    } catch {
      // Unreachable or too slow: recorded as status 0, as a real provider would give up.
    }
    callbacks.push({ providerTaskId, status });
  }

  function recordInfo(taskId: string, res: ServerResponse): void {
    const task = tasks.get(taskId);
    if (!task) {
      sendJson(res, 200, { code: 404, msg: 'Task not found', data: null });
      return;
    }
    sendJson(res, 200, recordEnvelope(task));
  }

  /** The `recordInfo` answer for a task as it stands now (also the body of its callback). */
  function recordEnvelope(task: MockTask): Record<string, unknown> {
    const now = clock();
    const elapsed = now - task.createdAt;
    const done = elapsed >= task.delayMs;
    const state = done ? finalState(task) : elapsed < task.delayMs / 3 ? 'waiting' : 'generating';
    const data: Record<string, unknown> = {
      taskId: task.taskId,
      model: task.model,
      state,
      resultJson: '',
      failCode: '',
      failMsg: '',
      createTime: task.createdAt,
      updateTime: done ? task.createdAt + task.delayMs : now,
    };
    if (state === 'success') data.resultJson = JSON.stringify({ resultUrls: resultUrls(task) });
    if (state === 'fail') {
      data.failCode = task.failCode;
      data.failMsg = task.failMsg;
    }
    return { code: 200, msg: 'success', data };
  }

  function resultUrls(task: MockTask): string[] {
    const base = `${baseUrl}/files/${task.taskId}`;
    if (task.outcome === 'broken_result') return [`${base}/missing.${task.kind === 'video' ? 'mp4' : 'png'}`];
    if (task.outcome === 'hang_result') return [`${base}/hang.${task.kind === 'video' ? 'mp4' : 'png'}`];
    if (task.outcome === 'redirect_result') return [`${base}/redirect.png`];
    if (task.outcome === 'svg_result' || task.outcome === 'disguised_result') return [`${base}/0.svg`];
    const count = (task.kind === 'video' ? 1 : task.count) + task.extra;
    return Array.from({ length: count }, (_, index) =>
      task.kind === 'video' ? `${base}/${index}.mp4` : `${base}/${index}.png`,
    );
  }

  function serveFile(rest: string, res: ServerResponse): void {
    const [taskId = '', name = '', extra] = rest.split('/');
    const task = tasks.get(taskId);
    if (!task || extra !== undefined) {
      sendJson(res, 404, { code: 404, msg: 'Not found' });
      return;
    }
    if (/^hang\./.test(name) && task.outcome === 'hang_result') return; // never answered
    if (name === 'redirect.png' && task.outcome === 'redirect_result') {
      res.writeHead(302, { location: task.redirectTo, 'content-length': '0' }).end();
      return;
    }
    if (name === '0.svg' && (task.outcome === 'svg_result' || task.outcome === 'disguised_result')) {
      sendBytes(res, task.outcome === 'svg_result' ? 'image/svg+xml' : 'image/png', HOSTILE_SVG);
      return;
    }
    const videoIndex = /^(\d+)\.mp4$/.exec(name)?.[1];
    if (
      task.outcome === 'success' &&
      task.kind === 'video' &&
      videoIndex !== undefined &&
      Number(videoIndex) <= task.extra
    ) {
      if (task.resultBytes !== undefined) streamVideo(res, task.resultBytes);
      else sendBytes(res, 'video/mp4', video);
      return;
    }
    const index = /^(\d+)\.png$/.exec(name)?.[1];
    if (
      task.outcome === 'success' &&
      task.kind === 'image' &&
      index !== undefined &&
      Number(index) < task.count + task.extra
    ) {
      sendBytes(res, 'image/png', generatePng(IMAGE_SIZE, IMAGE_SIZE, `${taskId}/${index}`));
      return;
    }
    sendJson(res, 404, { code: 404, msg: 'Not found' });
  }

  function applyFault(fault: MockFault | null, res: ServerResponse, req: IncomingMessage): boolean {
    const retryAfter: Record<string, string> =
      faults.faultRetryAfter === null ? {} : { 'retry-after': faults.faultRetryAfter };
    switch (fault) {
      case null:
        return false;
      case 'http_500':
        sendJson(res, 500, { code: 500, msg: 'Internal error (mock fault)' });
        return true;
      case 'http_429':
        sendJson(res, 429, { code: 429, msg: 'Too many requests (mock fault)' }, retryAfter);
        return true;
      case 'http_503':
        sendJson(res, 503, { code: 503, msg: 'Service unavailable (mock fault)' }, retryAfter);
        return true;
      case 'maintenance_html':
        res
          .writeHead(503, {
            ...retryAfter,
            'content-type': 'text/html; charset=utf-8',
            'content-length': Buffer.byteLength(MAINTENANCE_PAGE),
          })
          .end(MAINTENANCE_PAGE);
        return true;
      case 'http_401':
        sendJson(res, 401, { code: 401, msg: 'Unauthorized (mock fault)' });
        return true;
      case 'timeout':
        return true; // left unanswered; stop() drops the connection
      case 'malformed_json':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"code":200,"data":');
        return true;
      case 'connection_reset':
        req.socket.destroy();
        return true;
      case 'missing_fields':
        sendJson(res, 200, { code: 200, msg: 'success' });
        return true;
      case 'answer_lost':
        req.socket.destroy(); // recordInfo: nothing to create, so a connection reset
        return true;
      case 'answer_hangs':
        return true; // recordInfo: nothing to create, so a timeout
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { code: 500, msg: 'Mock provider error' });
      else res.destroy();
    });
  });
  // Idle connections are kept a minute, as upstreams behind nginx or a load balancer keep them (Node's
  // default is 5 s). With 5 s, the service's fetch (which keeps a socket 4 s) could reuse a socket the
  // mock was closing just then on a loaded machine, and a createTask failed with ECONNRESET: a fault of
  // the stand-in, not of the upstream it stands for.
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 61_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const ownUrl = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${address.port}`;
  baseUrl = (options.publicBaseUrl ?? ownUrl).replace(/\/+$/, '');

  return {
    url: ownUrl,
    stats,
    setFaults,
    clearFaults: () => setFaults({ ...NO_FAULTS }),
    setLimits,
    get limits() {
      return limits;
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        for (const timer of callbackTimers) clearTimeout(timer);
        callbackTimers.clear();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/**
 * A real RGB PNG (8 bits per channel), a diagonal gradient whose colour is derived from `seed`, so that
 * different results are different files. Built with node:zlib (deflate and, from Node 22.2, its CRC-32).
 */
export function generatePng(width: number, height: number, seed: string): Buffer {
  const hue = crc32(Buffer.from(seed));
  const [r, g, b] = [(hue >>> 16) & 0xff, (hue >>> 8) & 0xff, hue & 0xff];
  const rowLength = width * 3 + 1;
  const raw = Buffer.alloc(rowLength * height);
  for (let y = 0; y < height; y++) {
    raw[y * rowLength] = 0; // filter type None
    for (let x = 0; x < width; x++) {
      const shade = (x + y) / (width + height - 2 || 1);
      const offset = y * rowLength + 1 + x * 3;
      raw[offset] = Math.round(r * (1 - shade) + 255 * shade) & 0xff;
      raw[offset + 1] = Math.round(g * (1 - shade)) & 0xff;
      raw[offset + 2] = Math.round(b * shade + 64 * (1 - shade)) & 0xff;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type RGB
  header[10] = 0; // deflate
  header[11] = 0; // adaptive filtering
  header[12] = 0; // no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', zlib.deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length, 0);
  const typeAndData = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData), 0);
  return Buffer.concat([length, typeAndData, crc]);
}

/**
 * CRC-32 (ISO-HDLC), as PNG chunks use it: `zlib.crc32` where Node has it (22.2 and later). The table
 * version below is only for Node 20, which this machine still runs; delete it once every Node the
 * project runs on is 22.2 or newer.
 */
export const crc32: (data: Uint8Array) => number =
  typeof (zlib as { crc32?: unknown }).crc32 === 'function'
    ? (data) => (zlib as unknown as { crc32(data: Uint8Array): number }).crc32(data)
    : tableCrc32;

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function tableCrc32(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function repeated(text: string, times: unknown): string {
  if (typeof times !== 'number' || !Number.isInteger(times) || times < 2 || text.length === 0) return text;
  return text.repeat(Math.min(times, Math.floor((512 * 1024) / text.length)));
}

function finalState(task: MockTask): string {
  if (task.outcome === 'fail') return 'fail';
  if (task.outcome === 'unknown_state') return 'exploded';
  return 'success';
}

function resultKind(model: string, input: Record<string, unknown>): 'image' | 'video' {
  if (input.mockKind === 'image' || input.mockKind === 'video') return input.mockKind;
  return /video/i.test(model) ? 'video' : 'image';
}

function resultCount(input: Record<string, unknown>): number {
  for (const field of ['num_images', 'numOutputs', 'num_outputs', 'numImages', 'n']) {
    const value = input[field];
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return Math.min(value, 10);
  }
  return 1;
}

function parseFaults(body: unknown): MockFaults | undefined {
  if (!isRecord(body)) return undefined;
  const next: MockFaults = {};
  for (const field of ['createFault', 'getFault'] as const) {
    const value = body[field];
    if (value === undefined) continue;
    if (value !== null && !FAULTS.includes(value as MockFault)) return undefined;
    next[field] = value as MockFault | null;
  }
  for (const field of ['createFaultTimes', 'getFaultTimes'] as const) {
    const value = body[field];
    if (value === undefined) continue;
    if (value !== null && !(typeof value === 'number' && Number.isInteger(value) && value > 0)) return undefined;
    next[field] = value as number | null;
  }
  for (const field of ['createFaultModel', 'faultRetryAfter'] as const) {
    const value = body[field];
    if (value === undefined) continue;
    if (value !== null && !(typeof value === 'string' && value.length > 0 && value.length <= 200)) return undefined;
    next[field] = value as string | null;
  }
  const late = body.referenceFetchDelayMs;
  if (late !== undefined) {
    if (late !== null && !(typeof late === 'number' && Number.isInteger(late) && late >= 0 && late <= 3_600_000)) {
      return undefined;
    }
    next.referenceFetchDelayMs = late;
  }
  return next;
}

/** `createRateLimit` ("20/10" or null) and `maxInFlight` (a whole number or null) of a control body. */
function parseLimits(body: unknown): MockLimits | undefined {
  if (!isRecord(body)) return undefined;
  const next: MockLimits = {};
  const rate = body.createRateLimit;
  if (rate === null) next.createRateLimit = null;
  else if (typeof rate === 'string') {
    try {
      next.createRateLimit = parseCreateRateLimit(rate, 'createRateLimit');
    } catch {
      return undefined;
    }
  } else if (rate !== undefined) return undefined;
  const cap = body.maxInFlight;
  if (cap === null) next.maxInFlight = null;
  else if (typeof cap === 'number' && Number.isInteger(cap) && cap >= 1 && cap <= MAX_IN_FLIGHT) next.maxInFlight = cap;
  else if (cap !== undefined) return undefined;
  const latency = body.createLatencyMs;
  if (latency === null) next.createLatencyMs = null;
  else if (typeof latency === 'number' && Number.isInteger(latency) && latency >= 0 && latency <= 60_000) {
    next.createLatencyMs = latency;
  } else if (latency !== undefined) return undefined;
  return next;
}

/** How many createTask answers `/__stats` lists (`createLog`). */
const CREATE_LOG_SIZE = 1000;

/** One createTask answer as `/__stats` lists it. */
interface CreateLogEntry {
  /** Epoch ms by the mock's clock. */
  at: number;
  created: boolean;
  /** The first 40 characters of `input.prompt`, so a bench can tell its callers apart. */
  prompt: string;
}

/** The `model` of a createTask body (undefined when there is none). */
function modelOf(rawBody: string): string | undefined {
  const body = parseJson(rawBody);
  return isRecord(body) && typeof body.model === 'string' ? body.model : undefined;
}

/** The first 40 characters of a createTask body's `input.prompt` ('' when there is none). */
function promptStart(rawBody: string): string {
  const body = parseJson(rawBody);
  const prompt = isRecord(body) && isRecord(body.input) ? body.input.prompt : undefined;
  return typeof prompt === 'string' ? prompt.slice(0, 40) : '';
}

/** Whole seconds to wait, at least 1 (a `Retry-After` of 0 would invite an immediate retry). */
function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res
    .writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    .end(text);
}

/** A generated MP4 of `size` bytes (an `ftyp` box, then zeros), written as the client takes it. */
function streamVideo(res: ServerResponse, size: number): void {
  res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(size) });
  const chunk = Buffer.alloc(1024 * 1024);
  const head = Buffer.alloc(chunk.length);
  head.write('\u0000\u0000\u0000\u0018ftypisom', 0, 'latin1');
  let sent = 0;
  const pump = () => {
    while (sent < size) {
      const next = (sent === 0 ? head : chunk).subarray(0, Math.min(chunk.length, size - sent));
      sent += next.length;
      if (!res.write(next)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
}

function sendBytes(res: ServerResponse, contentType: string, bytes: Buffer): void {
  res.writeHead(200, { 'content-type': contentType, 'content-length': bytes.length }).end(bytes);
}
