/**
 * The dispatcher's event sources as deployed (lib/constructs/dispatch.ts), run locally: the other way
 * to drive it beside the fast loop (local/dispatch-loop.ts), chosen by `DISPATCH_DRIVER=deployed`
 * (`npm start`) or by a test. The loop looks every 50 ms and waits to the millisecond, so it hides what
 * AWS does; this driver does what AWS documents instead (docs/design/dispatching.md, "The deployed
 * driver"):
 *
 * - the table's stream, through the mapping's filter (`DISPATCHER_FILTER`: inserts of queue entries
 *   only; an update such as a task put back in the queue wakes no one), read from the newest record
 *   when the driver starts (the mapping's `StartingPosition.LATEST`), one batch at a time per shard
 *   (parallelization factor 1), a failed invocation retried as a batch up to the mapping's
 *   `retryAttempts` (local/stream-poller.ts);
 * - the wake-up queue, an SQS stand-in over HTTP that the dispatcher's own SDK client talks to
 *   (`AWS_ENDPOINT_URL_SQS`): `SendMessage` with `DelaySeconds` a whole number from 0 to 900, anything
 *   else refused as SQS refuses it (`InvalidParameterValue`), the message hidden that many seconds;
 * - the queue's event source: batches of one message, at most the mapping's maximum concurrency
 *   (`wakeConcurrency`) invocations at once, a message in flight hidden for the visibility timeout (the
 *   function's timeout), deleted on success, visible again after the timeout when the invocation threw
 *   or listed it in `batchItemFailures` (ReportBatchItemFailures), moved to the dead-letter queue after
 *   `maxReceiveCount` receives;
 * - each invocation's context: its request id and the time left before the function's timeout.
 *
 * Not modelled: SQS's at-least-once duplicates and its delivery jitter, the Lambda's cold starts,
 * throttling by reserved concurrency, shard splits mid-run, and bisection (the mapping does not set it).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { DISPATCHER, STREAM_WORKER_MAPPING } from '../lib/event-lambdas';
import type { PacedDefinition, StreamDefinition } from '../lib/routes';
import { type StreamPollerOptions, startStreamPoller } from './stream-poller';

/** What an invocation is told, as the Lambda runtime tells it. */
export type InvocationContext = Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>;

/**
 * What a paced function answers its event sources: the items that failed (ReportBatchItemFailures), a
 * stream record's sequence number or an SQS message's id. The dispatcher's answer is one.
 */
export interface PacedResult {
  batchItemFailures?: ReadonlyArray<{ itemIdentifier?: string }>;
}

/** A paced function's handler as its event sources invoke it (stream batches and SQS batches alike). */
export type PacedHandler = (event: DynamoDBStreamEvent | SQSEvent, context?: InvocationContext) => Promise<PacedResult>;

/** SQS's longest `DelaySeconds` (a message timer of 15 minutes). */
export const SQS_MAX_DELAY_SECONDS = 900;

/** The wake-up queue's batch size and redrive (lib/constructs/dispatch.ts: `batchSize`, `maxReceiveCount`). */
const WAKE_BATCH_SIZE = 1;
const WAKE_MAX_RECEIVE_COUNT = 5;

export interface DeployedDriverOptions {
  /** DynamoDB Local itself (its Streams API; the conflict layer speaks only the table API). */
  endpoint: string;
  tableName: string;
  handler: PacedHandler;
  /** The paced function's registry entry: its filters, retries, maximum concurrency, timeout. */
  definition?: PacedDefinition;
  /**
   * Milliseconds of real time per second of SQS's delays and visibility timeouts (default 1000). A test
   * may shrink it, together with the clocks of the code it drives ({@link scaledClock}); the delays'
   * rules (whole seconds, 0 to 900) stay SQS's.
   */
  secondMs?: number;
  /**
   * The function's timeout in ms, which each invocation's `getRemainingTimeInMillis` counts down from
   * (default the definition's `timeoutSeconds`). A test may shorten it to stop runs by their budget.
   */
  timeoutMs?: number;
  host?: string;
  /** The longest idle pause of the stream mapping's poller (local/stream-poller.ts; its default otherwise). */
  maxIdleMs?: number;
  log?: (line: string) => void;
}

/** A `SendMessage` the queue accepted. */
export interface SentMessage {
  body: string;
  delaySeconds: number;
  /** Epoch ms (real time) it was sent. */
  sentAt: number;
}

export interface DeployedDriver {
  /** The wake-up queue's URL (`DISPATCH_WAKE_QUEUE_URL`). */
  queueUrl: string;
  /** The SQS endpoint (`AWS_ENDPOINT_URL_SQS`). */
  sqsEndpoint: string;
  /** The variables that point the handlers' SQS client at this queue. */
  environment(): Record<string, string>;
  /** Every message the queue accepted, in order. */
  sent(): readonly SentMessage[];
  /** Invocations so far, by trigger; `deadLetters`: wake-ups moved to the dead-letter queue. */
  counts(): { stream: number; sqs: number; deadLetters: number; refused: number };
  /** Something was written (the local gateway's requests): the stream's idle pause is cut. */
  nudge(): void;
  stop(): Promise<void>;
}

/**
 * A clock running `1000 / secondMs` times as fast as the real one from now: the clock to give the code
 * a driver with a shrunk `secondMs` drives, so both agree on how long a delay was.
 */
export function scaledClock(secondMs: number): {
  now: () => Date;
  epochMs: () => number;
  /** The scaled time of a real epoch ms (e.g. a {@link SentMessage}'s `sentAt`). */
  at: (realMs: number) => number;
} {
  const start = Date.now();
  const at = (realMs: number) => start + (realMs - start) * (1000 / secondMs);
  return { now: () => new Date(at(Date.now())), epochMs: () => at(Date.now()), at };
}

interface QueuedMessage {
  messageId: string;
  body: string;
  sentAt: number;
  /** Real epoch ms from which a receive may take it. */
  visibleAt: number;
  receiveCount: number;
  firstReceivedAt?: number;
  inFlight: boolean;
}

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    request.on('error', reject);
  });

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

/** Starts the stream mapping, the wake-up queue and its event source. */
export async function startDeployedDriver(options: DeployedDriverOptions): Promise<DeployedDriver> {
  const definition = options.definition ?? DISPATCHER;
  const secondMs = options.secondMs ?? 1000;
  const timeoutMs = options.timeoutMs ?? (definition.timeoutSeconds ?? 29) * 1000;
  const visibilityMs = (definition.timeoutSeconds ?? 29) * secondMs;
  const maxConcurrency = definition.wakeConcurrency;
  const log = options.log ?? (() => undefined);
  const host = options.host ?? '127.0.0.1';
  const messages: QueuedMessage[] = [];
  const sent: SentMessage[] = [];
  const counts = { stream: 0, sqs: 0, deadLetters: 0, refused: 0 };
  const running = new Set<Promise<void>>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const invoke = (event: DynamoDBStreamEvent | SQSEvent): Promise<PacedResult> => {
    const deadline = Date.now() + timeoutMs;
    return options.handler(event, {
      awsRequestId: randomUUID(),
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    });
  };

  // The wake-up queue's event source: takes what is visible while under the maximum concurrency.
  const pump = () => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = undefined;
    const now = Date.now();
    while (running.size < maxConcurrency) {
      const batch = messages.filter((m) => !m.inFlight && m.visibleAt <= now).slice(0, WAKE_BATCH_SIZE);
      if (batch.length === 0) break;
      const job = receive(batch, now).finally(() => {
        running.delete(job);
        pump();
      });
      running.add(job);
    }
    const next = messages.filter((m) => !m.inFlight).reduce((min, m) => Math.min(min, m.visibleAt), Infinity);
    if (Number.isFinite(next)) timer = setTimeout(pump, Math.max(0, next - now));
  };

  async function receive(batch: QueuedMessage[], now: number): Promise<void> {
    for (const message of batch) {
      message.inFlight = true;
      message.receiveCount += 1;
      message.firstReceivedAt ??= now;
    }
    const event: SQSEvent = { Records: batch.map((message) => sqsRecord(message, queueArn)) };
    let failed: Set<string>;
    try {
      counts.sqs += 1;
      const answer = await invoke(event);
      // An empty or missing identifier makes the whole batch a failure, as Lambda reads it.
      const items = answer?.batchItemFailures ?? [];
      failed = items.some((item) => !item.itemIdentifier)
        ? new Set(batch.map((message) => message.messageId))
        : new Set(items.map((item) => item.itemIdentifier ?? ''));
    } catch (error) {
      log(`${definition.name} (SQS) failed: ${(error as Error).message}`);
      failed = new Set(batch.map((message) => message.messageId));
    }
    for (const message of batch) {
      const index = messages.indexOf(message);
      if (!failed.has(message.messageId)) {
        messages.splice(index, 1);
        continue;
      }
      message.inFlight = false;
      // Visible again once the visibility timeout (counted from the receive) has passed.
      message.visibleAt = now + visibilityMs;
      if (message.receiveCount >= WAKE_MAX_RECEIVE_COUNT) {
        messages.splice(index, 1);
        counts.deadLetters += 1;
        log(`${definition.name}: a wake-up failed ${message.receiveCount} times; moved to the dead-letter queue`);
      }
    }
  }

  const server: Server = createServer((request, response) => {
    readBody(request)
      .then((text) => answerSqs(request, response, text))
      .catch((error: unknown) => {
        response.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ __type: 'InternalError', message: (error as Error).message }));
      });
  });

  function refuse(response: ServerResponse, type: string, message: string): void {
    counts.refused += 1;
    log(`SQS refused a request: ${message}`);
    response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': `${type};Sender` });
    response.end(JSON.stringify({ __type: `com.amazonaws.sqs#${type}`, message }));
  }

  function answerSqs(request: IncomingMessage, response: ServerResponse, text: string): void {
    const target = request.headers['x-amz-target'];
    if (target !== 'AmazonSQS.SendMessage') {
      refuse(response, 'UnsupportedOperation', `${String(target)} is not supported by the local queue`);
      return;
    }
    const input = JSON.parse(text) as { QueueUrl?: string; MessageBody?: string; DelaySeconds?: unknown };
    if (input.QueueUrl !== queueUrl) {
      refuse(response, 'QueueDoesNotExist', 'The specified queue does not exist.');
      return;
    }
    const delay = input.DelaySeconds ?? 0;
    if (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > SQS_MAX_DELAY_SECONDS) {
      refuse(
        response,
        'InvalidParameterValue',
        `Value ${String(delay)} for parameter DelaySeconds is invalid. Reason: Must be >= 0 and <= ${SQS_MAX_DELAY_SECONDS}.`,
      );
      return;
    }
    const body = input.MessageBody ?? '';
    const now = Date.now();
    const messageId = randomUUID();
    messages.push({
      messageId,
      body,
      sentAt: now,
      visibleAt: now + delay * secondMs,
      receiveCount: 0,
      inFlight: false,
    });
    sent.push({ body, delaySeconds: delay, sentAt: now });
    response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
    response.end(JSON.stringify({ MessageId: messageId, MD5OfMessageBody: md5(body) }));
    pump();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const sqsEndpoint = `http://${host}:${port}`;
  const queueName = `${definition.name}-wake`;
  const queueUrl = `${sqsEndpoint}/000000000000/${queueName}`;
  const queueArn = `arn:aws:sqs:local:000000000000:${queueName}`;

  // The stream mapping: the same poller as the stream workers', held to one batch at a time.
  const poller = await startStreamPoller({
    endpoint: options.endpoint,
    tableName: options.tableName,
    filter: undefined,
    filters: definition.filters,
    name: `${definition.name} (stream)`,
    maxRetries: definition.retryAttempts,
    maxBatchesInFlight: 1,
    startingPosition: 'LATEST',
    ...(options.maxIdleMs === undefined ? {} : { maxIdleMs: options.maxIdleMs }),
    log,
    handler: async (event) => {
      counts.stream += 1;
      const answer = await invoke(event);
      return {
        batchItemFailures: (answer.batchItemFailures ?? []).map((item) => ({
          itemIdentifier: item.itemIdentifier ?? '',
        })),
      };
    },
  });

  return {
    queueUrl,
    sqsEndpoint,
    environment: () => ({ DISPATCH_WAKE_QUEUE_URL: queueUrl, AWS_ENDPOINT_URL_SQS: sqsEndpoint }),
    sent: () => sent,
    counts: () => ({ ...counts }),
    nudge: () => poller.nudge(),
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await poller.stop();
      await Promise.all(running);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** A message as the SQS event source hands it to the function. */
function sqsRecord(message: QueuedMessage, queueArn: string): SQSRecord {
  return {
    messageId: message.messageId,
    receiptHandle: `${message.messageId}#${message.receiveCount}`,
    body: message.body,
    attributes: {
      ApproximateReceiveCount: String(message.receiveCount),
      SentTimestamp: String(message.sentAt),
      SenderId: 'local',
      ApproximateFirstReceiveTimestamp: String(message.firstReceivedAt ?? message.sentAt),
    },
    messageAttributes: {},
    md5OfBody: md5(message.body),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'local',
  };
}

/**
 * A stream worker's mapping as deployed (lib/constructs/service-workers.ts), for its poller under the
 * deployed driver: batches of `batchSize` records, `parallelizationFactor` batches at once, a failed
 * batch bisected, retried up to the worker's `retryAttempts`.
 */
export function deployedStreamMapping(
  definition: Pick<StreamDefinition, 'retryAttempts'>,
): Pick<StreamPollerOptions, 'batchSize' | 'bisectOnError' | 'maxRetries' | 'maxBatchesInFlight'> {
  return {
    batchSize: STREAM_WORKER_MAPPING.batchSize,
    bisectOnError: STREAM_WORKER_MAPPING.bisectBatchOnError,
    maxRetries: definition.retryAttempts,
    maxBatchesInFlight: STREAM_WORKER_MAPPING.parallelizationFactor,
  };
}
