/**
 * What DynamoDB Local never does (transaction conflicts, throttling, network faults), simulated with
 * aws-sdk-client-mock: each must be retried a bounded number of times or surface unchanged.
 */
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { InsufficientCreditsError, ServiceBusyError } from '../../functions/core/errors';
import { acceptTask } from '../../functions/money/accept';
import { backoffDelay, isRetryable, type RetryingStoreContext, withRetry } from '../../functions/store/errors';
import { claimRefresh, getTask } from '../../functions/store/tasks';

const meta = { $metadata: {} };
const conflict = () => new TransactionConflictException({ ...meta, message: 'conflict' });
const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({
    ...meta,
    message: 'cancelled',
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

const task = {
  userId: 'u1',
  taskId: 't1',
  type: 'image' as const,
  model: 'image-model-1',
  prompt: 'p',
  request: {},
  creditsUsed: 3,
  now: new Date('2026-11-01T00:00:00Z'),
};

describe('store retries', () => {
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({ region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
  );
  const ddb = mockClient(doc);
  let delays: number[];
  let ctx: RetryingStoreContext;

  beforeEach(() => {
    ddb.reset();
    delays = [];
    ctx = {
      doc,
      tableName: 'table',
      retry: {
        maxAttempts: 4,
        random: () => 0.5,
        sleep: async (ms) => {
          delays.push(ms);
        },
      },
    };
  });

  afterAll(() => {
    ddb.restore();
  });

  it('retries an accept after TransactionConflictException and then succeeds', async () => {
    // Prepare
    ddb.on(TransactWriteCommand).rejectsOnce(conflict()).rejectsOnce(conflict()).resolves({});

    // Act
    const result = await acceptTask(ctx, { task });

    // Assert
    expect(result.replayed).toBe(false);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(3);
    expect(delays).toEqual([12, 25]);
  });

  it('retries an accept cancelled with a TransactionConflict reason', async () => {
    // Prepare
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(cancelled('None', 'TransactionConflict', 'None'))
      .resolves({});

    // Act
    const result = await acceptTask(ctx, { task });

    // Assert
    expect(result.task.taskId).toBe('t1');
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(2);
  });

  it('gives up after maxAttempts with ServiceBusyError (503), keeping the conflict as its cause', async () => {
    // Prepare
    const error = conflict();
    ddb.on(TransactWriteCommand).rejects(error);
    ddb.on(QueryCommand).resolves({ Items: [{ SK: 'ACCOUNT', balance: 10 }] });

    // Act
    const accept = acceptTask(ctx, { task });

    // Assert
    await expect(accept).rejects.toBeInstanceOf(ServiceBusyError);
    await expect(accept).rejects.toMatchObject({ retryAfterSeconds: 1, cause: error });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(4);
    expect(delays).toHaveLength(3);
  });

  it('answers 402, not 503, when the account can no longer pay once the tries are spent', async () => {
    // Prepare: every try conflicts, and meanwhile other accepts spent the balance down to 2.
    ddb.on(TransactWriteCommand).rejects(conflict());
    ddb.on(QueryCommand).resolves({ Items: [{ SK: 'ACCOUNT', balance: 2 }] });

    // Act
    const accept = acceptTask(ctx, { task });

    // Assert
    await expect(accept).rejects.toEqual(new InsufficientCreditsError(3, 2));
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(4);
  });

  it('retries a conflict on the balance shard at once on another shard, without waiting', async () => {
    // Prepare: the shard (item 0) is held by another transaction twice.
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(cancelled('TransactionConflict', 'None', 'None'))
      .rejectsOnce(cancelled('TransactionConflict', 'None', 'None'))
      .resolves({});
    // Always the first candidate: a shard once found held is left out of the next picks.
    ctx.retry = { ...ctx.retry, random: () => 0 };

    // Act
    const result = await acceptTask(ctx, { task });

    // Assert
    expect(result.replayed).toBe(false);
    const shardKeys = ddb
      .commandCalls(TransactWriteCommand)
      .map((call) => call.args[0].input.TransactItems?.[0]?.Update?.Key?.SK);
    expect(shardKeys).toEqual(['ACCOUNT', 'ACCOUNT#1', 'ACCOUNT#2']);
    expect(delays).toEqual([]);
  });

  it('maps a cancellation after retries to the domain error of its final reasons', async () => {
    // Prepare
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(cancelled('ThrottlingError', 'None', 'None'))
      .rejectsOnce(
        new TransactionCanceledException({
          ...meta,
          message: 'cancelled',
          CancellationReasons: [{ Code: 'ConditionalCheckFailed', Item: { balance: { N: '2' } } }, { Code: 'None' }],
        }),
      );

    ddb.on(QueryCommand).resolves({ Items: [{ SK: 'ACCOUNT', balance: 2 }] });
    // The key guard a refusal reads instead of trying again: not ended.
    ddb.on(GetCommand).resolves({});

    // Act
    const accept = acceptTask(ctx, { task });

    // Assert: the short shard leads to reading all shards; their total decides the 402, after a read
    // of what would outrank it and no third try.
    await expect(accept).rejects.toEqual(new InsufficientCreditsError(3, 2));
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(2);
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(1);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(1);
  });

  it.each([
    [
      'ProvisionedThroughputExceededException',
      () => new ProvisionedThroughputExceededException({ ...meta, message: 'slow down' }),
    ],
    ['ThrottlingException', () => new ThrottlingException({ ...meta, message: 'slow down' })],
    ['RequestLimitExceeded', () => new RequestLimitExceeded({ ...meta, message: 'slow down' })],
  ])(
    'leaves %s to the SDK retry strategy instead of multiplying its attempts, then answers busy',
    async (_name, throttled) => {
      // Prepare: the mock answers below the SDK's retry middleware, so exactly one call means the store
      // added no retry loop of its own on top of the SDK's.
      const error = throttled();
      ddb
        .on(UpdateCommand)
        .rejectsOnce(error)
        .resolves({ Attributes: { taskId: 't1', attempts: 1 } });

      // Act
      const claim = claimRefresh(ctx, { userId: 'u1', taskId: 't1', now: task.now, intervalMs: 30_000 });

      // Assert: 503 with Retry-After, the throttling kept as its cause, never a 500
      await expect(claim).rejects.toBeInstanceOf(ServiceBusyError);
      await expect(claim).rejects.toMatchObject({ status: 503, cause: error });
      expect(ddb.commandCalls(UpdateCommand)).toHaveLength(1);
      expect(delays).toEqual([]);
    },
  );

  it('does not retry a lost claim (a condition is an answer, not a fault)', async () => {
    // Prepare
    ddb.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ ...meta, message: 'lost' }));

    // Act
    const claimed = await claimRefresh(ctx, { userId: 'u1', taskId: 't1', now: task.now, intervalMs: 30_000 });

    // Assert
    expect(claimed).toBeUndefined();
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(1);
  });

  it('lets a network fault surface unchanged, without retrying on top of the SDK', async () => {
    // Prepare
    const fault = Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET' });
    ddb.on(GetCommand).rejects(fault);

    // Act
    const read = getTask(ctx, 'u1', 't1');

    // Assert
    await expect(read).rejects.toBe(fault);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(1);
    expect(delays).toEqual([]);
  });
});

describe('isRetryable', () => {
  it.each([
    ['TransactionConflictException', true, conflict()],
    ['cancelled by a conflict', true, cancelled('ConditionalCheckFailed', 'TransactionConflict')],
    ['cancelled by throttling', true, cancelled('None', 'ThrottlingError')],
    ['cancelled by a condition', false, cancelled('ConditionalCheckFailed', 'None')],
    ['ThrottlingException (the SDK retries it)', false, new ThrottlingException({ ...meta, message: 'slow down' })],
    ['a plain error', false, new Error('boom')],
    ['not an error', false, 'boom'],
  ])('%s -> retryable %p', (_label, expected, error) => {
    // Act
    const retryable = isRetryable(error);

    // Assert
    expect(retryable).toBe(expected);
  });
});

describe('backoffDelay (full jitter)', () => {
  it('stays below the exponential bound and the cap', () => {
    // Prepare
    const options = { baseDelayMs: 10, maxDelayMs: 100, random: () => 0.999 };

    // Act
    const delays = [1, 2, 3, 4, 5, 6].map((retry) => backoffDelay(retry, options));

    // Assert
    expect(delays).toEqual([9, 19, 39, 79, 99, 99]);
    expect(backoffDelay(3, { ...options, random: () => 0 })).toBe(0);
  });
});

describe('withRetry', () => {
  it('calls once and rethrows an error that is not transient', async () => {
    // Prepare
    const operation = jest.fn(async () => {
      throw new Error('bad request');
    });

    // Act
    const run = withRetry(operation, { sleep: async () => {} });

    // Assert
    await expect(run).rejects.toThrow('bad request');
    expect(operation).toHaveBeenCalledTimes(1);
  });
});
