/**
 * The dispatcher's AWS resources (README "Dispatching to the provider"): the dispatcher function fed by
 * the table's stream (a task was queued) and by its own SQS queue of delayed wake-up messages (the
 * upstream's capacity freed up). Pacing is a DynamoDB item written with conditions plus SQS's delivery
 * delay: no function sleeps or keeps a timer.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct, type Node } from 'constructs';
import type { ProviderProfile } from '../../functions/core/profiles/profile';
import {
  type CreateRateLimit,
  formatCreateRateLimit,
  parseCreateRateLimit,
  parseMaxInFlight,
} from '../../functions/core/provider-capacity';
import type { GenerationFunction } from '../generation-function';
import { DISPATCHER_FILTER } from '../routes';

/** The upstream's capacity the dispatcher keeps to. */
export interface DispatchCapacity {
  /** New tasks per window; undefined: none declared. */
  readonly createRateLimit?: CreateRateLimit;
  /** Tasks in flight at once; undefined: none declared (not enforced yet, see the README). */
  readonly maxInFlight?: number;
}

/**
 * The capacity from the context (`-c providerCreateRateLimit=20/10`, `-c providerMaxInFlight=N`), else
 * the profile's declared one. Checked here, at synth: a malformed value stops it naming the setting.
 */
export function dispatchCapacityFromContext(node: Node, profile: ProviderProfile): DispatchCapacity {
  const rate = node.tryGetContext('providerCreateRateLimit') ?? profile.capacity?.createRateLimit;
  const cap = node.tryGetContext('providerMaxInFlight') ?? profile.capacity?.maxInFlight;
  return {
    ...(rate === undefined || rate === ''
      ? {}
      : { createRateLimit: parseCreateRateLimit(String(rate), 'providerCreateRateLimit') }),
    ...(cap === undefined || cap === '' ? {} : { maxInFlight: parseMaxInFlight(String(cap), 'providerMaxInFlight') }),
  };
}

export interface DispatchProps {
  /** The dispatcher function, built by the stack from `DISPATCHER` (lib/routes.ts). */
  readonly dispatcherFunction: GenerationFunction;
  /** The service table; its stream must carry new images. */
  readonly table: ITable;
  readonly capacity: DispatchCapacity;
}

/** The dispatcher's event sources and its wake-up queue. */
export class Dispatch extends Construct {
  /** Delayed "look at the queue again" messages the dispatcher sends itself when capacity is spent. */
  readonly wakeQueue: Queue;
  /** Wake-up messages the dispatcher failed on repeatedly (the next stream record or wake-up retries). */
  readonly wakeDlq: Queue;
  readonly dispatcherFunction: GenerationFunction;

  constructor(scope: Construct, id: string, props: DispatchProps) {
    super(scope, id);
    const fn = props.dispatcherFunction;
    this.dispatcherFunction = fn;
    this.wakeDlq = new Queue(this, 'WakeDlq', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.wakeDlq).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the dead-letter queue of the dispatcher wake-ups; nothing consumes it automatically',
    });
    this.wakeQueue = new Queue(this, 'WakeQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // At least the function's timeout, as the event source requires.
      visibilityTimeout: Duration.minutes(2),
      retentionPeriod: Duration.hours(1),
      deadLetterQueue: { queue: this.wakeDlq, maxReceiveCount: 5 },
    });
    this.wakeQueue.grantSendMessages(fn.executionRole);
    fn.addEnvironment('DISPATCH_WAKE_QUEUE_URL', this.wakeQueue.queueUrl);
    if (props.capacity.createRateLimit) {
      fn.addEnvironment('PROVIDER_CREATE_RATE_LIMIT', formatCreateRateLimit(props.capacity.createRateLimit));
    }
    if (props.capacity.maxInFlight !== undefined) {
      fn.addEnvironment('PROVIDER_MAX_IN_FLIGHT', String(props.capacity.maxInFlight));
    }
    // A task was queued: every insert of a queue entry wakes the dispatcher (batched).
    fn.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: StartingPosition.LATEST,
        batchSize: 100,
        retryAttempts: 2,
        reportBatchItemFailures: true,
        filters: [FilterCriteria.filter(DISPATCHER_FILTER as unknown as Record<string, unknown>)],
      }),
    );
    // Capacity freed up: the delayed wake-up. Two at most at once: every slot is decided by a
    // conditional write anyway, so this only keeps the contention on the capacity item low.
    fn.addEventSource(
      new SqsEventSource(this.wakeQueue, { batchSize: 1, maxConcurrency: 2, reportBatchItemFailures: true }),
    );
    // The runtime (AwsSolutions-L1) and the provider secret findings are acknowledged by the stack, as
    // for every function it builds.
    Validations.of(fn.executionRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'dynamodb:ListStreams, which the stream event source needs, has no resource-level permissions; the read actions (GetRecords, GetShardIterator, DescribeStream) are granted on the table stream only',
    });
  }
}
