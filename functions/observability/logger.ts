/**
 * Structured JSON logs, one object per line, as CloudWatch Logs Insights reads them. Small on purpose:
 * every Lambda bundle carries it, and bundle size is measured against a DynamoDB-client-only floor.
 * Callers pass identifiers (request id, user id, key id, task id), never a key.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { _X_AMZN_TRACE_ID, type Env, LOG_LEVEL, readEnv } from '../environment/environment';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (e.g. the request id for one invocation). */
  child(fields: LogFields): Logger;
}

/** Where lines go; tests and the local stack may redirect them. */
export type LogSink = (line: string) => void;

let sink: LogSink = (line) => process.stdout.write(`${line}\n`);

/** Redirects every logger's output (tests, local stack). Returns the previous sink. */
export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

/** What every line of one invocation carries. */
interface Invocation {
  requestId?: string;
  /** The first invocation in this process (a Lambda container's cold start). */
  coldStart: boolean;
  /** The X-Ray trace of the invocation (`Root=` of `_X_AMZN_TRACE_ID`), when tracing is on. */
  traceId?: string;
}

// Per invocation, not per process: the local gateway serves many requests at once in one process.
const invocations = new AsyncLocalStorage<Invocation>();
let invocationCount = 0;

/** The X-Ray trace id Lambda sets for the current invocation, if any. */
export function traceIdFromEnv(env?: Env): string | undefined {
  return /(?:^|;)Root=([^;]+)/.exec(readEnv(_X_AMZN_TRACE_ID, env) ?? '')?.[1];
}

/**
 * Wraps a Lambda handler so that every log line written during an invocation carries its request id,
 * whether it is the process's first (cold start) and the trace id; the provider adapter forwards the
 * same request id as `X-Request-Id`.
 */
export function withInvocation<A extends unknown[], R>(
  handler: (...args: A) => Promise<R>,
  requestIdOf: (...args: A) => string | undefined,
): (...args: A) => Promise<R> {
  return (...args: A) => {
    invocationCount += 1;
    const invocation: Invocation = { coldStart: invocationCount === 1 };
    const requestId = requestIdOf(...args);
    const traceId = traceIdFromEnv();
    if (requestId) invocation.requestId = requestId;
    if (traceId) invocation.traceId = traceId;
    return invocations.run(invocation, () => handler(...args));
  };
}

/** The request id of the invocation being served, if any. */
export function currentRequestId(): string | undefined {
  return invocations.getStore()?.requestId;
}

function levelFromEnv(): Level {
  // A level the contract refuses must not silence the logs that would say so: it reads as info.
  try {
    return readEnv(LOG_LEVEL) ?? 'info';
  } catch {
    return 'info';
  }
}

/** Errors become plain objects so their message and stack survive JSON. */
function serialize(value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, stack: value.stack, cause: serialize(value.cause) };
  }
  return value;
}

export function createLogger(base: LogFields = {}): Logger {
  const threshold = ORDER[levelFromEnv()];
  const write = (level: Level, message: string, fields: LogFields = {}) => {
    if (ORDER[level] < threshold) return;
    const entry: LogFields = { level, time: new Date().toISOString(), message, ...invocations.getStore(), ...base };
    for (const [key, value] of Object.entries(fields)) entry[key] = serialize(value);
    sink(JSON.stringify(entry));
  };
  return {
    debug: (message, fields) => write('debug', message, fields),
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
    child: (fields) => createLogger({ ...base, ...fields }),
  };
}

/** The process-wide root logger. */
export const logger = createLogger({ service: 'generation-service' });
