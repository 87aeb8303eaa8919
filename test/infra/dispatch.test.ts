/**
 * The dispatcher's resources (lib/constructs/dispatch.ts, built from the registry's `DISPATCHER`) in the synthesized template: the function fed
 * by the table's stream (queue-entry inserts only) and by its wake-up queue (two at once at most), the
 * upstream's capacity in its environment, and the capacity settings checked at synth.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { DISPATCHER, DISPATCHER_FILTER, ROUTES } from '../../lib/routes';
import { cleanUp, functionLogicalId, type SynthesizedService, synthesize } from './support';

let service: SynthesizedService | undefined;

afterEach(() => {
  cleanUp(service);
  service = undefined;
});

function dispatcherOf(s: SynthesizedService): { id: string; environment: Record<string, unknown> } {
  const id = functionLogicalId(s, DISPATCHER.name);
  const fn = s.template.toJSON().Resources[id] as {
    Properties: { Environment: { Variables: Record<string, unknown> } };
  };
  return { id, environment: fn.Properties.Environment.Variables };
}

describe('the dispatcher', () => {
  test('is woken by inserts of queue entries on the stream and by its delayed wake-up queue, two at once at most', () => {
    // Act
    service = synthesize({}, { bundle: false });
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
    service = synthesize({ providerProfile: 'kie' }, { bundle: false });
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
    service = synthesize({ providerCreateRateLimit: '5/1', providerMaxInFlight: '8' }, { bundle: false });
    const { environment } = dispatcherOf(service);

    // Assert
    expect(environment).toMatchObject({ PROVIDER_CREATE_RATE_LIMIT: '5/1' });
    // The cap on tasks in flight is checked at synth (below) but not enforced yet: no bundle reads it,
    // and the stack sets only what a bundle reads (test/infra/environment.test.ts).
    expect(environment).not.toHaveProperty('PROVIDER_MAX_IN_FLIGHT');
  });

  test.each([
    [{ providerCreateRateLimit: '20 per 10' }, 'providerCreateRateLimit must be <requests>/<seconds>'],
    [{ providerMaxInFlight: '0' }, 'providerMaxInFlight must be a whole number from 1'],
  ])('refuses a malformed capacity at synth: %o', (context, message) => {
    // Act
    const attempt = () => synthesize(context, { bundle: false });

    // Assert
    expect(attempt).toThrow(message);
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
    service = synthesize({ maxQueuedTasksPerAccount: '25' }, { bundle: false });
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
