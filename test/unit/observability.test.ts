import { createLogger, setLogSink } from '../../functions/observability/logger';
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
