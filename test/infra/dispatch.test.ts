/**
 * The dispatcher's resources (lib/constructs/dispatch.ts, built from the registry's `DISPATCHER`) in the synthesized template: the function fed
 * by the table's stream (queue-entry inserts only) and by its wake-up queue (two at once at most), the
 * upstream's capacity in its environment, the cap on tasks in flight given to it and to every function
 * that finishes tasks (only with a cap), the capacity settings checked at synth, and its two alarms.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { DISPATCHER, DISPATCHER_FILTER, LAMBDAS, ROUTES } from '../../lib/routes';
import { cleanUp, functionLogicalId, type SynthesizedService, synthesize } from './support';

let service: SynthesizedService | undefined;

/**
 * One synth per context for the whole file: a synth takes 10-15 s, and five tests read the default
 * stack. Tests only read the template, so sharing it is safe; the assemblies go when the file ends.
 */
const assemblies = new Map<string, SynthesizedService>();
function synthesizeOnce(context: Record<string, unknown>): SynthesizedService {
  const key = JSON.stringify(context);
  let built = assemblies.get(key);
  if (!built) {
    built = synthesize(context, { bundle: false });
    assemblies.set(key, built);
  }
  return built;
}

afterAll(() => {
  for (const built of assemblies.values()) cleanUp(built);
});

function functionOf(s: SynthesizedService, name: string): { id: string; environment: Record<string, unknown> } {
  const id = functionLogicalId(s, name);
  const fn = s.template.toJSON().Resources[id] as {
    Properties: { Environment: { Variables: Record<string, unknown> } };
  };
  return { id, environment: fn.Properties.Environment.Variables };
}

function dispatcherOf(s: SynthesizedService): { id: string; environment: Record<string, unknown> } {
  return functionOf(s, DISPATCHER.name);
}

/** The functions that finish tasks, the dispatcher among them (the registry's `needs.finishesTasks`). */
const FINISHING = ['get-task', 'provider-callback', 'sweeper', 'media-worker', 'dispatcher'];

describe('the dispatcher', () => {
  test('is woken by inserts of queue entries on the stream and by its delayed wake-up queue, two at once at most', () => {
    // Act
    service = synthesizeOnce({});
    const { id } = dispatcherOf(service);

    // Assert
    service.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: id },
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Table'), 'StreamArn'] },
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify(DISPATCHER_FILTER) }] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    service.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: id },
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('WakeQueue'), 'Arn'] },
      ScalingConfig: { MaximumConcurrency: 2 },
      BatchSize: 1,
    });
    service.template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { maxReceiveCount: 5, deadLetterTargetArn: Match.anyValue() },
      SqsManagedSseEnabled: true,
    });
  });

  test("keeps to the profile's declared capacity (kie: 20 per 10 s) and may send itself wake-ups", () => {
    // Act
    service = synthesizeOnce({ providerProfile: 'kie' });
    const { environment } = dispatcherOf(service);

    // Assert
    expect(environment).toMatchObject({
      PROVIDER_CREATE_RATE_LIMIT: '20/10',
      DISPATCH_WAKE_QUEUE_URL: { Ref: expect.stringMatching(/WakeQueue/) },
      // Every send carries the callback URL: the dispatcher knows the public origin.
      PROVIDER_CALLBACK_BASE_URL: expect.anything(),
    });
    expect(environment).not.toHaveProperty('PROVIDER_MAX_IN_FLIGHT');
  });

  test('takes the capacity from the context over the profile', () => {
    // Act
    service = synthesizeOnce({ providerCreateRateLimit: '5/1', providerMaxInFlight: '8' });
    const { environment } = dispatcherOf(service);

    // Assert
    expect(environment).toMatchObject({ PROVIDER_CREATE_RATE_LIMIT: '5/1', PROVIDER_MAX_IN_FLIGHT: '8' });
  });

  test("gives the bound on the upstream's Retry-After to the dispatcher only when configured", () => {
    // Act
    const bounded = synthesizeOnce({ providerMaxRetryAfterSeconds: '30' });
    const withBound = LAMBDAS.filter(
      (definition) => 'PROVIDER_MAX_RETRY_AFTER_SECONDS' in functionOf(bounded, definition.name).environment,
    );
    const boundedEnvironment = dispatcherOf(bounded).environment;
    cleanUp(bounded);
    service = synthesizeOnce({});
    const unset = dispatcherOf(service).environment;

    // Assert
    expect(boundedEnvironment).toMatchObject({ PROVIDER_MAX_RETRY_AFTER_SECONDS: '30' });
    expect(withBound).toHaveLength(1);
    expect(unset).not.toHaveProperty('PROVIDER_MAX_RETRY_AFTER_SECONDS');
  });

  test('gives the cap on tasks in flight to the dispatcher and to every function that finishes tasks, only', () => {
    // Act
    const synthesized = synthesizeOnce({ providerMaxInFlight: '8' });
    service = synthesized;
    const capped = LAMBDAS.filter(
      (definition) => 'PROVIDER_MAX_IN_FLIGHT' in functionOf(synthesized, definition.name).environment,
    );

    // Assert
    expect(capped.map((definition) => definition.name).sort()).toEqual([...FINISHING].sort());
    for (const name of FINISHING) {
      expect(functionOf(synthesized, name).environment).toMatchObject({ PROVIDER_MAX_IN_FLIGHT: '8' });
    }
  });

  test('without a cap no function is told one', () => {
    // Act
    const synthesized = synthesizeOnce({});
    service = synthesized;
    const capped = LAMBDAS.filter(
      (definition) => 'PROVIDER_MAX_IN_FLIGHT' in functionOf(synthesized, definition.name).environment,
    );

    // Assert
    expect(capped).toEqual([]);
  });

  test.each([
    [{ providerCreateRateLimit: '20 per 10' }, 'providerCreateRateLimit must be <requests>/<seconds>'],
    [{ providerMaxInFlight: '0' }, 'providerMaxInFlight must be a whole number from 1'],
    [{ providerMaxRetryAfterSeconds: '0' }, 'providerMaxRetryAfterSeconds must be a whole number from 1 to 86400'],
    [{ providerMaxRetryAfterSeconds: '1h' }, 'providerMaxRetryAfterSeconds must be a whole number from 1 to 86400'],
    [
      { providerCreateRateLimit: '6000/10' },
      "providerCreateRateLimit=6000/10 would make the dispatcher's capacity item (DISPATCH#CAPACITY) up to 337 KB, over the 300 KB allowed",
    ],
    [
      { providerCreateRateLimit: '2000/10', providerMaxInFlight: '2000' },
      "providerCreateRateLimit=2000/10 with providerMaxInFlight=2000 would make the dispatcher's capacity item (DISPATCH#CAPACITY) up to 368 KB",
    ],
  ])(
    'refuses a malformed capacity, or one whose capacity item could outgrow DynamoDB, at synth: %o',
    (context, message) => {
      // Act
      const attempt = () => synthesize(context, { bundle: false });

      // Assert
      expect(attempt).toThrow(message);
    },
  );

  test("alarms when a wake-up lands in its dead-letter queue and when the dispatch queue's oldest task is over 10 minutes old", () => {
    // Act
    service = synthesizeOnce({});
    const alarms = Object.values(service.template.findResources('AWS::CloudWatch::Alarm')).map(
      (alarm) => alarm.Properties,
    );
    const wakeDlq = alarms.filter(
      (alarm) =>
        alarm.MetricName === 'ApproximateNumberOfMessagesVisible' &&
        JSON.stringify(alarm.Dimensions).includes('DispatcherWakeDlq'),
    );
    const queueAge = alarms.filter((alarm) => alarm.MetricName === 'DispatchQueueAge');

    // Assert
    expect(wakeDlq).toEqual([
      expect.objectContaining({
        Namespace: 'AWS/SQS',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Dimensions: [
          {
            Name: 'QueueName',
            Value: { 'Fn::GetAtt': [expect.stringMatching(/^DispatchDispatcherWakeDlq/), 'QueueName'] },
          },
        ],
      }),
    ]);
    expect(queueAge).toEqual([
      expect.objectContaining({
        Namespace: 'GenerationService',
        Statistic: 'Maximum',
        Threshold: 600_000,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      }),
    ]);
    // The wake-up queue sends what it failed on 5 times to that dead-letter queue.
    service.template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: {
        maxReceiveCount: 5,
        deadLetterTargetArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^DispatchDispatcherWakeDlq'), 'Arn'] },
      },
    });
  });
});

describe('the queue bound', () => {
  const submitEnvironments = (s: SynthesizedService) =>
    ROUTES.filter((route) => route.needs.queuesTasks).map((route) => {
      const fn = s.template.toJSON().Resources[functionLogicalId(s, route.name)] as {
        Properties: { Environment: { Variables: Record<string, unknown> } };
      };
      return fn.Properties.Environment.Variables;
    });

  test('reaches the submit functions from the context (-c maxQueuedTasksPerAccount)', () => {
    // Act
    service = synthesizeOnce({ maxQueuedTasksPerAccount: '25' });
    const environments = submitEnvironments(service);

    // Assert
    expect(environments).toHaveLength(2);
    for (const environment of environments) expect(environment.MAX_QUEUED_TASKS_PER_ACCOUNT).toBe('25');
  });

  test.each(['0', '10001', 'lots'])('refuses maxQueuedTasksPerAccount=%s at synth, naming the setting', (value) => {
    // Act
    const attempt = () => synthesize({ maxQueuedTasksPerAccount: value }, { bundle: false });

    // Assert
    expect(attempt).toThrow('maxQueuedTasksPerAccount must be an integer from 1 to 10000');
  });
});
