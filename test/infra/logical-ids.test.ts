/**
 * Resources holding data keep the logical ids the stack gave them before it was split into constructs
 * (lib/constructs/), so an existing deployment updates them in place: CloudFormation would replace a
 * resource whose logical id changed, with a new, empty table, bucket, queue, secret or log group, or
 * fail on (or delete) one with a fixed name. The ids below were read from `cdk synth` of the stack as
 * it was before the split (commit d06ce38); those of resources added since, from their first synth.
 */
import { cleanUp, type SynthesizedService, synthesize } from './support';

/** [type, logical id] of every stateful resource `cdk synth` made before the split (cdk.json defaults). */
const STATEFUL_BEFORE_SPLIT: readonly (readonly [string, string])[] = [
  ['AWS::DynamoDB::Table', 'TableCD117FA1'],
  ['AWS::S3::Bucket', 'MediaAccessLogsF6B2CA91'],
  ['AWS::S3::Bucket', 'MediaBucketBCBB02BA'],
  ['AWS::SecretsManager::Secret', 'ProviderSecretB148C1D8'],
  ['AWS::SecretsManager::Secret', 'ProviderCallbackSecret0C842C10'],
  ['AWS::SecretsManager::Secret', 'WebhookSecretsKey5C1E05FC'],
  ['AWS::Logs::LogGroup', 'AuthorizerLogsBA5DABC9'],
  ['AWS::Logs::LogGroup', 'SweeperLogs977E0681'],
  ['AWS::Logs::LogGroup', 'MediaWorkerLogs00943B55'],
  ['AWS::SQS::Queue', 'MediaWorkerDlq15105ED1'],
  ['AWS::Logs::LogGroup', 'WebhookWorkerLogs25304BE4'],
  ['AWS::SQS::Queue', 'WebhookWorkerDlqD616884A'],
  ['AWS::Logs::LogGroup', 'SubmitImageLogs2F30FEA0'],
  ['AWS::Logs::LogGroup', 'SubmitVideoLogs3055BB70'],
  ['AWS::Logs::LogGroup', 'GetTaskLogs9FD382DD'],
  ['AWS::Logs::LogGroup', 'ProviderCallbackLogs338E83C6'],
  ['AWS::Logs::LogGroup', 'ListTasksLogsC8084938'],
  ['AWS::Logs::LogGroup', 'GetCreditsLogsA94C559D'],
  ['AWS::Logs::LogGroup', 'ListModelsLogs511776B5'],
  ['AWS::Logs::LogGroup', 'OpenapiLogsB648A49B'],
  ['AWS::Logs::LogGroup', 'AuthSignInLogs284F6D64'],
  ['AWS::Logs::LogGroup', 'AuthCallbackLogs69F770D4'],
  ['AWS::Logs::LogGroup', 'AuthSignOutLogs385AA366'],
  ['AWS::Logs::LogGroup', 'AuthSignOutEverywhereLogsCCB8E374'],
  ['AWS::Logs::LogGroup', 'SessionLogsABAF303F'],
  ['AWS::Logs::LogGroup', 'KeysListLogs1F8E4C9C'],
  ['AWS::Logs::LogGroup', 'KeysCreateLogsB945E18C'],
  ['AWS::Logs::LogGroup', 'KeysRotateLogs79720D3D'],
  ['AWS::Logs::LogGroup', 'KeysRevokeLogs325256D3'],
  ['AWS::Logs::LogGroup', 'AuditLogLogs17831F1F'],
  // Added after the split (issue 27, POST /api/ai/uploads): new, so its id is simply pinned from now on.
  ['AWS::Logs::LogGroup', 'UploadsLogs255BA398'],
  ['AWS::Logs::LogGroup', 'ApiAccessLogsE9DF007D'],
  ['AWS::ApiGateway::RestApi', 'ApiF70053CD'],
  ['AWS::ApiGateway::Stage', 'ApiDeploymentStageprod3EB9684E'],
  ['AWS::ApiGateway::UsagePlan', 'ApiDefaultUsagePlan16C28F8E'],
  ['AWS::Cognito::UserPool', 'UserPool6BA7E5F2'],
  ['AWS::Cognito::UserPoolDomain', 'UserPoolHostedUi3A76E499'],
  ['AWS::Cognito::UserPoolClient', 'UserPoolServiceClientFA8B5585'],
  ['AWS::S3::Bucket', 'DashboardBucket5758873D'],
  ['AWS::SecretsManager::Secret', 'OriginVerifySecret1DED2FB3'],
  ['AWS::CloudFront::Distribution', 'Distribution830FAC52'],
  ['AWS::Logs::LogGroup', 'CustomCDKBucketDeployment8693BB64968944B69AAFB0CC9EB8756C512MiBLogGroup4F3F55A8'],
  ['AWS::SecretsManager::Secret', 'OidcClientSecret79E221D6'],
  ['AWS::CloudWatch::Dashboard', 'OperationsDashboard06307C07'],
  // The workers' places in the table stream (a new mapping would start again from the trim horizon).
  ['AWS::Lambda::EventSourceMapping', 'MediaWorkerDynamoDBEventSourceGenerationServiceTable1F9ABE2D1EDD4903'],
  ['AWS::Lambda::EventSourceMapping', 'WebhookWorkerDynamoDBEventSourceGenerationServiceTable1F9ABE2D22CE4013'],
];

/**
 * Stateful resources added since the split, pinned from their first synth: the dispatcher's (issue 26)
 * log group, its place in the table stream, its wake-up queue (delayed messages in flight) and that
 * queue's dead-letter queue; the cancel route's log group (issue 26); the key and alert routes' log groups.
 */
const STATEFUL_ADDED_SINCE: readonly (readonly [string, string])[] = [
  ['AWS::Logs::LogGroup', 'DispatcherLogsCDE1995F'],
  ['AWS::Logs::LogGroup', 'CancelTaskLogsB74D82CE'],
  // PATCH /api/keys/{keyId} (spend limits).
  ['AWS::Logs::LogGroup', 'KeysUpdateLogs73F8566E'],
  // GET /api/ai/usage.
  ['AWS::Logs::LogGroup', 'GetUsageLogs7CD9A4FC'],
  // GET and PUT /api/account/alerts (account events: the low-balance threshold).
  ['AWS::Logs::LogGroup', 'AccountAlertsGetLogs1A2BA1DC'],
  ['AWS::Logs::LogGroup', 'AccountAlertsUpdateLogs045CE4B9'],
  // GET and PUT /api/account/spend-limit (the account-wide monthly spend limit).
  ['AWS::Logs::LogGroup', 'AccountLimitGetLogsA29B41AA'],
  ['AWS::Logs::LogGroup', 'AccountLimitUpdateLogs4DF3691E'],
  // DELETE /api/ai/tasks/{id}, DELETE /api/ai/uploads/{id} and GET /api/events.
  ['AWS::Logs::LogGroup', 'DeleteTaskLogs8960CBE6'],
  ['AWS::Logs::LogGroup', 'DeleteUploadLogsDBD9F017'],
  ['AWS::Logs::LogGroup', 'ListEventsLogsD8DA7F41'],
  // GET /api/account/export and POST /api/account/close (issue 40).
  ['AWS::Logs::LogGroup', 'AccountExportLogs374D4783'],
  ['AWS::Logs::LogGroup', 'AccountCloseLogs20A75622'],
  // The account's webhook endpoints: /api/webhooks and below (nine routes).
  ['AWS::Logs::LogGroup', 'WebhookEndpointsCreateLogs723E0702'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsDeleteLogs7ECE87F9'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsDeliveriesLogs976BFC80'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsGetLogsC3996E4C'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsListLogsBFA2D936'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsRedeliverLogs722ED6F7'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsRotateLogs3E19D2C9'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsTestLogsD3B096BF'],
  ['AWS::Logs::LogGroup', 'WebhookEndpointsUpdateLogsEA194921'],
  ['AWS::SQS::Queue', 'DispatchDispatcherWakeQueue1AB8FA82'],
  ['AWS::SQS::Queue', 'DispatchDispatcherWakeDlq935286F4'],
  ['AWS::Lambda::EventSourceMapping', 'DispatcherDynamoDBEventSourceGenerationServiceDataTable291CDA8276734F8B'],
  [
    'AWS::Lambda::EventSourceMapping',
    'DispatcherSqsEventSourceGenerationServiceDispatchDispatcherWakeQueueC9DF55A46467F642',
  ],
];

/** The alarm topic and its e-mail subscription (only with `alarmEmail`), as before the split. */
const ALARM_TOPIC_BEFORE_SPLIT: readonly (readonly [string, string])[] = [
  ['AWS::SNS::Topic', 'AlarmTopicD01E77F9'],
  ['AWS::SNS::Subscription', 'AlarmTopicopsexamplecom7B0F70A1'],
];

/** Types whose resources hold data, a place in a stream, or a name or endpoint others rely on. */
const STATEFUL_TYPES = new Set([...STATEFUL_BEFORE_SPLIT, ...ALARM_TOPIC_BEFORE_SPLIT].map(([type]) => type));

function resourcesOf(service: SynthesizedService): [string, string][] {
  const resources = service.template.toJSON().Resources as Record<string, { Type: string }>;
  return Object.entries(resources).map(([id, resource]) => [resource.Type, id]);
}

let service: SynthesizedService;
let withAlarmEmail: SynthesizedService;

beforeAll(() => {
  service = synthesize({}, { bundle: false });
  withAlarmEmail = synthesize({ alarmEmail: 'ops@example.com' }, { bundle: false });
}, 180_000);

afterAll(() => {
  cleanUp(service);
  cleanUp(withAlarmEmail);
});

test('every stateful resource keeps the logical id it had before the split (or was first given), and there is no other', () => {
  // Act
  const stateful = resourcesOf(service).filter(([type]) => STATEFUL_TYPES.has(type));

  // Assert
  expect(stateful.map(([type, id]) => `${type} ${id}`).sort()).toEqual(
    [...STATEFUL_BEFORE_SPLIT, ...STATEFUL_ADDED_SINCE].map(([type, id]) => `${type} ${id}`).sort(),
  );
});

test('the alarm topic and its e-mail subscription keep their logical ids', () => {
  // Act
  const sns = resourcesOf(withAlarmEmail).filter(
    ([type]) => type === 'AWS::SNS::Topic' || type === 'AWS::SNS::Subscription',
  );

  // Assert
  expect(sns.map(([type, id]) => `${type} ${id}`).sort()).toEqual(
    ALARM_TOPIC_BEFORE_SPLIT.map(([type, id]) => `${type} ${id}`).sort(),
  );
});
