/**
 * The triggers of the registry's paced functions (lib/routes.ts, `trigger: 'paced'`: the dispatcher,
 * docs/design/dispatching.md): each is fed by the table's stream (its filters: a task was
 * queued) and by its own SQS queue of delayed wake-up messages (the upstream's capacity freed up).
 * Pacing is a DynamoDB item written with conditions plus SQS's delivery delay: no function sleeps or
 * keeps a timer. The functions themselves, their table and provider grants, are built by
 * ServiceFunctions from the registry; this construct only wires what wakes them and the capacity they
 * keep to.
 */
import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct, type Node } from 'constructs';
import type { ProviderProfile } from '../../functions/core/profiles/profile';
import {
  type CreateRateLimit,
  checkCapacityItemFits,
  formatCreateRateLimit,
  parseCreateRateLimit,
  parseMaxInFlight,
} from '../../functions/core/provider-capacity';
import { MAX_RETRY_AFTER_SECONDS_LIMIT } from '../../functions/core/retry-after';
import {
  DISPATCH_WAKE_QUEUE_URL,
  PROVIDER_CREATE_RATE_LIMIT,
  PROVIDER_MAX_IN_FLIGHT,
  PROVIDER_MAX_RETRY_AFTER_SECONDS,
} from '../../functions/environment/environment';
import { TABLE } from '../../functions/store/table';
import { lambdasTriggeredBy, type PacedDefinition } from '../routes';
import type { ServiceFunctions } from './service-functions';
import { acknowledge, DEAD_LETTER_RETENTION, pascal } from './support';

/** Lambda's rule for an SQS event source: the queue's visibility timeout at least six times the function's timeout. */
export const SQS_VISIBILITY_TIMEOUTS_PER_FUNCTION_TIMEOUT = 6;

/** The upstream's capacity the dispatcher keeps to. */
export interface DispatchCapacity {
  /** New tasks per window; undefined: none declared. */
  readonly createRateLimit?: CreateRateLimit;
  /**
   * The service's tasks in flight at once (sent, not finished); undefined: none declared. Given to the
   * dispatcher, which keeps to it, and to every function that finishes tasks (`needs.finishesTasks`),
   * which take a finished task off the count: only these get `UpdateItem` on `DISPATCH#CAPACITY`.
   */
  readonly maxInFlight?: number;
  /**
   * The longest upstream `Retry-After` the dispatcher honours (s); undefined: the code's default (60).
   * Given to the dispatcher only (`PROVIDER_MAX_RETRY_AFTER_SECONDS`).
   */
  readonly maxRetryAfterSeconds?: number;
}

/**
 * The capacity from the context (`-c providerCreateRateLimit=20/10`, `-c providerMaxInFlight=N`), else
 * the profile's declared one, and the bound on the upstream's `Retry-After`
 * (`-c providerMaxRetryAfterSeconds=N`). Checked here, at synth: a malformed value stops it naming the
 * setting, and so do a rate and cap whose capacity item could outgrow DynamoDB's item size.
 */
export function dispatchCapacityFromContext(node: Node, profile: ProviderProfile): DispatchCapacity {
  const rate = node.tryGetContext('providerCreateRateLimit') ?? profile.capacity?.createRateLimit;
  const cap = node.tryGetContext('providerMaxInFlight') ?? profile.capacity?.maxInFlight;
  const retryAfter = node.tryGetContext('providerMaxRetryAfterSeconds');
  const capacity = {
    ...(rate === undefined || rate === ''
      ? {}
      : { createRateLimit: parseCreateRateLimit(String(rate), 'providerCreateRateLimit') }),
    ...(cap === undefined || cap === '' ? {} : { maxInFlight: parseMaxInFlight(String(cap), 'providerMaxInFlight') }),
  };
  // The dispatcher's capacity item grows with both: refused here, not by DynamoDB once deployed.
  checkCapacityItemFits(capacity, { createRateLimit: 'providerCreateRateLimit', maxInFlight: 'providerMaxInFlight' });
  return {
    ...(retryAfter === undefined || retryAfter === ''
      ? {}
      : { maxRetryAfterSeconds: parseMaxRetryAfterSeconds(String(retryAfter)) }),
    ...capacity,
  };
}

/** `providerMaxRetryAfterSeconds`: a whole number of seconds from 1 to a day. */
function parseMaxRetryAfterSeconds(text: string): number {
  const value = /^\s*\d{1,6}\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(value) || value < 1 || value > MAX_RETRY_AFTER_SECONDS_LIMIT) {
    throw new Error(
      `providerMaxRetryAfterSeconds must be a whole number from 1 to ${MAX_RETRY_AFTER_SECONDS_LIMIT}; got "${text}"`,
    );
  }
  return value;
}

/** Props of {@link ServiceDispatch}. */
export interface ServiceDispatchProps {
  /** The table whose stream says a task was queued; its stream must carry keys (it carries new images). */
  table: ITable;
  /** The registry's functions: the paced ones are wired here. */
  functions: ServiceFunctions;
  /** The upstream's capacity (see {@link dispatchCapacityFromContext}). */
  capacity: DispatchCapacity;
}

/** The wake-up queues and event sources of the paced functions. */
export class ServiceDispatch extends Construct {
  /** Each paced function's queue of delayed wake-ups, by registry name (`dispatcher`). */
  readonly wakeQueues: ReadonlyMap<string, Queue>;
  /** Each paced function's dead-letter queue of wake-ups it failed on repeatedly, by registry name. */
  readonly wakeDeadLetterQueues: ReadonlyMap<string, Queue>;

  constructor(scope: Construct, id: string, props: ServiceDispatchProps) {
    super(scope, id);
    const wake = new Map<string, Queue>();
    const dead = new Map<string, Queue>();
    for (const definition of lambdasTriggeredBy('paced')) {
      const queues = this.connect(definition, props);
      wake.set(definition.name, queues.wakeQueue);
      dead.set(definition.name, queues.wakeDlq);
    }
    this.wakeQueues = wake;
    this.wakeDeadLetterQueues = dead;
    if (props.capacity.maxInFlight !== undefined) this.capInFlight(props, props.capacity.maxInFlight);
    const rate = props.capacity.createRateLimit;
    // The functions that estimate a queued task's start (GET of a task: `estimatedStartAt`) need the pace.
    for (const [definition, fn] of props.functions.entries()) {
      if (rate && definition.needs.estimatesStart)
        fn.addEnvironment(PROVIDER_CREATE_RATE_LIMIT.name, formatCreateRateLimit(rate));
    }
  }

  /**
   * The cap on tasks in flight, for every function that finishes tasks (the dispatcher among them):
   * `PROVIDER_MAX_IN_FLIGHT`, and `UpdateItem` on the capacity item for those that have no access to it
   * otherwise (a finish removes its task from the item's `running` map, one unconditional `REMOVE`).
   */
  private capInFlight(props: ServiceDispatchProps, maxInFlight: number): void {
    for (const [definition, fn] of props.functions.entries()) {
      if (!definition.needs.finishesTasks) continue;
      fn.addEnvironment(PROVIDER_MAX_IN_FLIGHT.name, String(maxInFlight));
      if (definition.needs.table.keys.includes('DISPATCH#CAPACITY')) continue;
      // Only the in-flight map (`REMOVE running.<taskId>`, store/dispatch-capacity.ts `leaveInFlight`):
      // a bug in a function that finishes tasks (GET, the public provider callback) cannot set the
      // backoff, the slot version or the ring and so halt dispatch. DynamoDB's attribute-level
      // condition, as AWS's own example writes it: the top-level attributes a request names (the key's
      // included) all in the list, and no return of attributes outside it.
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['dynamodb:UpdateItem'],
          resources: [props.table.tableArn],
          conditions: {
            'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['DISPATCH#CAPACITY'] },
            'ForAllValues:StringEquals': { 'dynamodb:Attributes': [TABLE.partitionKey, TABLE.sortKey, 'running'] },
            StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] },
          },
        }),
      );
    }
  }

  /** The dead-letter queue of a paced function's wake-ups. */
  wakeDeadLetterQueueOf(definition: Pick<PacedDefinition, 'name'>): Queue {
    const queue = this.wakeDeadLetterQueues.get(definition.name);
    if (!queue) throw new Error(`${definition.name} is not a paced function`);
    return queue;
  }

  /** The wake-up queue of a paced function. */
  wakeQueueOf(definition: Pick<PacedDefinition, 'name'>): Queue {
    const queue = this.wakeQueues.get(definition.name);
    if (!queue) throw new Error(`${definition.name} is not a paced function`);
    return queue;
  }

  private connect(definition: PacedDefinition, props: ServiceDispatchProps): { wakeQueue: Queue; wakeDlq: Queue } {
    const fn = props.functions.functionOf(definition);
    const name = pascal(definition.name);
    // Wake-ups it failed on repeatedly: the next stream record or wake-up looks at the queue anyway.
    const wakeDlq = new Queue(this, `${name}WakeDlq`, {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    const wakeQueue = new Queue(this, `${name}WakeQueue`, {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Six times the function's timeout, as Lambda asks of an SQS event source: a wake-up received while
      // the function is throttled stays hidden through Lambda's retries instead of coming back at once
      // (issue 38, test/infra/quotas.test.ts; the event source itself refuses less than one timeout).
      visibilityTimeout: Duration.seconds(
        SQS_VISIBILITY_TIMEOUTS_PER_FUNCTION_TIMEOUT * (definition.timeoutSeconds ?? 29),
      ),
      // A wake-up is worth nothing after an hour: the stream or a later wake-up has looked since.
      retentionPeriod: Duration.hours(1),
      deadLetterQueue: { queue: wakeDlq, maxReceiveCount: 5 },
    });
    // Sending its own wake-ups is the one queue action the function's code takes (functions/aws/sqs.ts).
    fn.addToRolePolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [wakeQueue.queueArn] }));
    fn.addEnvironment(DISPATCH_WAKE_QUEUE_URL.name, wakeQueue.queueUrl);
    // The functions that wake it (the sweeper: functions/sweeper/handler.ts) may only send there.
    for (const [other, otherFn] of props.functions.entries()) {
      if (!other.needs.wakesDispatcher) continue;
      otherFn.addToRolePolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [wakeQueue.queueArn] }));
      otherFn.addEnvironment(DISPATCH_WAKE_QUEUE_URL.name, wakeQueue.queueUrl);
    }
    if (props.capacity.createRateLimit) {
      fn.addEnvironment(PROVIDER_CREATE_RATE_LIMIT.name, formatCreateRateLimit(props.capacity.createRateLimit));
    }
    if (props.capacity.maxRetryAfterSeconds !== undefined) {
      fn.addEnvironment(PROVIDER_MAX_RETRY_AFTER_SECONDS.name, String(props.capacity.maxRetryAfterSeconds));
    }
    // A task was queued: every insert matching the filters wakes the function (batched). The queue is in
    // the table, so a record lost or failed costs nothing the next wake-up does not make up for.
    fn.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: StartingPosition.LATEST,
        batchSize: 100,
        retryAttempts: definition.retryAttempts,
        reportBatchItemFailures: true,
        filters: definition.filters.map((filter) => FilterCriteria.filter({ ...filter })),
      }),
    );
    // Capacity freed up: the delayed wake-up, a few at once (every slot is decided by a conditional write).
    fn.addEventSource(
      new SqsEventSource(wakeQueue, {
        batchSize: 1,
        maxConcurrency: definition.wakeConcurrency,
        reportBatchItemFailures: true,
      }),
    );
    acknowledge(
      wakeDlq,
      'AwsSolutions-SQS3',
      `This queue is itself the dead-letter queue of the ${definition.name}'s wake-ups; nothing consumes it automatically`,
    );
    acknowledge(
      fn.executionRole,
      'AwsSolutions-IAM5[Resource::*]',
      'dynamodb:ListStreams, which the stream event source needs, has no resource-level permissions; the read actions (GetRecords, GetShardIterator, DescribeStream) are granted on the table stream only',
    );
    return { wakeQueue, wakeDlq };
  }
}
