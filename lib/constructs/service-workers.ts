/**
 * What runs off the request path: the stream workers (media and webhook), each on its own filtered
 * event source mapping of the table's stream with its dead-letter queue, and the sweeper's schedule.
 * Which function runs on which trigger comes from the registry (lib/routes.ts).
 */
import { Duration, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { EventSourceMapping, FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { STREAM_WORKER_MAPPING } from '../event-lambdas';
import { lambdasTriggeredBy, type StreamDefinition } from '../routes';
import type { ServiceFunctions } from './service-functions';
import {
  acknowledge,
  DEAD_LETTER_RETENTION,
  keepFormerLogicalId,
  keepLogicalIdOfPath,
  pascal,
  topLevelLogicalId,
} from './support';

/** Props of {@link ServiceWorkers}. */
export interface ServiceWorkersProps {
  /** The table whose stream feeds the workers. */
  table: ITable;
  /** The registry's functions: the stream workers and the scheduled ones. */
  functions: ServiceFunctions;
}

/** The stream workers' mappings and dead-letter queues, and the schedules. */
export class ServiceWorkers extends Construct {
  /** Each stream worker's dead-letter queue, by registry name (`media-worker`, `webhook-worker`). */
  readonly deadLetterQueues: ReadonlyMap<string, Queue>;

  constructor(scope: Construct, id: string, props: ServiceWorkersProps) {
    super(scope, id);
    const queues = new Map<string, Queue>();
    for (const worker of lambdasTriggeredBy('stream')) queues.set(worker.name, this.connect(worker, props));
    this.deadLetterQueues = queues;

    for (const scheduled of lambdasTriggeredBy('schedule')) {
      new Rule(this, `${pascal(scheduled.name)}Schedule`, {
        description: scheduled.description,
        schedule: Schedule.rate(Duration.minutes(scheduled.rateMinutes)),
        // A missed tick is covered by the next one, so stale or failed invocations are not retried.
        targets: [
          new LambdaFunction(props.functions.functionOf(scheduled), {
            retryAttempts: 0,
            maxEventAge: Duration.minutes(scheduled.rateMinutes),
          }),
        ],
      });
    }
  }

  /** The dead-letter queue of a stream worker. */
  deadLetterQueueOf(worker: Pick<StreamDefinition, 'name'>): Queue {
    const queue = this.deadLetterQueues.get(worker.name);
    if (!queue) throw new Error(`${worker.name} is not a stream worker`);
    return queue;
  }

  /**
   * A worker's event source mapping: only the stream records its filters keep invoke it; a batch that
   * throws is split in two until the bad record is alone (bisect), records the worker reports are
   * retried alone, and after the retries they go to the dead-letter queue (the sweeper takes up a task
   * whose copy or delivery was lost that way). The stream serves two readers at full speed.
   */
  private connect(worker: StreamDefinition, props: ServiceWorkersProps): Queue {
    const fn = props.functions.functionOf(worker);
    const dlq = new Queue(this, `${pascal(worker.name)}Dlq`, {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    // A queue replaced would lose the records parked in it.
    keepFormerLogicalId(dlq);
    const source = new DynamoEventSource(props.table, {
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: STREAM_WORKER_MAPPING.batchSize,
      bisectBatchOnError: STREAM_WORKER_MAPPING.bisectBatchOnError,
      reportBatchItemFailures: true,
      retryAttempts: worker.retryAttempts,
      maxRecordAge: Duration.hours(1),
      parallelizationFactor: STREAM_WORKER_MAPPING.parallelizationFactor,
      onFailure: new SqsDlq(dlq),
      filters: worker.filters.map((filter) => FilterCriteria.filter({ ...filter })),
    });
    fn.addEventSource(source);
    // The mapping holds the worker's place in the stream: a new one would start again from the trim
    // horizon (a day of records). Its construct id names the table's path, which moved into Data: pin
    // the id it had when the table was `Table` at the stack's top level.
    const mapping = fn.node.children.find((child) => child instanceof EventSourceMapping);
    if (!mapping) throw new Error(`${worker.name} has no event source mapping`);
    const stackId = Stack.of(this).node.id;
    keepLogicalIdOfPath(mapping, [
      fn.node.id,
      `DynamoDBEventSource:${topLevelLogicalId([stackId, 'Table'])}`,
      'Resource',
    ]);
    acknowledge(
      dlq,
      'AwsSolutions-SQS3',
      `This queue is itself the dead-letter queue of the ${worker.name.replace('-', ' ')}; nothing consumes it automatically`,
    );
    acknowledge(
      fn.executionRole,
      'AwsSolutions-IAM5[Resource::*]',
      'dynamodb:ListStreams, which the stream event source needs, has no resource-level permissions; the read actions (GetRecords, GetShardIterator, DescribeStream) are granted on the table stream only',
    );
    return dlq;
  }
}
