import {
  createLogger,
  currentRequestId,
  setLogSink,
  traceIdFromEnv,
  withInvocation,
} from '../../functions/observability/logger';
import { METRICS_NAMESPACE, metrics, setMetricSink } from '../../functions/observability/metrics';

describe('metrics in CloudWatch embedded metric format', () => {
  const lines: string[] = [];

  beforeEach(() => {
    lines.length = 0;
    setMetricSink((line) => lines.push(line));
  });

  afterEach(() => {
    setMetricSink(undefined);
  });

  test('a failed task is counted in total and by errorCode, in the namespace the alarms read', () => {
    // Act
    metrics.taskFailed('TIMEOUT');

    // Assert
    expect(lines).toHaveLength(1);
    const document = JSON.parse(lines[0] ?? '{}');
    expect(document._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: METRICS_NAMESPACE,
        Dimensions: [[], ['ErrorCode']],
        Metrics: [{ Name: 'TasksFailed', Unit: 'Count' }],
      },
    ]);
    expect(document).toMatchObject({ ErrorCode: 'TIMEOUT', TasksFailed: 1 });
    expect(typeof document._aws.Timestamp).toBe('number');
  });

  test('a failed provider call records its latency and an error', () => {
    // Act
    metrics.providerCall('getTask', 12.5, false);

    // Assert
    const names = lines.map((line) => JSON.parse(line)._aws.CloudWatchMetrics[0].Metrics[0].Name);
    expect(names).toEqual(['ProviderLatency', 'ProviderErrors']);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ Operation: 'getTask', ProviderLatency: 12.5 });
  });
});

describe('the JSON logger', () => {
  test('writes one JSON object per line with its context fields and a serialized error', () => {
    // Prepare
    const lines: string[] = [];
    const previous = setLogSink((line) => lines.push(line));
    const log = createLogger({ service: 'test' }).child({ requestId: 'r-1', keyId: 'key_1' });

    // Act
    log.error('Something failed', { taskId: 't-1', error: new Error('boom') });
    setLogSink(previous);

    // Assert
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      level: 'error',
      message: 'Something failed',
      service: 'test',
      requestId: 'r-1',
      keyId: 'key_1',
      taskId: 't-1',
      error: { name: 'Error', message: 'boom' },
    });
  });
});

describe('invocation context in every log line', () => {
  test('request id, cold start (first invocation only) and trace id, each invocation its own even when interleaved', async () => {
    // Prepare
    const lines: string[] = [];
    const previous = setLogSink((line) => lines.push(line));
    const log = createLogger({ service: 'test' });
    const saved = process.env._X_AMZN_TRACE_ID;
    process.env._X_AMZN_TRACE_ID = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
    const handler = withInvocation(
      async (_id: string, pause: number) => {
        log.info('start');
        await new Promise((resolve) => setTimeout(resolve, pause));
        log.info('end');
        return currentRequestId();
      },
      (id) => `req-${id}`,
    );

    // Act
    const seen = await Promise.all([handler('a', 20), handler('b', 0)]);
    const outside = currentRequestId();
    log.info('between invocations');
    setLogSink(previous);
    process.env._X_AMZN_TRACE_ID = saved;

    // Assert
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(seen).toEqual(['req-a', 'req-b']);
    expect(outside).toBeUndefined();
    const of = (requestId: string) => parsed.filter((line) => line.requestId === requestId);
    expect(of('req-a').map((line) => line.message)).toEqual(['start', 'end']);
    expect(of('req-a').every((line) => line.traceId === '1-5759e988-bd862e3fe1be46a994272793')).toBe(true);
    expect(
      parsed
        .filter((line) => line.message !== 'between invocations')
        .every((line) => typeof line.coldStart === 'boolean'),
    ).toBe(true);
    expect(
      new Set(parsed.filter((line) => line.coldStart === true).map((line) => line.requestId)).size,
    ).toBeLessThanOrEqual(1);
    expect(of('req-b').some((line) => line.coldStart === false)).toBe(true);
    expect(parsed.at(-1)).toMatchObject({ message: 'between invocations' });
    expect(parsed.at(-1)).not.toHaveProperty('requestId');
  });

  test('the trace id is the Root of _X_AMZN_TRACE_ID, absent without one', () => {
    expect(traceIdFromEnv({ _X_AMZN_TRACE_ID: 'Root=1-abc-def;Parent=1;Sampled=0' })).toBe('1-abc-def');
    expect(traceIdFromEnv({})).toBeUndefined();
  });
});
