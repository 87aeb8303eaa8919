/**
 * Media off the request path: a poll that finds the provider done records the results as ready to
 * copy and copies nothing; the media worker, fed the table's real stream records, copies them and
 * completes the task. Exactly once under redelivery: the same stream record handled twice (at once,
 * or by the worker and the sweeper) completes or refunds a task once.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { handler as getTaskHandler } from '../../functions/get-task/handler';
import { copyResults } from '../../functions/lifecycle/copy-results';
import { sweepPendingTasks } from '../../functions/lifecycle/sweep';
import { MediaCopyError } from '../../functions/media/port';
import { handler as mediaWorker, readyTaskOf } from '../../functions/media-worker/handler';
import { logger } from '../../functions/observability/logger';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as submitVideo } from '../../functions/submit-video/handler';
import { MEDIA_WORKER_FILTER } from '../../lib/routes';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { matchesFilter } from '../../local/stream-poller';
import { testEndpoint } from '../support/dynamodb';
import {
  getTaskEvent,
  IMAGE_COST,
  imageRequest,
  invoke,
  type ServiceHarness,
  startServiceHarness,
  storedWhenSent,
  submitEvent,
  type TestUser,
  videoRequest,
} from '../support/service-harness';

jest.setTimeout(30_000);

const INTERVAL_MS = 1000;

describe('the media worker', () => {
  let h: ServiceHarness;
  let streams: DynamoDBStreamsClient;

  beforeAll(async () => {
    // No worker on the stream: each test hands the records to the worker itself.
    h = await startServiceHarness({ refreshIntervalSeconds: INTERVAL_MS / 1000, mediaWorker: false });
    streams = new DynamoDBStreamsClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: testEndpoint() });
  });

  afterAll(async () => {
    streams.destroy();
    await h.dispose();
  });

  /** Submits, then polls once after an interval: the poll finds the provider done. */
  async function readyTask(user: TestUser, providerInput: Record<string, unknown> = {}) {
    const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(providerInput)));
    expect(answer.statusCode).toBe(202);
    const taskId = String(answer.body.taskId);
    await storedWhenSent(h, user.userId, taskId);
    const later = () => new Date(Date.now() + INTERVAL_MS + 100);
    const polled = await h.withClock(later, () => invoke(getTaskHandler, getTaskEvent(user, taskId)));
    return { taskId, polled };
  }

  /** The table's real stream records of one task, oldest first. */
  async function streamRecordsOf(taskId: string): Promise<DynamoDBRecord[]> {
    const table = await h.store.doc.send(new DescribeTableCommand({ TableName: h.store.tableName }));
    const streamArn = table.Table?.LatestStreamArn;
    const stream = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const records: DynamoDBRecord[] = [];
    for (const shard of stream.StreamDescription?.Shards ?? []) {
      const start = await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shard.ShardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      let iterator = start.ShardIterator;
      for (let page = 0; iterator && page < 50; page++) {
        const got = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
        records.push(...((got.Records ?? []) as unknown as DynamoDBRecord[]));
        if ((got.Records ?? []).length === 0) break;
        iterator = got.NextShardIterator;
      }
    }
    return records.filter((record) => record.dynamodb?.NewImage?.taskId?.S === taskId);
  }

  /** The record of the write that made the task's results ready, as the mapping's filter passes it. */
  async function readyRecordOf(taskId: string): Promise<DynamoDBRecord> {
    const ready = (await streamRecordsOf(taskId)).filter(
      (record) => matchesFilter(record, MEDIA_WORKER_FILTER) && readyTaskOf(record) !== undefined,
    );
    expect(ready).toHaveLength(1);
    return ready[0] as DynamoDBRecord;
  }

  async function filesOf(user: TestUser, taskId: string): Promise<string[]> {
    const dir = join(h.mediaDir, 'results', encodeURIComponent(user.userId), taskId);
    return readdir(dir).catch(() => []);
  }

  test('a poll that finds the provider done copies nothing; the worker copies and completes', async () => {
    // Prepare
    const user = await h.createUser(100);
    const downloadsBefore = h.provider.stats.fileDownloads;
    const { taskId, polled } = await readyTask(user, { mockExtraResults: 1 });
    const stored = await getTask(h.store, user.userId, taskId);
    const filesBeforeWorker = await filesOf(user, taskId);

    // Act
    const answer = await mediaWorker({ Records: [await readyRecordOf(taskId)] });

    // Assert: the API answered status 0 and fetched no file; the worker did the copy
    expect(polled.body.status).toBe(0);
    expect(polled.body).not.toHaveProperty('resultsToCopy');
    expect(stored?.resultsToCopy).toHaveLength(1);
    expect(filesBeforeWorker).toEqual([]);
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({ status: 1, resultKeys: [expect.any(String)] });
    expect(await filesOf(user, taskId)).toEqual(['0.png']);
    expect(h.provider.stats.fileDownloads - downloadsBefore).toBe(1);
  });

  test('only the write that made results ready passes the filter and the worker', async () => {
    // Prepare
    const user = await h.createUser(100);
    const { taskId } = await readyTask(user);
    await mediaWorker({ Records: [await readyRecordOf(taskId)] });

    // Act
    const records = await streamRecordsOf(taskId);
    const passed = records.filter((record) => matchesFilter(record, MEDIA_WORKER_FILTER));

    // Assert: accept (INSERT), send, claim, ready, complete -> only "ready" is for the worker
    expect(records.length).toBeGreaterThanOrEqual(4);
    expect(passed).toHaveLength(1);
    expect(readyTaskOf(passed[0] as DynamoDBRecord)).toEqual({ userId: user.userId, taskId });
  });

  test('the same record delivered twice at once completes the task once', async () => {
    // Prepare
    const user = await h.createUser(100);
    const { taskId } = await readyTask(user);
    const record = await readyRecordOf(taskId);

    // Act
    const answers = await Promise.all([
      mediaWorker({ Records: [record] }),
      mediaWorker({ Records: [record] }),
      mediaWorker({ Records: [record, record] }),
    ]);

    // Assert
    expect(answers.every((answer) => answer.batchItemFailures.length === 0)).toBe(true);
    expect((await getTask(h.store, user.userId, taskId))?.status).toBe(1);
    expect((await listLedger(h.store, user.userId)).map((entry) => entry.kind)).toEqual(['grant', 'debit']);
  });

  test('a hopeless copy handled by the worker and the sweeper at once fails and refunds once', async () => {
    // Prepare: a result URL that answers 404; the sweeper considers every waiting copy stale
    const user = await h.createUser(100);
    const { taskId } = await readyTask(user, { mockOutcome: 'broken_result' });
    const record = await readyRecordOf(taskId);
    const lc = h.lifecycle(() => new Date());
    const sweepLc = { ...lc, config: { ...lc.config, copyStaleMs: 0 } };

    // Act
    await Promise.all([
      mediaWorker({ Records: [record] }),
      sweepPendingTasks(sweepLc, logger),
      mediaWorker({ Records: [record] }),
    ]);

    // Assert
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({
      status: 2,
      errorCode: 'STORAGE_ERROR',
      creditsRefunded: true,
    });
    expect((await listLedger(h.store, user.userId)).map((entry) => entry.kind)).toEqual(['grant', 'debit', 'refund']);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 });
  });

  test('a transient copy failure is retried and the task completes', async () => {
    // Prepare: the first copy of the file fails, the second works
    const user = await h.createUser(100);
    const { taskId } = await readyTask(user);
    const lc = h.lifecycle(() => new Date());
    let calls = 0;
    const flaky = {
      ...lc,
      media: {
        ...lc.media,
        copyFromUrl: (...args: Parameters<typeof lc.media.copyFromUrl>) => {
          calls++;
          return calls === 1 ? Promise.reject(new MediaCopyError('connection reset')) : lc.media.copyFromUrl(...args);
        },
      },
    };

    // Act
    const after = await copyResults(flaky, { userId: user.userId, taskId }, logger, { sleep: async () => undefined });

    // Assert
    expect(calls).toBe(2);
    expect(after).toMatchObject({ status: 1, creditsRefunded: false });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 - IMAGE_COST });
  });

  test('a copy nobody did is done by the sweeper once it is stale, and not before', async () => {
    // Prepare
    const user = await h.createUser(100);
    const { taskId } = await readyTask(user);
    const lc = h.lifecycle(() => new Date());

    // Act
    const early = await sweepPendingTasks({ ...lc, config: { ...lc.config, copyStaleMs: 3_600_000 } }, logger);
    const afterEarly = await getTask(h.store, user.userId, taskId);
    // (the poll ran on a clock one interval ahead, so "ready" was recorded then)
    const later = h.lifecycle(() => new Date(Date.now() + 60_000));
    await sweepPendingTasks({ ...later, config: { ...later.config, copyStaleMs: 10_000 } }, logger);

    // Assert
    expect(early.errors).toBe(0);
    expect(afterEarly?.status).toBe(0);
    expect((await getTask(h.store, user.userId, taskId))?.status).toBe(1);
    expect(await filesOf(user, taskId)).toEqual(['0.png']);
  });

  test('a large video result is streamed into storage by the worker, byte for byte', async () => {
    // Prepare: a 6 MiB video from the mock (several chunks, more than one read of the source)
    const user = await h.createUser(100);
    const size = 6 * 1024 * 1024;
    const answer = await invoke(submitVideo, submitEvent('video', user, videoRequest({ mockResultBytes: size })));
    const taskId = String(answer.body.taskId);
    await storedWhenSent(h, user.userId, taskId);
    const later = () => new Date(Date.now() + INTERVAL_MS + 100);
    await h.withClock(later, () => invoke(getTaskHandler, getTaskEvent(user, taskId)));

    // Act
    await mediaWorker({ Records: [await readyRecordOf(taskId)] });

    // Assert
    const stored = await getTask(h.store, user.userId, taskId);
    expect(stored).toMatchObject({ status: 1, resultKeys: [expect.stringMatching(/\.mp4$/)] });
    expect((await stat(join(h.mediaDir, stored?.resultKeys?.[0] ?? 'missing'))).size).toBe(size);
  });
});
