/**
 * Least privilege, pinned: every function's IAM statements as a table (function -> the statements its
 * role allows), and the sign-in client's auth flows. A grant added, widened or dropped anywhere changes
 * a line here. Issue 24: API Gateway key and plan grants scoped to this API's plans and to what each
 * function does; no media writes on request paths (and no media at all for submission, which signs no
 * result URL); the model catalog touches no table; the session, key listing and audit log read only
 * the partitions they use; the Cognito client allows no SDK sign-in flow. Issue 26: submission only
 * queues and counts the account's queued tasks (PutItem and Query on DISPATCH#QUEUE, nothing else
 * there); the dispatcher alone sends; it, GET, the cancel and the sweeper delete queue entries
 * (DeleteItem only: the entry of a task that ended while queued); reading a task and the listing read
 * the queue (a queued task's place and stage). With a cap on tasks in flight, the functions that finish
 * tasks may update the capacity item (DISPATCH#CAPACITY) and nothing more there; without one they may not.
 * Issue 27: only the uploads function (PutObject, what its presigned POSTs are authorized as) and
 * submission (inline `data:` images) may store uploads; only submission (the byte check) and the
 * dispatcher (signing at send) may read them.
 */
import { USAGE_PLAN_API_TAG } from '../../functions/aws/usage-plans';
import { LAMBDAS } from '../../lib/routes';
import { statementLines } from './iam-render';
import { cleanUp, functionLogicalId, type SynthesizedService, statementsOfFunction, synthesize } from './support';

const TABLE_AND_INDEXES = '<Table.Arn> <Table.Arn>/index/GSI1 <Table.Arn>/index/GSI2';
/** API Gateway's management ARNs in the synthesized (environment-agnostic) template. */
const API_GATEWAY = 'arn:<AWS::Partition>:apigateway:<AWS::Region>::';

/** Read/write on the table and its indexes, to items whose partition key matches `keys`. */
const readWrite = (keys: string) =>
  `Allow dynamodb:ConditionCheckItem dynamodb:GetItem dynamodb:PutItem dynamodb:Query dynamodb:UpdateItem on ${TABLE_AND_INDEXES} if ForAllValues:StringLike dynamodb:LeadingKeys ${keys}`;
/** Read-only on the table and its indexes, to items whose partition key matches `keys`. */
const readOnly = (keys: string) =>
  `Allow dynamodb:GetItem dynamodb:Query on ${TABLE_AND_INDEXES} if ForAllValues:StringLike dynamodb:LeadingKeys ${keys}`;
/** Writing to the function's own log group. */
const ownLogs = (fn: string) => `Allow logs:CreateLogStream logs:PutLogEvents on <${fn}Logs.Arn>`;
/** Enrolling API keys: create one, find one or the default plan by name, add it to this API's plans. */
const ENROLL = [
  `Allow apigateway:POST on ${API_GATEWAY}/apikeys ${API_GATEWAY}/usageplans/<ApiDefaultUsagePlan>/keys`,
  `Allow apigateway:GET on ${API_GATEWAY}/apikeys ${API_GATEWAY}/usageplans`,
  `Allow apigateway:POST on ${API_GATEWAY}/usageplans/*/keys if StringEquals aws:ResourceTag/${USAGE_PLAN_API_TAG} <Api>`,
];
/** Deleting the API Gateway key of an ended key. */
const DELETE_KEYS = `Allow apigateway:DELETE on ${API_GATEWAY}/apikeys/*`;
/** Finding a key by its name, for a function that deletes keys but enrolls none. */
const FIND_KEYS = `Allow apigateway:GET on ${API_GATEWAY}/apikeys`;
const ACCOUNT_KEYS = 'USER#*,SESSION#*,APIKEY#*,KEYID#*,INVITE#*';
/** Deleting the GATEWAYKEY item of a key whose API Gateway key is settled (store/gateway-keys.ts). */
const DELETE_GATEWAY_KEY_ITEMS =
  'Allow dynamodb:DeleteItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys USER#*';
/** Deleting the queue entry of a task that ended before it reached the provider (finish-task.ts). */
const DELETE_QUEUE_ENTRIES =
  'Allow dynamodb:DeleteItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys DISPATCH#QUEUE';
/** Accepting into the dispatch queue: the accept's queue entry, and counting the account's against the bound. */
const QUEUE_TASKS =
  'Allow dynamodb:PutItem dynamodb:Query on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys DISPATCH#QUEUE';
const LIFECYCLE_SECRETS = 'Allow secretsmanager:GetSecretValue on <ProviderCallbackSecret> <ProviderSecret>';
const READ_RESULTS = 'Allow s3:GetObject on <MediaBucket.Arn>/results/*';
const WRITE_RESULTS = 'Allow s3:GetObject s3:PutObject on <MediaBucket.Arn>/results/*';
/**
 * Issue 27: reading callers' uploads: the submit functions' check of their first bytes, the dispatcher's
 * signed GET URLs for the provider at send. No other function (GET, the callback, the sweeper never send).
 */
const READ_UPLOADS = 'Allow s3:GetObject on <MediaBucket.Arn>/uploads/*';
/**
 * Issue 27: the submit's check of uploads and its inline `data:` images stored as uploads; issue 36:
 * those of a refused submit removed again.
 */
const CHECK_AND_STORE_UPLOADS = 'Allow s3:DeleteObject s3:GetObject s3:PutObject on <MediaBucket.Arn>/uploads/*';
/** Issue 27: signing the presigned POSTs that store uploads (the uploads function only). */
const POST_UPLOADS = 'Allow s3:PutObject on <MediaBucket.Arn>/uploads/*';
/** Issue 40: deleting an owner's files (a task's results and upload copies, an upload): DeleteObject only. */
const REMOVE_MEDIA = 'Allow s3:DeleteObject on <MediaBucket.Arn>/results/* <MediaBucket.Arn>/uploads/*';
/** Issue 40: scheduling a task's result retention (store/retention.ts): PutItem on RETENTION#<n> only. */
const SCHEDULE_RETENTION =
  'Allow dynamodb:PutItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys RETENTION#*';

/** Every function of the registry and exactly what its role allows. */
const EXPECTED: Readonly<Record<string, readonly string[]>> = {
  authorizer: [
    readWrite('APIKEY#*,SESSION#*,USER#*'),
    ownLogs('Authorizer'),
    `Allow secretsmanager:DescribeSecret secretsmanager:GetSecretValue on <OriginVerifySecret>`,
  ],
  // The accept transaction also puts the task's entry in the dispatch queue, and the queue bound counts
  // the account's entries first: PutItem and Query on DISPATCH#QUEUE, no read/write there. No provider.
  // The upload check reads each upload's first bytes (a ranged GET), and inline data: images are stored
  // as uploads (a presigned PUT). With `Prefer: wait`, a task that ended within the wait is answered
  // with its result URLs, signed: GetObject on results/ (issue 40).
  'submit-image': [
    readWrite('USER#*'),
    QUEUE_TASKS,
    SCHEDULE_RETENTION,
    ownLogs('SubmitImage'),
    READ_RESULTS,
    CHECK_AND_STORE_UPLOADS,
  ],
  'submit-video': [
    readWrite('USER#*'),
    QUEUE_TASKS,
    SCHEDULE_RETENTION,
    ownLogs('SubmitVideo'),
    READ_RESULTS,
    CHECK_AND_STORE_UPLOADS,
  ],
  // A poll may end a queued task (TIMEOUT) and then removes its queue entry; a queued task counts the
  // account's queue entries before it.
  'get-task': [
    readWrite('USER#*,DISPATCH#QUEUE'),
    DELETE_QUEUE_ENTRIES,
    ownLogs('GetTask'),
    READ_RESULTS,
    LIFECYCLE_SECRETS,
  ],
  // Fails and refunds a queued task (USER#*), then deletes its queue entry: no provider, no media.
  'cancel-task': [readWrite('USER#*'), DELETE_QUEUE_ENTRIES, ownLogs('CancelTask')],
  // Issue 40: the task item (and its ledger entries' model), then its files; no reads of storage.
  'delete-task': [readWrite('USER#*'), DELETE_GATEWAY_KEY_ITEMS, ownLogs('DeleteTask'), REMOVE_MEDIA],
  // The upload's record; its file's version (a ranged GET) to find its checked copy, then both files.
  'delete-upload': [readWrite('USER#*'), DELETE_GATEWAY_KEY_ITEMS, ownLogs('DeleteUpload'), READ_UPLOADS, REMOVE_MEDIA],
  'provider-callback': [readWrite('USER#*'), ownLogs('ProviderCallback'), READ_RESULTS, LIFECYCLE_SECRETS],
  // Issue 27: signs presigned POSTs into uploads/, nothing else there.
  uploads: [readWrite('USER#*'), ownLogs('Uploads'), POST_UPLOADS],
  // A pending task's stage: the account's queue entries in the page's time range.
  'list-tasks': [readOnly('USER#*,DISPATCH#QUEUE'), ownLogs('ListTasks')],
  'get-credits': [readOnly('USER#*'), ownLogs('GetCredits')],
  'get-usage': [readOnly('USER#*'), ownLogs('GetUsage')],
  'list-models': [ownLogs('ListModels')],
  openapi: [ownLogs('Openapi')],
  'auth-sign-in': [
    ownLogs('AuthSignIn'),
    `Allow secretsmanager:DescribeSecret secretsmanager:GetSecretValue on <OidcClientSecret>`,
  ],
  'auth-callback': [
    ...ENROLL,
    readWrite(ACCOUNT_KEYS),
    ownLogs('AuthCallback'),
    `Allow secretsmanager:DescribeSecret secretsmanager:GetSecretValue on <OidcClientSecret> <OriginVerifySecret>`,
  ],
  'auth-sign-out': [readWrite(ACCOUNT_KEYS), ownLogs('AuthSignOut')],
  'auth-sign-out-everywhere': [readWrite(ACCOUNT_KEYS), ownLogs('AuthSignOutEverywhere')],
  session: [readOnly('USER#*,SESSION#*'), ownLogs('Session')],
  'keys-list': [readOnly('USER#*'), ownLogs('KeysList')],
  'keys-create': [...ENROLL, readWrite(ACCOUNT_KEYS), DELETE_GATEWAY_KEY_ITEMS, ownLogs('KeysCreate')],
  'keys-rotate': [DELETE_KEYS, ...ENROLL, readWrite(ACCOUNT_KEYS), DELETE_GATEWAY_KEY_ITEMS, ownLogs('KeysRotate')],
  // Sets a key's spend limit: no deletes, no usage plans, no sessions or invitations.
  'keys-update': [readWrite('USER#*,APIKEY#*,KEYID#*'), ownLogs('KeysUpdate')],
  'keys-revoke': [DELETE_KEYS, FIND_KEYS, readWrite(ACCOUNT_KEYS), DELETE_GATEWAY_KEY_ITEMS, ownLogs('KeysRevoke')],
  'audit-log': [readOnly('USER#*'), ownLogs('AuditLog')],
  'list-events': [readOnly('USER#*'), ownLogs('ListEvents')],
  // Issue 40: the account's own partition, read only.
  'account-export': [readOnly('USER#*'), ownLogs('AccountExport')],
  // Issue 40: ends keys as keys-revoke does (their API Gateway keys deleted), and the sessions; cancels
  // queued tasks (their queue entries deleted); deletes tasks and uploads as their DELETEs do; schedules
  // the deletion of a task still at the provider (a retention entry the sweeper acts on once it ended).
  'account-close': [
    DELETE_KEYS,
    FIND_KEYS,
    readWrite(ACCOUNT_KEYS),
    'Allow dynamodb:DeleteItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys USER#*,DISPATCH#QUEUE',
    ownLogs('AccountClose'),
    READ_UPLOADS,
    REMOVE_MEDIA,
    SCHEDULE_RETENTION,
  ],
  // The low-balance threshold: the account's own items, no deletes (credits.low is re-armed by an update).
  'account-alerts-get': [readOnly('USER#*'), ownLogs('AccountAlertsGet')],
  'account-alerts-update': [readWrite('USER#*'), ownLogs('AccountAlertsUpdate')],
  'account-limit-get': [readOnly('USER#*'), ownLogs('AccountLimitGet')],
  'account-limit-update': [readWrite('USER#*'), ownLogs('AccountLimitUpdate')],
  // Issue 39: webhook endpoints. Only create and rotate seal a secret; only delete deletes (its endpoint).
  'webhook-endpoints-create': [
    readWrite('USER#*'),
    ownLogs('WebhookEndpointsCreate'),
    `Allow secretsmanager:GetSecretValue on <WebhookSecretsKey>`,
  ],
  'webhook-endpoints-list': [readOnly('USER#*'), ownLogs('WebhookEndpointsList')],
  'webhook-endpoints-get': [readOnly('USER#*'), ownLogs('WebhookEndpointsGet')],
  'webhook-endpoints-update': [readWrite('USER#*'), ownLogs('WebhookEndpointsUpdate')],
  'webhook-endpoints-delete': [
    readWrite('USER#*'),
    'Allow dynamodb:DeleteItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys USER#*',
    ownLogs('WebhookEndpointsDelete'),
  ],
  'webhook-endpoints-rotate': [
    readWrite('USER#*'),
    ownLogs('WebhookEndpointsRotate'),
    `Allow secretsmanager:GetSecretValue on <WebhookSecretsKey>`,
  ],
  'webhook-endpoints-test': [readWrite('USER#*'), ownLogs('WebhookEndpointsTest')],
  'webhook-endpoints-deliveries': [readOnly('USER#*'), ownLogs('WebhookEndpointsDeliveries')],
  'webhook-endpoints-redeliver': [readWrite('USER#*'), ownLogs('WebhookEndpointsRedeliver')],
  sweeper: [
    DELETE_KEYS,
    ...ENROLL,
    readWrite('USER#*,PENDING#*,WEBHOOKDUE#*,WEBHOOKQUEUED,GATEWAYKEYDUE,RETENTION#*'),
    // GATEWAYKEY items of settled keys, the queue entries of queued tasks it ended (TIMEOUT), the
    // retention entries it has carried out (issue 40).
    'Allow dynamodb:DeleteItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys USER#*,DISPATCH#QUEUE,RETENTION#*',
    // Issue 38: settling a key's API Gateway key reads the key by id, then by hash (GetItem only).
    'Allow dynamodb:GetItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys KEYID#*,APIKEY#*',
    ownLogs('Sweeper'),
    WRITE_RESULTS,
    REMOVE_MEDIA,
    LIFECYCLE_SECRETS,
    // Wakes the dispatcher after it put a task back in the queue (functions/sweeper/handler.ts).
    `Allow sqs:SendMessage on <DispatchDispatcherWakeQueue.Arn>`,
  ],
  'media-worker': [
    readWrite('USER#*'),
    `Allow dynamodb:DescribeStream dynamodb:GetRecords dynamodb:GetShardIterator on <Table.StreamArn>`,
    `Allow dynamodb:ListStreams on *`,
    ownLogs('MediaWorker'),
    WRITE_RESULTS,
    `Allow sqs:GetQueueAttributes sqs:GetQueueUrl sqs:SendMessage on <MediaWorkerDlq.Arn>`,
  ],
  'webhook-worker': [
    readWrite('USER#*'),
    // The queue entry of a delivery it promotes past the bound (store/webhook-queue.ts).
    DELETE_GATEWAY_KEY_ITEMS,
    `Allow dynamodb:DescribeStream dynamodb:GetRecords dynamodb:GetShardIterator on <Table.StreamArn>`,
    `Allow dynamodb:ListStreams on *`,
    ownLogs('WebhookWorker'),
    READ_RESULTS,
    `Allow secretsmanager:GetSecretValue on <WebhookSecretsKey>`,
    `Allow sqs:GetQueueAttributes sqs:GetQueueUrl sqs:SendMessage on <WebhookWorkerDlq.Arn>`,
  ],
  // Sends queued tasks at the upstream's pace: the queue and the capacity item, the tasks it claims and
  // refunds; deletes only queue entries; reads its stream trigger; consumes and sends its own wake-ups.
  dispatcher: [
    readWrite('USER#*,DISPATCH#QUEUE,DISPATCH#CAPACITY'),
    DELETE_QUEUE_ENTRIES,
    `Allow dynamodb:DescribeStream dynamodb:GetRecords dynamodb:GetShardIterator on <Table.StreamArn>`,
    `Allow dynamodb:ListStreams on *`,
    ownLogs('Dispatcher'),
    LIFECYCLE_SECRETS,
    // Issue 27: signs each upload's short-lived GET URL for the provider at send.
    READ_UPLOADS,
    `Allow sqs:ChangeMessageVisibility sqs:DeleteMessage sqs:GetQueueAttributes sqs:GetQueueUrl sqs:ReceiveMessage sqs:SendMessage on <DispatchDispatcherWakeQueue.Arn>`,
  ],
};

let service: SynthesizedService;

beforeAll(() => {
  service = synthesize({}, { bundle: false });
}, 180_000);

afterAll(() => {
  cleanUp(service);
});

test('the table names every function of the registry', () => {
  // Act
  const names = LAMBDAS.map((definition) => definition.name).sort();

  // Assert
  expect(Object.keys(EXPECTED).sort()).toEqual(names);
});

test.each(LAMBDAS.map((definition) => [definition.name]))('%s may do exactly what the table says', (name) => {
  // Act
  const lines = statementLines(statementsOfFunction(service.template, functionLogicalId(service, name)));

  // Assert
  expect(lines).toEqual([...(EXPECTED[name] ?? [])].sort());
});

describe('with a cap on tasks in flight (-c providerMaxInFlight)', () => {
  let capped: SynthesizedService;

  beforeAll(() => {
    capped = synthesize({ providerMaxInFlight: '4' }, { bundle: false });
  }, 180_000);

  afterAll(() => {
    cleanUp(capped);
  });

  /**
   * A finish takes its task off the dispatcher's count (`REMOVE running.<taskId>` on the capacity item):
   * UpdateItem there, of the in-flight map only (never the backoff, the slot version or the ring), for
   * the functions that finish tasks and have no access to it.
   */
  const LEAVE_IN_FLIGHT =
    'Allow dynamodb:UpdateItem on <Table.Arn> if ForAllValues:StringLike dynamodb:LeadingKeys DISPATCH#CAPACITY' +
    ' and ForAllValues:StringEquals dynamodb:Attributes PK,SK,running' +
    ' and StringEqualsIfExists dynamodb:ReturnValues NONE,UPDATED_OLD,UPDATED_NEW';
  const FINISHING_WITHOUT_CAPACITY = ['get-task', 'provider-callback', 'sweeper', 'media-worker'];

  test.each(LAMBDAS.map((definition) => [definition.name]))(
    '%s may do what the table says, finishing adds UpdateItem on the capacity item',
    (name) => {
      // Act
      const lines = statementLines(statementsOfFunction(capped.template, functionLogicalId(capped, name)));

      // Assert
      const extra = FINISHING_WITHOUT_CAPACITY.includes(name) ? [LEAVE_IN_FLIGHT] : [];
      expect(lines).toEqual([...(EXPECTED[name] ?? []), ...extra].sort());
    },
  );
});

test("the default usage plan carries its API's tag, the one the enrolling functions' grants require", () => {
  // Act
  const plans = Object.values(service.template.findResources('AWS::ApiGateway::UsagePlan'));

  // Assert
  expect(plans).toHaveLength(1);
  expect(plans[0]?.Properties.Tags).toEqual([
    { Key: USAGE_PLAN_API_TAG, Value: { Ref: expect.stringMatching(/^Api[0-9A-F]{8}$/) } },
  ]);
});

test('the sign-in client allows no SDK sign-in flow: only the hosted code flow and the refresh Cognito always keeps', () => {
  // Act
  const clients = Object.values(service.template.findResources('AWS::Cognito::UserPoolClient'));

  // Assert
  expect(clients).toHaveLength(1);
  expect(clients[0]?.Properties.ExplicitAuthFlows).toEqual(['ALLOW_REFRESH_TOKEN_AUTH']);
  expect(clients[0]?.Properties.AllowedOAuthFlows).toEqual(['code']);
});
