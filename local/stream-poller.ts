/**
 * The local stand-in for a DynamoDB Streams event source mapping: it reads the table's stream on
 * DynamoDB Local (which implements the Streams API) shard by shard, keeps the records the deployed
 * mapping's filters keep (`MEDIA_WORKER_FILTER`, `WEBHOOK_WORKER_FILTERS`), and invokes the same worker handler with a Lambda
 * stream event. Records the handler reports as failed are handed to it again (up to `maxRetries`
 * times), as the mapping's retries would; after that they are logged, where AWS would send them to the
 * dead-letter queue.
 */

import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from './dynamodb-local';
import { idleBackoff } from './idle-backoff';

/** Batches handed to the worker at once (the deployed mapping runs up to 10 per shard). */
const MAX_BATCHES_IN_FLIGHT = 8;

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | undefined>;

export interface StreamPollerOptions {
  endpoint: string;
  tableName: string;
  handler: StreamHandler;
  /**
   * An event source mapping filter pattern (literal values and `{ exists }` only), or several: a record
   * matching any of them passes, as with a mapping's list of filters.
   */
  filter: unknown;
  filters?: readonly unknown[];
  /** The worker's name, for log lines. */
  name?: string;
  /**
   * Pause after a round of reads that found nothing new (default 100 ms); each further empty round
   * doubles it up to `maxIdleMs` (default 400 ms), and a round with records starts again at `idleMs`
   * (local/idle-backoff.ts).
   */
  idleMs?: number;
  maxIdleMs?: number;
  maxRetries?: number;
  /**
   * Batches handed to the handler at once (default 8, as the workers' mappings' parallelization runs
   * several); 1 for a mapping with the default parallelization factor (one batch per shard at a time).
   */
  maxBatchesInFlight?: number;
  /**
   * Where the shards open at start are read from: `TRIM_HORIZON` (default: every record still in the
   * stream) or `LATEST` (only what is written from now on, as a mapping created with
   * `StartingPosition.LATEST`). Shards that appear later are read from their start either way.
   */
  startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /** The most records handed over in one invocation (default: every record a read returned). */
  batchSize?: number;
  /**
   * A batch whose invocation threw is split in two and each half retried on its own (the mapping's
   * `BisectBatchOnFunctionError`), so one bad record does not hold up the others.
   */
  bisectOnError?: boolean;
  log?: (line: string) => void;
}

export interface StreamPoller {
  /** Something was written: an idle pause is cut to `idleMs`. */
  nudge(): void;
  stop(): Promise<void>;
}

/** Whether a value matches an event filter pattern (the subset the service's filters use). */
export function matchesFilter(value: unknown, pattern: unknown): boolean {
  if (Array.isArray(pattern)) {
    return pattern.some((option) => {
      if (option !== null && typeof option === 'object' && 'exists' in option) {
        return (option as { exists: boolean }).exists === (value !== undefined);
      }
      return value === option;
    });
  }
  if (pattern !== null && typeof pattern === 'object') {
    const record = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
    return Object.entries(pattern).every(([key, inner]) => {
      const exists = Array.isArray(inner) && inner.some((o) => typeof o === 'object' && o !== null && 'exists' in o);
      // `exists: false` must match a missing key; everything else needs the key.
      if (!(key in record) && !exists) return false;
      return matchesFilter(record[key], inner);
    });
  }
  return value === pattern;
}

/** Starts polling; records written from now on (and those still in the stream) reach the handler. */
export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const config = { ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: options.endpoint };
  const dynamodb = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const described = await dynamodb.send(new DescribeTableCommand({ TableName: options.tableName }));
  dynamodb.destroy();
  const streamArn = described.Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`Table ${options.tableName} has no stream`);
  const idleMs = options.idleMs ?? 100;
  const backoff = idleBackoff(idleMs, options.maxIdleMs ?? 400);
  // The shard list is described again at most this often (every second while records come, every ten
  // while none do), or at once when a shard has closed: an idle stack then costs a GetRecords per open
  // shard a round, not a DescribeStream as well (the suite keeps two local stacks idle for most of its
  // run; every read is a request to DynamoDB Local's JVM). New records go to the open shards already read.
  const describeEveryMs = { busy: 1000, idle: 10_000 };
  let lastRoundEmpty = false;
  let describedAt = Number.NEGATIVE_INFINITY;
  const name = options.name ?? 'media worker';
  const patterns = options.filters ?? [options.filter];
  const maxRetries = options.maxRetries ?? 3;
  const maxBatchesInFlight = options.maxBatchesInFlight ?? MAX_BATCHES_IN_FLIGHT;
  let firstDescribe = true;
  const log = options.log ?? (() => undefined);
  const iterators = new Map<string, string | null>();
  const finished = new Set<string>();
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  const sleepers = new Set<() => void>();
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      sleepers.add(done);
    });

  async function discoverShards(): Promise<void> {
    const closed = [...iterators.values()].some((iterator) => iterator === null);
    const every = lastRoundEmpty ? describeEveryMs.idle : describeEveryMs.busy;
    if (!closed && Date.now() - describedAt < every) return;
    describedAt = Date.now();
    // A closed shard has been read to its end: it moves to `finished`, so the map holds only the open
    // ones and the shard (still listed by DescribeStream for a day) is never read again.
    for (const [id, iterator] of iterators) {
      if (iterator === null) {
        iterators.delete(id);
        finished.add(id);
      }
    }
    const stream = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const position = firstDescribe ? (options.startingPosition ?? 'TRIM_HORIZON') : 'TRIM_HORIZON';
    for (const shard of stream.StreamDescription?.Shards ?? []) {
      const id = shard.ShardId;
      if (!id || iterators.has(id) || finished.has(id)) continue;
      // A shard already closed at a LATEST start holds nothing new: it is skipped.
      if (position === 'LATEST' && shard.SequenceNumberRange?.EndingSequenceNumber) {
        finished.add(id);
        continue;
      }
      const iterator = await streams.send(
        new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: id, ShardIteratorType: position }),
      );
      iterators.set(id, iterator.ShardIterator ?? null);
    }
    firstDescribe = false;
  }

  async function deliver(records: StreamRecord[]): Promise<void> {
    const kept = records
      .map((record) => record as unknown as DynamoDBRecord)
      .filter((record) => patterns.some((pattern) => matchesFilter(record, pattern)));
    const size = options.batchSize ?? Math.max(kept.length, 1);
    for (let start = 0; start < kept.length; start += size) await deliverBatch(kept.slice(start, start + size));
  }

  async function deliverBatch(records: DynamoDBRecord[]): Promise<void> {
    let batch = records;
    for (let attempt = 0; batch.length > 0; attempt++) {
      let failed: Set<string>;
      try {
        const answer = await options.handler({ Records: batch });
        failed = new Set((answer?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
      } catch (error) {
        log(`${name} failed: ${(error as Error).message}`);
        if (options.bisectOnError && batch.length > 1) {
          const half = Math.ceil(batch.length / 2);
          await deliverBatch(batch.slice(0, half));
          await deliverBatch(batch.slice(half));
          return;
        }
        failed = new Set(batch.map((record) => record.dynamodb?.SequenceNumber ?? ''));
      }
      // Retried from the first failed record on (ReportBatchItemFailures: Lambda checkpoints before the
      // lowest sequence number reported and retries every record from there), or whole when it threw.
      const firstFailed = batch.findIndex((record) => failed.has(record.dynamodb?.SequenceNumber ?? ''));
      batch = firstFailed < 0 ? [] : batch.slice(firstFailed);
      if (batch.length > 0 && attempt >= maxRetries) {
        log(`${name}: ${batch.length} record(s) failed ${maxRetries + 1} times; dropped (the sweeper takes them up)`);
        return;
      }
      if (batch.length > 0) await sleep(200 * 2 ** attempt);
    }
  }

  const loop = (async () => {
    while (!stopped) {
      try {
        await discoverShards();
        let got = 0;
        for (const [id, iterator] of iterators) {
          if (!iterator || stopped) continue;
          const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
          iterators.set(id, page.NextShardIterator ?? null);
          const records = page.Records ?? [];
          got += records.length;
          if (records.length > 0) {
            // Batches are handled side by side (tasks are independent), as the mapping's
            // parallelization does: a slow copy never holds up the records behind it.
            const job = deliver(records).finally(() => inFlight.delete(job));
            inFlight.add(job);
            if (inFlight.size >= maxBatchesInFlight) await Promise.race(inFlight);
          }
        }
        lastRoundEmpty = got === 0;
        if (got === 0) await backoff.sleep(backoff.nextIdleMs(), true);
        else backoff.reset();
      } catch (error) {
        if (!stopped) log(`stream poller: ${(error as Error).message}`);
        // Iterators do not survive a restart of DynamoDB Local: read every shard again from its start.
        // Records seen before are harmless (the worker skips tasks that are no longer waiting).
        iterators.clear();
        finished.clear();
        describedAt = Number.NEGATIVE_INFINITY;
        await sleep(1000);
      }
    }
  })();

  return {
    nudge: () => backoff.nudge(),
    async stop() {
      stopped = true;
      backoff.cancel();
      for (const wake of [...sleepers]) wake();
      await loop;
      await Promise.all(inFlight);
      streams.destroy();
    },
  };
}
