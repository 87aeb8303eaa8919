/**
 * What an operator watches: the alarms (5xx rate and count, authorizer and sweeper errors, refund
 * failures, timeouts, provider errors, records in the workers' and the dispatcher's dead-letter queues,
 * the age of the dispatch queue), optionally mailed
 * through an SNS topic, and one CloudWatch dashboard showing each alarm against its threshold.
 */
import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  AlarmStatusWidget,
  AlarmWidget,
  ComparisonOperator,
  Dashboard,
  type IAlarmAction,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
// The alarms read the metric names the handlers emit (EMF), from the one module that defines them.
import { METRICS_NAMESPACE, MetricName } from '../../functions/observability/metrics';
import type { ServiceConfig } from '../config';
import { keepFormerLogicalId } from './support';

/** Props of {@link ServiceObservability}. */
export interface ServiceObservabilityProps {
  /** The validated context configuration (see lib/config.ts). */
  config: ServiceConfig;
  /** The API whose 5xx answers are watched. */
  api: RestApi;
  /** The authorizer: each of its errors is an API request answered 500. */
  authorizer: IFunction;
  /** The sweeper: repeated errors mean pending tasks may be stuck. */
  sweeper: IFunction;
  /** The media worker's dead-letter queue. */
  mediaWorkerDlq: IQueue;
  /** The webhook worker's dead-letter queue. */
  webhookWorkerDlq: IQueue;
  /** The dead-letter queue of the dispatcher's wake-ups (lib/constructs/dispatch.ts). */
  dispatcherWakeDlq: IQueue;
  /** With an upstreams list: one alarm per upstream out for minutes (lib/constructs/upstreams.ts). */
  upstreamAlarms?: readonly Alarm[];
}

/** The age of the oldest queued task past which the dispatch queue alarms: ten minutes. */
export const DISPATCH_QUEUE_AGE_ALARM_MS = 600_000;

/** The alarms and the operations dashboard. */
export class ServiceObservability extends Construct {
  /** Every alarm, in the dashboard's order. */
  readonly alarms: readonly Alarm[];
  /** The operations dashboard's name (an output names it). */
  readonly dashboardName: string;

  constructor(scope: Construct, id: string, props: ServiceObservabilityProps) {
    super(scope, id);
    const { config } = props;
    const actions: IAlarmAction[] = [];
    if (config.alarmEmail !== '') {
      const topic = new Topic(this, 'AlarmTopic', { displayName: 'Generation service alarms', enforceSSL: true });
      // Its confirmed e-mail subscription would have to be confirmed again on a new topic.
      keepFormerLogicalId(topic);
      // SNS answers a second subscription of the address with the first, which deleting the old one ends.
      keepFormerLogicalId(topic.addSubscription(new EmailSubscription(config.alarmEmail)));
      actions.push(new SnsAction(topic));
    }
    const fiveMinutes = Duration.minutes(5);
    const custom = (metricName: MetricName, period: Duration, dimensionsMap?: Record<string, string>) =>
      new Metric({ namespace: METRICS_NAMESPACE, metricName, dimensionsMap, statistic: 'Sum', period });
    /** An alarm on one breach of `threshold` or more, where no data means nothing happened. */
    const atLeast = (alarmId: string, alarmDescription: string, metric: IMetric, threshold: number) =>
      new Alarm(this, alarmId, {
        alarmDescription,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    const visibleMessages = (queue: IQueue) =>
      queue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' });

    this.alarms = [
      new Alarm(this, 'Api5xxRateAlarm', {
        alarmDescription: 'More than 5% of API requests failed with 5xx (over at least 20 requests) for 3 minutes',
        metric: new MathExpression({
          expression: 'IF(requests >= 20, 100 * errors / requests, 0)',
          usingMetrics: {
            errors: props.api.metricServerError({ statistic: 'Sum', period: Duration.minutes(1) }),
            requests: props.api.metricCount({ statistic: 'Sum', period: Duration.minutes(1) }),
          },
          period: Duration.minutes(1),
          label: '5xx rate (%)',
        }),
        threshold: 5,
        evaluationPeriods: 3,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      atLeast(
        'Api5xxCountAlarm',
        'At least 10 API requests failed with 5xx within 5 minutes',
        props.api.metricServerError({ statistic: 'Sum', period: fiveMinutes }),
        10,
      ),
      atLeast(
        'AuthorizerErrorsAlarm',
        'The authorizer failed: every affected request was answered 500',
        props.authorizer.metricErrors({ statistic: 'Sum', period: fiveMinutes }),
        1,
      ),
      // Two bad periods of three: one failed sweep is covered by the next minute's.
      new Alarm(this, 'SweeperErrorsAlarm', {
        alarmDescription: 'The sweeper failed in 2 of the last 3 five-minute periods: pending tasks may be stuck',
        metric: props.sweeper.metricErrors({ statistic: 'Sum', period: fiveMinutes }),
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      atLeast(
        'RefundFailuresAlarm',
        'A refund could not be written: a customer may be owed credits (see the logs)',
        custom(MetricName.RefundFailures, fiveMinutes),
        1,
      ),
      atLeast(
        'TasksTimingOutAlarm',
        `At least ${config.timeoutAlarmThreshold} tasks failed with TIMEOUT within 15 minutes`,
        custom(MetricName.TasksFailed, Duration.minutes(15), { ErrorCode: 'TIMEOUT' }),
        config.timeoutAlarmThreshold,
      ),
      atLeast(
        'MediaWorkerDlqAlarm',
        'The media worker gave up on a stream record (it is in MediaWorkerDlq): the sweeper copies such a task after 5 minutes; look at the worker logs',
        visibleMessages(props.mediaWorkerDlq),
        1,
      ),
      atLeast(
        'WebhookWorkerDlqAlarm',
        'The webhook worker gave up on a stream record (it is in WebhookWorkerDlq): a task may not have opened its webhook delivery; look at the worker logs',
        visibleMessages(props.webhookWorkerDlq),
        1,
      ),
      atLeast(
        'DispatcherWakeDlqAlarm',
        "The dispatcher failed on a wake-up 5 times (it is in the dispatcher's WakeDlq): queued tasks wait for the next task queued to wake it; look at the dispatcher logs",
        visibleMessages(props.dispatcherWakeDlq),
        1,
      ),
      new Alarm(this, 'DispatchQueueAgeAlarm', {
        alarmDescription: `A task has waited in the dispatch queue for more than ${DISPATCH_QUEUE_AGE_ALARM_MS / 60_000} minutes (the dispatcher's DispatchQueueAge): the upstream's capacity or the cap on tasks in flight is short of the demand, or the dispatcher is stuck`,
        metric: new Metric({
          namespace: METRICS_NAMESPACE,
          metricName: MetricName.DispatchQueueAge,
          statistic: 'Maximum',
          period: fiveMinutes,
        }),
        threshold: DISPATCH_QUEUE_AGE_ALARM_MS,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        // The dispatcher runs only when something is queued or it waits: no data is no queue.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      atLeast(
        'ProviderErrorsAlarm',
        `At least ${config.providerErrorAlarmThreshold} provider calls failed within 5 minutes`,
        custom(MetricName.ProviderErrors, fiveMinutes),
        config.providerErrorAlarmThreshold,
      ),
      ...(props.upstreamAlarms ?? []),
    ];
    for (const alarm of this.alarms) alarm.addAlarmAction(...actions);

    // One page for what the alarms watch: each alarm's metric against its threshold, and the state of all.
    this.dashboardName = `${config.stackName}-operations`;
    const dashboard = new Dashboard(this, 'OperationsDashboard', {
      dashboardName: this.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    // Named: a replacement would create the new dashboard under the same name, then delete it with the old.
    keepFormerLogicalId(dashboard);
    dashboard.addWidgets(new AlarmStatusWidget({ title: 'Alarms', alarms: [...this.alarms], width: 24, height: 3 }));
    for (let at = 0; at < this.alarms.length; at += 3) {
      dashboard.addWidgets(
        ...this.alarms
          .slice(at, at + 3)
          .map((alarm) => new AlarmWidget({ alarm, title: alarm.node.id, width: 8, height: 6 })),
      );
    }
  }
}
