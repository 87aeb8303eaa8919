/**
 * The HTTP adapter for the upstream provider: a task-queue API of the common shape.
 *
 * ## The protocol (what this adapter speaks and what `local/mock-provider.ts` serves)
 *
 * Every request carries `Authorization: Bearer <providerKey>`. Paths are relative to the configured
 * base URL.
 *
 * **Create a task** — `POST {base}/api/v1/jobs/createTask`, `Content-Type: application/json`,
 * body `{ "model": string, "input": object, "callBackUrl"?: string }`.
 * - Accepted: HTTP 200 `{ "code": 200, "msg": "success", "data": { "taskId": string } }`.
 * - Input refused (never retry): HTTP 400 or 422, or HTTP 200 with body `code` 400 or 422, body
 *   `{ "code": number, "msg": string }`.
 * - Anything else (401/403 bad key, 429 rate limit, 5xx, other body codes) is a transient failure;
 *   429 and 503 (whatever their body: a maintenance page's HTML is never parsed) are refusals for
 *   capacity, with their `Retry-After` (docs/design/dispatching.md, "Backoff").
 *
 * **Read a task** — `GET {base}/api/v1/jobs/recordInfo?taskId=<id>`.
 * - HTTP 200 `{ "code": 200, "msg": string, "data": { "taskId", "model",
 *   "state": "waiting" | "queuing" | "generating" | "success" | "fail",
 *   "resultJson": "<JSON text of { \"resultUrls\": string[] }>", "failCode", "failMsg",
 *   "createTime", "updateTime" } }`.
 * - `resultJson` is read only when `state` is `success`, and must then hold at least one URL;
 *   `failCode`/`failMsg` only when `state` is `fail`.
 *
 * **Callback** — with `callBackUrl`, the provider POSTs the finished task there: the same envelope and
 * `data` as recordInfo (`parseProviderCallback`).
 *
 * ## Quirks of real upstreams (handled here, tested in test/unit/http-provider-quirks.test.ts)
 * - The envelope's text is `msg` on createTask but `message` on recordInfo (and some errors): both are read.
 * - `failCode` arrives as a number, a string, or `""` (no code); `""` means none.
 * - `createTime`, `updateTime`, `completeTime` are epoch milliseconds; `completeTime` becomes `finishedAt`
 *   when it is a plausible millisecond value (one in seconds would read as 1970 and is ignored).
 * - Result URLs expire upstream after about a day, so they are never stored: the lifecycle copies the
 *   files into our own storage on the first poll or sweep (at most a minute) after `success`, and a URL
 *   that no longer answers fails the task with `STORAGE_ERROR` and refunds it.
 *
 * ## Error mapping
 * - `createTask` is not idempotent (a retry after a lost response would create and bill a second task
 *   upstream), so it is tried exactly once: refused input -> `ProviderRejectedError` (provider code and
 *   message); network error, timeout, 401/403/429/5xx, malformed JSON, missing task id ->
 *   `ProviderUnavailableError`. A timeout or a connection lost once it was open sets `outcomeUnknown`
 *   on it: the upstream may have created the task (only a connection never made, e.g. refused, did not).
 * - `getTask` is safe to repeat and is retried once on a connection error or a 5xx. A timeout is not
 *   retried: the read sits on a polling request's latency budget, and the lifecycle asks again later.
 *   Malformed JSON, an unknown state, or missing fields -> `ProviderUnavailableError`, so the task stays
 *   pending rather than being failed on a garbled answer.
 *
 * The provider key is only ever placed in the `Authorization` header; it is never logged and never
 * part of an error message. Each call carries the service's request id as `X-Request-Id` (the id the
 * client got in its own `X-Request-Id`), so one task can be followed across both sides' logs.
 */
import { parseRetryAfter } from '../core/retry-after';
import { currentRequestId } from '../observability/logger';
import {
  type GenerationProvider,
  type ProviderCreateRequest,
  ProviderRejectedError,
  type ProviderState,
  type ProviderTaskStatus,
  ProviderUnavailableError,
} from './port';

export interface HttpProviderOptions {
  /** The provider's base URL, e.g. `https://api.provider.example` (a path prefix is kept). */
  baseUrl: string;
  /** Supplies the provider key per call (cached by the source, e.g. `providerApiKeyFromEnv`). */
  apiKey: () => Promise<string>;
  /** Per-attempt timeout, covering the response body too. Default 10 000 ms. */
  timeoutMs?: number;
  /** Injected for tests; defaults to the global `fetch`. */
  fetch?: typeof fetch;
}

/** The paths of the protocol, relative to the base URL. */
export const PROVIDER_PATHS = {
  createTask: 'api/v1/jobs/createTask',
  recordInfo: 'api/v1/jobs/recordInfo',
} as const;

const DEFAULT_TIMEOUT_MS = 10_000;
/** Largest provider answer read; a protocol answer is a few KB, and the answer is untrusted input. */
export const MAX_PROVIDER_ANSWER_BYTES = 1024 * 1024;
/** Result URLs looked at per answer; the lifecycle keeps only what was paid for (at most 10). */
const MAX_RESULT_URLS = 100;
const STATES: readonly ProviderState[] = ['waiting', 'queuing', 'generating', 'success', 'fail'];
const REJECT_CODES = new Set([400, 422]);

/** Creates the provider adapter. Nothing is fetched until the first call. */
export function createHttpProvider(options: HttpProviderOptions): GenerationProvider {
  const base = options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const doFetch = options.fetch ?? fetch;

  async function authorization(): Promise<string> {
    try {
      return `Bearer ${await options.apiKey()}`;
    } catch (error) {
      // The cause is kept for the log; it is a configuration/secret-read failure, never the key.
      throw new ProviderUnavailableError('Provider key unavailable', { cause: error });
    }
  }

  /** One HTTP exchange under one deadline; the body is read inside the same deadline. */
  async function exchange(url: URL, init: RequestInit, operation: string): Promise<Exchange> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const response = await doFetch(url, { ...init, signal, redirect: 'error' });
      const text = await readBounded(response, MAX_PROVIDER_ANSWER_BYTES);
      const retryAfter = parseRetryAfter(response.headers.get('retry-after'), Date.now());
      return { status: response.status, text, ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }) };
    } catch (error) {
      const timedOut = signal.aborted;
      throw new TransportError(
        timedOut ? `${operation}: no answer within ${timeoutMs} ms` : `${operation}: connection failed`,
        timedOut,
        error,
      );
    }
  }

  return {
    async createTask(request: ProviderCreateRequest): Promise<{ providerTaskId: string }> {
      const url = new URL(PROVIDER_PATHS.createTask, base);
      const body: Record<string, unknown> = { model: request.model, input: request.input };
      if (request.callBackUrl !== undefined) body.callBackUrl = request.callBackUrl;
      // Before the exchange: a key that cannot be read is a create never sent.
      const auth = await authorization();
      let result: Exchange;
      try {
        result = await exchange(
          url,
          {
            method: 'POST',
            headers: {
              authorization: auth,
              'content-type': 'application/json',
              accept: 'application/json',
              ...requestIdHeader(),
            },
            body: JSON.stringify(body),
          },
          'createTask',
        );
      } catch (error) {
        const unavailable = asUnavailable(error);
        // The request may have reached the upstream: whether it created the task is unknown.
        if (!(error instanceof TransportError && error.notSent)) unavailable.outcomeUnknown = true;
        throw unavailable;
      }

      const envelope = parseEnvelope(result.text);
      if (REJECT_CODES.has(result.status)) {
        throw rejected(envelope, result.status);
      }
      if (result.status < 200 || result.status > 299) {
        const error = new ProviderUnavailableError(`createTask: provider answered HTTP ${result.status}`);
        // A refusal, whatever its body (a CDN's or a maintenance page's HTML is never parsed as JSON
        // here): 429 says the caller is over its rate, 503 that the upstream cannot take this create now.
        if (result.status === 429 || result.status === 503) {
          error.throttled = {
            status: result.status,
            ...(result.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: result.retryAfterSeconds }),
          };
        }
        throw error;
      }
      // A success status whose body cannot be read, or that names no task, does not say the upstream did
      // not create it: whether it did is unknown, and sending again could pay twice.
      if (!envelope) throw unknownOutcome('createTask: response is not a JSON object');
      if (typeof envelope.code === 'number' && REJECT_CODES.has(envelope.code)) {
        throw rejected(envelope, envelope.code);
      }
      if (envelope.code !== 200) {
        throw new ProviderUnavailableError(`createTask: provider answered code ${describe(envelope.code)}`);
      }
      const taskId = isRecord(envelope.data) ? envelope.data.taskId : undefined;
      if (typeof taskId !== 'string' || taskId.length === 0) {
        throw unknownOutcome('createTask: response has no taskId');
      }
      return { providerTaskId: taskId };
    },

    // Fixed at build time for functions that only create tasks (lib/bundle-options.ts): esbuild
    // then keeps only the refusal, and the reading and parsing code below is left out of their bundles.
    // Spelled `process.env.X` (a build-time variable of functions/environment/environment.ts): the one
    // form `define` replaces.
    getTask:
      process.env.PROVIDER_READS === 'off'
        ? async () => {
            throw new ProviderUnavailableError('getTask: this function only creates provider tasks');
          }
        : (providerTaskId: string) => readTask({ base, authorization, exchange }, providerTaskId),
  };
}

/** What reading a task needs from the adapter. */
interface ReadIo {
  base: string;
  authorization(): Promise<string>;
  exchange(url: URL, init: RequestInit, operation: string): Promise<Exchange>;
}

/** `recordInfo`, retried once on a connection error or a 5xx (see the error mapping above). */
async function readTask(io: ReadIo, providerTaskId: string): Promise<ProviderTaskStatus> {
  const url = new URL(PROVIDER_PATHS.recordInfo, io.base);
  url.searchParams.set('taskId', providerTaskId);
  const init: RequestInit = {
    method: 'GET',
    headers: { authorization: await io.authorization(), accept: 'application/json', ...requestIdHeader() },
  };

  let result: Exchange | undefined;
  for (let attempt = 1; attempt <= 2 && result === undefined; attempt++) {
    const last = attempt === 2;
    try {
      const answer = await io.exchange(url, init, 'getTask');
      if (answer.status >= 500 && !last) continue;
      result = answer;
    } catch (error) {
      if (error instanceof TransportError && !error.timedOut && !last) continue;
      throw asUnavailable(error);
    }
  }
  if (!result) throw new ProviderUnavailableError('getTask: no answer');
  if (result.status < 200 || result.status > 299) {
    throw new ProviderUnavailableError(`getTask: provider answered HTTP ${result.status}`);
  }
  return parseRecordInfo(result.text);
}

/** The service's request id for the provider's logs and support (`X-Request-Id`), when serving one. */
function requestIdHeader(): Record<string, string> {
  const requestId = currentRequestId();
  return requestId ? { 'x-request-id': requestId } : {};
}

interface Exchange {
  status: number;
  text: string;
  /**
   * The `Retry-After` header in seconds (delta-seconds or an HTTP date), when present and readable: as
   * asked, unbounded here; the dispatcher bounds it (core/retry-after.ts).
   */
  retryAfterSeconds?: number;
}

/**
 * Errors of the connection's set-up (no address, refused, unreachable): the request never left, so the
 * upstream cannot have acted on it. Any other failure (a timeout, a connection dropped once open) may
 * come after the upstream received the request.
 */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Whether `error` (a fetch failure) says the connection was never made, through its chain of causes. */
function neverConnected(error: unknown): boolean {
  // Duck-typed, not `instanceof Error`: the errors of Node's fetch may come from another realm.
  let cause: unknown = error;
  for (let depth = 0; typeof cause === 'object' && cause !== null && depth < 5; depth++) {
    const { code, errors } = cause as { code?: unknown; errors?: unknown };
    if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return true;
    if (Array.isArray(errors) && errors.length > 0 && errors.every(neverConnected)) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

class TransportError extends Error {
  /** The request never reached the upstream (see {@link NOT_SENT_CODES}). */
  readonly notSent: boolean;
  constructor(
    message: string,
    readonly timedOut: boolean,
    cause: unknown,
  ) {
    super(message, { cause });
    this.notSent = !timedOut && neverConnected(cause);
  }
}

function asUnavailable(error: unknown): ProviderUnavailableError {
  if (error instanceof ProviderUnavailableError) return error;
  if (error instanceof TransportError) return new ProviderUnavailableError(error.message, { cause: error.cause });
  return new ProviderUnavailableError('Provider call failed', { cause: error });
}

function rejected(envelope: Record<string, unknown> | undefined, status: number): ProviderRejectedError {
  const code = envelope?.code ?? status;
  const message = envelopeText(envelope) ?? 'Input refused';
  return new ProviderRejectedError(message, String(code));
}

/** The envelope's text: `msg` (createTask) or `message` (recordInfo and some errors), if any. */
function envelopeText(envelope: Record<string, unknown> | undefined): string | undefined {
  const text = envelope?.msg || envelope?.message;
  return typeof text === 'string' ? text : undefined;
}

function parseRecordInfo(text: string): ProviderTaskStatus {
  const envelope = parseEnvelope(text);
  if (!envelope) throw new ProviderUnavailableError('getTask: response is not a JSON object');
  if (envelope.code !== 200) {
    const said = envelopeText(envelope);
    throw new ProviderUnavailableError(
      `getTask: provider answered code ${describe(envelope.code)}${said === undefined ? '' : ` (${describe(said)})`}`,
    );
  }
  return parseTaskData(envelope.data, 'getTask');
}

/** The task record of a recordInfo answer or a callback (`data`). */
function parseTaskData(data: unknown, operation: string): ProviderTaskStatus {
  if (!isRecord(data)) throw new ProviderUnavailableError(`${operation}: response has no data`);
  const state = data.state;
  if (typeof state !== 'string' || !(STATES as readonly string[]).includes(state)) {
    throw new ProviderUnavailableError(`${operation}: unknown state ${describe(state)}`);
  }
  const status: ProviderTaskStatus = { state: state as ProviderState, resultUrls: [] };
  if (status.state === 'success') {
    status.resultUrls = parseResultUrls(data.resultJson, operation);
  } else if (status.state === 'fail') {
    const failCode = scalarText(data.failCode);
    const failMessage = scalarText(data.failMsg);
    if (failCode !== undefined) status.failCode = failCode;
    if (failMessage !== undefined) status.failMessage = failMessage;
  }
  const finishedAt = epochMillis(data.completeTime);
  if (finishedAt) status.finishedAt = finishedAt;
  return status;
}

/**
 * A time given in epoch milliseconds (number or decimal text), or undefined when it is not one: only
 * 1e12 (2001) to 1e13 (2286) is taken, so a time in seconds is never read as 1970.
 */
function epochMillis(value: unknown): Date | undefined {
  const ms = typeof value === 'number' || typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isInteger(ms) && ms >= 1e12 && ms <= 1e13 ? new Date(ms) : undefined;
}

/**
 * The task a provider callback (POSTed to `callBackUrl`) reports: the recordInfo envelope, code 200,
 * with the task id in `data.taskId`. Nothing in it is trusted beyond its shape; the lifecycle may
 * confirm with recordInfo.
 * @throws ProviderUnavailableError when the body is not such a callback
 */
export function parseProviderCallback(body: unknown): { providerTaskId: string; status: ProviderTaskStatus } {
  if (!isRecord(body)) throw new ProviderUnavailableError('callback: body is not a JSON object');
  if (body.code !== 200 && body.code !== undefined) {
    // A failed task may be reported with the error code in the envelope (e.g. 501) and state "fail".
    if (!isRecord(body.data) || body.data.state !== 'fail') {
      throw new ProviderUnavailableError(`callback: code ${describe(body.code)} without a failed task`);
    }
  }
  const data = body.data;
  const taskId = isRecord(data) ? data.taskId : undefined;
  if (typeof taskId !== 'string' || taskId.length === 0 || taskId.length > 256) {
    throw new ProviderUnavailableError('callback: no taskId');
  }
  const status = parseTaskData(data, 'callback');
  if (status.state === 'fail' && status.failMessage === undefined) {
    const said = envelopeText(body);
    if (said !== undefined) status.failMessage = said;
  }
  return { providerTaskId: taskId, status };
}

/** Callback bodies larger than this are not looked into (a callback is a recordInfo envelope, a few KB). */
const MAX_CALLBACK_BODY_LENGTH = 256 * 1024;

/**
 * The upstream's task id a callback body names (`data.taskId`), or undefined when the body is not such
 * a callback (any shape, any size: the body is untrusted and never fails the callback). Only the id is
 * taken; the task's state always comes from a provider read.
 */
export function callbackProviderTaskId(body: string | null | undefined, base64 = false): string | undefined {
  if (!body || body.length > MAX_CALLBACK_BODY_LENGTH) return undefined;
  const envelope = parseEnvelope(base64 ? Buffer.from(body, 'base64').toString('utf8') : body);
  const taskId = isRecord(envelope?.data) ? envelope.data.taskId : undefined;
  return typeof taskId === 'string' && taskId.length > 0 && taskId.length <= 256 ? taskId : undefined;
}

function parseResultUrls(resultJson: unknown, operation: string): string[] {
  // The protocol sends JSON text; an already-decoded object is accepted too, as some deployments do.
  let result: unknown = resultJson;
  if (typeof resultJson === 'string') {
    try {
      result = JSON.parse(resultJson);
    } catch {
      throw new ProviderUnavailableError(`${operation}: resultJson is not JSON`);
    }
  }
  const all = isRecord(result) ? result.resultUrls : undefined;
  const urls = Array.isArray(all) ? all.slice(0, MAX_RESULT_URLS) : undefined;
  if (!urls || urls.length === 0 || !urls.every(isHttpUrl)) {
    throw new ProviderUnavailableError(`${operation}: success without usable resultUrls`);
  }
  return urls as string[];
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const { protocol } = new URL(value);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}

/** The body as text, or an error once it passes `max` bytes (the rest is not read). */
async function readBounded(response: Response, max: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of response.body) {
    length += chunk.byteLength;
    // Throwing out of the loop cancels the body.
    if (length > max) throw new Error(`answer larger than ${max} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseEnvelope(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length > 0) return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

/** A short, bounded rendering of an unexpected value for an error message. */
function describe(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

/** A create whose answer does not tell whether the upstream created the task (`outcomeUnknown`). */
function unknownOutcome(message: string): ProviderUnavailableError {
  const error = new ProviderUnavailableError(message);
  error.outcomeUnknown = true;
  return error;
}
