/**
 * Metrics in CloudWatch embedded metric format (EMF): a log line that CloudWatch turns into metrics,
 * with no API call on the request path. The stack's alarms read these names.
 */

import type { ErrorCode } from '../core/task';
import { METRICS, readEnv } from '../environment/environment';

export const METRICS_NAMESPACE = 'GenerationService';

/** Every metric the service emits; the CDK stack alarms on some of them by these names. */
export const MetricName = {
  TasksAccepted: 'TasksAccepted',
  TasksCompleted: 'TasksCompleted',
  TasksFailed: 'TasksFailed',
  TasksRefunded: 'TasksRefunded',
  RefundFailures: 'RefundFailures',
  ProviderLatency: 'ProviderLatency',
  ProviderErrors: 'ProviderErrors',
  /** The dispatcher: age of the oldest queued task it saw in a run (0 when nothing was queued). */
  DispatchQueueAge: 'DispatchQueueAge',
  /** With an upstreams list: each upstream's sends by outcome (`sent`, `refused`, `failed`). */
  UpstreamSends: 'UpstreamSends',
  /** With an upstreams list: how long each upstream has been out (s; 0 when in), after every dispatcher run. */
  UpstreamOutSeconds: 'UpstreamOutSeconds',
} as const;
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

type Unit = 'Count' | 'Milliseconds' | 'Seconds';

export type MetricSink = (line: string) => void;

let sink: MetricSink | undefined;

/** Redirects metric lines (tests assert on them; the local stack turns them off). */
export function setMetricSink(next: MetricSink | undefined): void {
  sink = next;
}

function write(line: string): void {
  if (sink) sink(line);
  else if (readEnv(METRICS) !== 'off') process.stdout.write(`${line}\n`);
}

function emit(name: MetricName, value: number, unit: Unit, dimensions: Record<string, string> = {}): void {
  const dimensionKeys = Object.keys(dimensions);
  write(
    JSON.stringify({
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            // The empty set gives the service-wide total; the keyed set the breakdown.
            Dimensions: dimensionKeys.length > 0 ? [[], dimensionKeys] : [[]],
            Metrics: [{ Name: name, Unit: unit }],
          },
        ],
      },
      ...dimensions,
      [name]: value,
    }),
  );
}

/** The metrics the lifecycle records, named by what happened. */
export const metrics = {
  taskAccepted: () => emit(MetricName.TasksAccepted, 1, 'Count'),
  taskCompleted: () => emit(MetricName.TasksCompleted, 1, 'Count'),
  taskFailed: (errorCode: ErrorCode) => emit(MetricName.TasksFailed, 1, 'Count', { ErrorCode: errorCode }),
  taskRefunded: () => emit(MetricName.TasksRefunded, 1, 'Count'),
  refundFailed: () => emit(MetricName.RefundFailures, 1, 'Count'),
  providerCall: (operation: 'createTask' | 'getTask', ms: number, ok: boolean) => {
    emit(MetricName.ProviderLatency, ms, 'Milliseconds', { Operation: operation });
    if (!ok) emit(MetricName.ProviderErrors, 1, 'Count', { Operation: operation });
  },
  dispatchQueueAge: (ms: number) => emit(MetricName.DispatchQueueAge, Math.max(0, ms), 'Milliseconds'),
  upstreamSend: (upstream: string, outcome: string) =>
    emit(MetricName.UpstreamSends, 1, 'Count', { Upstream: upstream, Outcome: outcome }),
  upstreamOut: (upstream: string, seconds: number) =>
    emit(MetricName.UpstreamOutSeconds, Math.max(0, seconds), 'Seconds', { Upstream: upstream }),
};
