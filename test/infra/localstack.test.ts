/**
 * The LocalStack variant (`-c localstack=true`), with an existing provider secret and alarm e-mail:
 * no authorizer, inline authorization, nothing retained. Bundling is skipped here (stack.test.ts
 * covers the bundles).
 */
import { Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ROUTES, SWEEPER } from '../../lib/routes';
import {
  actionsOf,
  cleanUp,
  functionLogicalId,
  logicalIdOf,
  type SynthesizedService,
  statementsOfFunction,
  synthesize,
} from './support';

let service: SynthesizedService;

beforeAll(() => {
  service = synthesize(
    {
      localstack: 'true',
      providerSecretName: 'team/provider-key',
      alarmEmail: 'ops@example.com',
      providerBaseUrl: 'http://host.docker.internal:3001',
    },
    { bundle: false },
  );
}, 180_000);

afterAll(() => {
  cleanUp(service);
});

test('routes have no authorizer and their functions authorize inline', () => {
  // Act
  const methods = Object.values(service.template.findResources('AWS::ApiGateway::Method'));

  // Assert
  service.template.resourceCountIs('AWS::ApiGateway::Authorizer', 0);
  expect(methods).toHaveLength(ROUTES.length);
  for (const method of methods) expect(method.Properties.AuthorizationType).toBe('NONE');
  for (const route of ROUTES) {
    const fn = service.stack.functions.get(route.name);
    const id = fn ? logicalIdOf(service, fn) : '';
    expect(service.template.toJSON().Resources[id].Properties.Environment.Variables).toMatchObject({
      INLINE_AUTHORIZER: 'true',
      ...(route.needs.provider ? { PROVIDER_BASE_URL: 'http://host.docker.internal:3001' } : {}),
    });
    // Checking credentials inline means touching what the authorizer touches too, and nothing more.
    if (route.needs.table.access === 'none') continue;
    const table = statementsOfFunction(service.template, id).find((statement) =>
      actionsOf([statement]).includes('dynamodb:GetItem'),
    );
    const keys = (table?.Condition as Record<string, Record<string, string[]>> | undefined)?.[
      'ForAllValues:StringLike'
    ]?.['dynamodb:LeadingKeys'];
    expect(keys).toEqual(expect.arrayContaining(['USER#*', 'APIKEY#*', 'SESSION#*']));
    // DISPATCH#QUEUE: the submit functions put the task's entry in the dispatch queue.
    expect(keys?.every((pattern) => /^(?:(?:USER|APIKEY|SESSION|KEYID|INVITE)#\*|DISPATCH#QUEUE)$/.test(pattern))).toBe(
      true,
    );
  }
});

test("functions run on the host's architecture, so LocalStack needs no emulation", () => {
  // Act
  const architectures = Object.values(service.template.findResources('AWS::Lambda::Function'))
    // The service's own functions (CDK's custom-resource providers run on a runtime CDK picks).
    .filter((fn) => String(fn.Properties.Description ?? '').startsWith('generation-service '))
    .map((fn) => fn.Properties.Architectures ?? ['x86_64']);

  // Assert
  expect(architectures).toHaveLength(ROUTES.length + 5); // and the authorizer, the sweeper, the two workers, the dispatcher
  for (const architecture of architectures) {
    expect(architecture).toEqual([process.arch === 'arm64' ? 'arm64' : 'x86_64']);
  }
});

test('the account-level API Gateway CloudWatch role is not created', () => {
  // Assert
  service.template.resourceCountIs('AWS::ApiGateway::Account', 0);
});

test('nothing is retained: no deletion protection, buckets emptied on delete', () => {
  // Assert
  service.template.hasResource('AWS::DynamoDB::Table', {
    DeletionPolicy: 'Delete',
    Properties: { DeletionProtectionEnabled: false },
  });
  for (const bucket of Object.values(service.template.findResources('AWS::S3::Bucket'))) {
    expect(bucket.DeletionPolicy).toBe('Delete');
  }
  service.template.resourceCountIs('Custom::S3AutoDeleteObjects', 2);
});

test('a secret named in context is referenced, not created, and granted by its name pattern', () => {
  // Act
  const statements = statementsOfFunction(service.template, functionLogicalId(service, SWEEPER.name));
  const secret = statements.find((statement) => actionsOf([statement]).includes('secretsmanager:GetSecretValue'));
  const created = Object.keys(service.template.findResources('AWS::SecretsManager::Secret'));

  // Assert: the only secrets the stack makes are its own (callback signing, webhook secrets' sealing key)
  expect(created).toEqual([
    expect.stringMatching(/^ProviderCallbackSecret/),
    expect.stringMatching(/^WebhookSecretsKey/),
  ]);
  expect(actionsOf(secret ? [secret] : [])).toEqual(['secretsmanager:GetSecretValue']);
  expect(JSON.stringify(secret?.Resource)).toMatch(
    /:secret:team\/provider-key-\?\?\?\?\?\?"\]\]\},\{"Ref":"ProviderCallbackSecret[0-9A-F]+"\}\]$/,
  );
  expect(SWEEPER.needs.provider).toBe(true);
});

test('alarms notify an SNS topic that only accepts TLS, with the e-mail subscribed', () => {
  // Act
  const alarms = Object.values(service.template.findResources('AWS::CloudWatch::Alarm'));
  const topicId = Object.keys(service.template.findResources('AWS::SNS::Topic'))[0];

  // Assert
  service.template.hasResourceProperties('AWS::SNS::Subscription', {
    Protocol: 'email',
    Endpoint: 'ops@example.com',
    TopicArn: { Ref: topicId },
  });
  service.template.hasResourceProperties('AWS::SNS::TopicPolicy', {
    PolicyDocument: {
      Statement: Match.arrayWith([
        Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      ]),
    },
  });
  expect(alarms.length).toBeGreaterThanOrEqual(7);
  for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
});

test('cdk-nag finds nothing unacknowledged in LocalStack mode either', () => {
  // Act
  const report = new AwsSolutionsChecks(service.app).validateScope(service.app);

  // Assert
  expect(report.violations.map((violation) => violation.ruleName)).toEqual([]);
});
