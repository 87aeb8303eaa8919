/**
 * The stack as `cdk deploy` builds it for AWS (cdk.json defaults), bundles included: the template and the
 * constructs from a synth of this file's own, the bundles from the bundled synth the infra files share
 * (bundled-assembly.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { TABLE } from '../../functions/store/table';
import {
  AUTHORIZER,
  AUTHORIZER_IDENTITY_SOURCES,
  DISPATCHER,
  LAMBDAS,
  MEDIA_WORKER,
  MEDIA_WORKER_FILTER,
  ROUTES,
  SWEEPER,
  WEBHOOK_WORKER,
  WEBHOOK_WORKER_FILTERS,
} from '../../lib/routes';
import { BUNDLED_ASSEMBLY_TIMEOUT_MS, type BundledAssembly, bundledAssembly } from './bundled-assembly';
import {
  actionsOf,
  cleanUp,
  functionLogicalId,
  logicalIdOf,
  type Statement,
  type SynthesizedService,
  statementsOfFunction,
  synthesize,
  TEST_PROVIDER_URL,
} from './support';

let service: SynthesizedService;
let assembly: BundledAssembly;

beforeAll(async () => {
  service = synthesize({}, { bundle: false });
  assembly = await bundledAssembly();
}, BUNDLED_ASSEMBLY_TIMEOUT_MS);

afterAll(() => {
  cleanUp(service);
});

const READ = ['dynamodb:GetItem', 'dynamodb:Query'];
/** The task routes (they run the lifecycle); the rest are the account routes. */
const LIFECYCLE_ROUTES = ROUTES.filter((route) => route.needs.provider);
// Functions that never meet the provider, but for submission, which queues provider tasks (pinned apart),
// and the uploads route (issue 27, its own test below).
const ACCOUNT_ROUTES = ROUTES.filter(
  (route) => !route.needs.provider && !route.needs.queuesTasks && route.name !== 'uploads',
);
const WRITE = ['dynamodb:ConditionCheckItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];

function functionId(name: string): string {
  return functionLogicalId(service, name);
}

function statementsOf(name: string): Statement[] {
  return statementsOfFunction(service.template, functionId(name));
}

function environmentOf(name: string): Record<string, unknown> {
  const fn = service.template.toJSON().Resources[functionId(name)];
  return fn.Properties.Environment.Variables;
}

describe('functions', () => {
  test('one function per route plus the authorizer and the sweeper, all with the project defaults', () => {
    // Prepare
    const names = [...ROUTES.map((route) => route.name), AUTHORIZER.name, SWEEPER.name];

    // Act
    const ids = new Set(names.map(functionId));

    // Assert
    expect(ids.size).toBe(names.length);
    for (const id of ids) {
      const fn = service.template.toJSON().Resources[id];
      expect(fn.Type).toBe('AWS::Lambda::Function');
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        MemorySize: 512,
        Handler: 'index.handler',
        LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
      });
      expect(fn.Properties.TracingConfig).toBeUndefined();
    }
  });

  test('timeouts follow the role: API 29 s, authorizer 10 s, sweeper 2 min', () => {
    // Prepare
    const timeout = (name: string) => service.template.toJSON().Resources[functionId(name)].Properties.Timeout;

    // Act
    const routes = ROUTES.map((route) => timeout(route.name));

    // Assert
    expect(routes).toEqual(ROUTES.map(() => 29));
    expect(timeout(AUTHORIZER.name)).toBe(10);
    expect(timeout(SWEEPER.name)).toBe(120);
  });

  test('every function logs to its own log group with the configured retention', () => {
    // Act
    const groups = service.template.findResources('AWS::Logs::LogGroup');

    // Assert
    for (const name of [AUTHORIZER.name, SWEEPER.name, ...ROUTES.map((route) => route.name)]) {
      const fn = service.template.toJSON().Resources[functionId(name)];
      const group = groups[fn.Properties.LoggingConfig.LogGroup.Ref];
      expect(group?.Properties.RetentionInDays).toBe(90);
      expect(group?.DeletionPolicy).toBe('Retain');
    }
  });

  test('the environment carries exactly the contract each function reads', () => {
    // Act
    const authorizer = environmentOf(AUTHORIZER.name);
    const lifecycle = [SWEEPER, ...LIFECYCLE_ROUTES].map((definition) => ({
      env: environmentOf(definition.name),
      media: definition.needs.media !== 'none',
    }));

    // Assert
    expect(Object.keys(authorizer).sort()).toEqual(['LOG_LEVEL', 'ORIGIN_VERIFY_SECRET_ARN', 'TABLE_NAME']);
    for (const { env, media } of lifecycle) {
      expect(env).toMatchObject({
        TABLE_NAME: { Ref: expect.any(String) },
        PROVIDER_BASE_URL: TEST_PROVIDER_URL,
        PROVIDER_PROFILE: 'kie',
        PROVIDER_SECRET_ARN: { Ref: expect.stringMatching(/^ProviderSecret/) },
        RESULT_RETENTION_DAYS: '30',
        PROVIDER_REFRESH_INTERVAL_SECONDS: '30',
        MAX_PENDING_SECONDS: '1800',
        LOG_LEVEL: 'INFO',
      });
      // The bucket where results are signed (GET, the callback, the sweeper); submission signs none.
      if (media) {
        expect(env).toMatchObject({ MEDIA_BUCKET: { Ref: expect.stringMatching(/^MediaBucket/) } });
        expect(env).toMatchObject({ MEDIA_URL_TTL_SECONDS: '3600' });
      } else {
        expect(env).not.toHaveProperty('MEDIA_BUCKET');
        expect(env).not.toHaveProperty('MEDIA_URL_TTL_SECONDS');
      }
      expect(env).not.toHaveProperty('INLINE_AUTHORIZER');
      // No allowlist configured: any public https host; the variable is then absent.
      expect(env).not.toHaveProperty('MEDIA_SOURCE_HOSTS');
      expect(env).not.toHaveProperty('MEDIA_SOURCE_INSECURE_ORIGINS');
    }
  });

  test('each bundle is one CommonJS file with the AWS SDK inside and no source map', () => {
    // Prepare
    const resources = assembly.resources as Record<
      string,
      { Type: string; Properties: { Code?: { S3Key?: unknown } } }
    >;

    // Act: an asset's S3 key is `<hash>.zip`, staged in the assembly as `asset.<hash>/`.
    const assetDirs = Object.entries(resources)
      // The service's functions; CDK's own dashboard-upload handler is not bundled by us.
      .filter(
        ([id, resource]) => resource.Type === 'AWS::Lambda::Function' && !id.startsWith('CustomCDKBucketDeployment'),
      )
      .map(([, resource]) => resource)
      .map((resource) => resource.Properties.Code?.S3Key)
      .filter((key): key is string => typeof key === 'string' && key.endsWith('.zip'))
      .map((key) => path.join(assembly.directory, `asset.${key.replace(/\.zip$/, '')}`));

    // Assert
    expect(assetDirs).toHaveLength(ROUTES.length + 5); // and the authorizer, the sweeper, the two workers, the dispatcher
    let withTable = 0;
    for (const dir of assetDirs) {
      expect(fs.readdirSync(dir)).toEqual(['index.js']);
      const code = fs.readFileSync(path.join(dir, 'index.js'), 'utf8');
      // The SDK's optional CRT signer (SigV4a, unused here) is required inside a try block; it stays out.
      const externalSdk = new Set(code.match(/require\("@aws-sdk\/[^"]+"\)/g) ?? []);
      const usesTable = code.includes('DynamoDB_20120810');
      if (usesTable) withTable++;
      expect([...externalSdk]).toEqual(usesTable ? ['require("@aws-sdk/signature-v4-crt")'] : []);
      expect(code.includes('sourceMappingURL')).toBe(false);
    }
    // Starting sign-in (it stores nothing) and the OpenAPI document hold no SDK. The model catalog
    // touches no table either (no grant, no TABLE_NAME), yet the request stack it shares (functions/http)
    // brings the DynamoDB client into its bundle, unused.
    expect(withTable).toBe(assetDirs.length - 2);
  });

  test('the submit bundles hold no provider client at all (the dispatcher sends); the functions that read keep it', () => {
    // Prepare
    const template = assembly.resources as Record<
      string,
      { Type: string; Properties: { Code?: { S3Key?: unknown }; Description?: string } }
    >;
    const codeOf = (name: string) => {
      const fn = Object.values(template).find((r) => r.Properties.Description === `generation-service ${name}`);
      const key = String(fn?.Properties.Code?.S3Key ?? '');
      return fs.readFileSync(path.join(assembly.directory, `asset.${key.replace(/\.zip$/, '')}`, 'index.js'), 'utf8');
    };
    // A message only the state parser has, and one only the create call has.
    const parser = 'success without usable resultUrls';
    const creator = 'createTask: response has no taskId';

    // Act
    const [submitImage, submitVideo, getTask] = ['submit-image', 'submit-video', 'get-task'].map(codeOf);

    // Assert
    expect(submitImage?.includes(parser)).toBe(false);
    expect(submitVideo?.includes(parser)).toBe(false);
    expect(submitImage?.includes(creator)).toBe(false);
    expect(submitVideo?.includes(creator)).toBe(false);
    expect(getTask).toContain(parser);
  });
});

describe('least privilege', () => {
  test('no role has a managed policy, and nobody gets a service wildcard or Scan', () => {
    // Act
    const roles = service.template.findResources('AWS::IAM::Role');
    const everything = [AUTHORIZER.name, SWEEPER.name, ...ROUTES.map((route) => route.name)].flatMap(statementsOf);

    // Assert
    for (const [id, role] of Object.entries(roles)) {
      if (id.startsWith('ApiCloudWatchRole')) continue; // the account-level API Gateway logging role
      // CDK's own deploy-time handler of the dashboard upload (its findings are acknowledged one by one).
      if (id.startsWith('CustomCDKBucketDeployment')) continue;
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    const actions = actionsOf(everything);
    expect(actions.filter((action) => action.endsWith(':*') || action === '*')).toEqual([]);
    expect(actions).not.toContain('dynamodb:Scan');
    expect(everything.every((statement) => statement.Effect === 'Allow' && statement.Resource !== '*')).toBe(true);
  });

  test('the authorizer reads and writes the table (session idle expiry, key last use) and its logs, nothing else', () => {
    // Act
    const actions = actionsOf(statementsOf(AUTHORIZER.name));

    // Assert
    // The secret: the distribution's origin-verify value, to believe the viewer address it forwards.
    const secret = ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'];
    expect(actions).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents', ...READ, ...WRITE, ...secret].sort());
  });

  test('account functions get the table access they declare, the public origin, and only sign-in reads the client secret', () => {
    for (const route of ACCOUNT_ROUTES) {
      // Act
      const statements = statementsOf(route.name);
      const env = environmentOf(route.name);

      // Assert
      const table =
        route.needs.table.access === 'none' ? [] : route.needs.table.access === 'RW' ? [...READ, ...WRITE] : READ;
      // Settling a key's API Gateway key deletes its GATEWAYKEY item: DeleteItem, where declared only.
      const deletes = route.needs.table.deletes ? ['dynamodb:DeleteItem'] : [];
      const secret = route.needs.oidc ? ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'] : [];
      // Issue 39: creating and rotating a webhook endpoint seal its secret with the sealing key.
      if (route.needs.webhookSecrets) secret.push('secretsmanager:GetSecretValue');
      // Enrolling keys: GET (find a key or the default plan by name) and POST (create a key, add it to a
      // plan); deleting ended keys: DELETE. Each action once per statement that grants it.
      const uses = route.needs.usagePlans ?? [];
      const usagePlans = [
        ...(uses.includes('enroll') ? ['apigateway:GET', 'apigateway:POST', 'apigateway:POST'] : []),
        ...(uses.includes('delete') ? ['apigateway:DELETE'] : []),
        ...(uses.includes('delete') && !uses.includes('enroll') ? ['apigateway:GET'] : []),
      ];
      expect(actionsOf(statements)).toEqual(
        [
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          ...table,
          ...deletes,
          ...secret,
          ...usagePlans,
          // Deleting an upload removes its files (FunctionNeeds.removesMedia).
          ...(route.needs.removesMedia ? ['s3:DeleteObject'] : []),
          // ... and reads its version first (a ranged GET): FunctionNeeds.uploads.
          ...(route.needs.uploads === 'read' ? ['s3:GetObject'] : []),
          // Closing schedules the deletion of a task still at the provider: FunctionNeeds.schedulesRetention.
          ...(route.needs.schedulesRetention ? ['dynamodb:PutItem'] : []),
        ].sort(),
      );
      // The cap on active keys (cdk context maxActiveKeys) reaches the functions that issue keys.
      // Only those: sign-in and the sweeper enroll keys but issue none.
      expect(env.MAX_ACTIVE_KEYS).toBe(route.needs.issuesKeys ? '20' : undefined);
      // The browsers' origin where a session cookie (CSRF) or sign-in needs it; not on the provider's
      // callback nor the OpenAPI document.
      if (route.auth !== 'none' || route.needs.oidc) {
        expect(env.PUBLIC_ORIGIN).toEqual({
          'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [expect.stringMatching(/^Distribution/), 'DomainName'] }]],
        });
      } else {
        expect(env.PUBLIC_ORIGIN).toBeUndefined();
      }
      if (route.needs.oidc) {
        expect(env).toMatchObject({
          OIDC_CLIENT_ID: { Ref: expect.stringMatching(/^UserPoolServiceClient/) },
          OIDC_CLIENT_SECRET_ARN: { Ref: expect.stringMatching(/^OidcClientSecret/) },
        });
        expect(JSON.stringify(env.OIDC_ISSUER)).toContain('cognito-idp.');
      } else {
        expect(env).not.toHaveProperty('OIDC_CLIENT_SECRET_ARN');
      }
    }
  });

  test('the uploads function writes its upload records and may only store objects under uploads/', () => {
    // Act
    const statements = statementsOf('uploads');
    const env = environmentOf('uploads');

    // Assert
    expect(actionsOf(statements)).toEqual(
      ['logs:CreateLogStream', 'logs:PutLogEvents', ...READ, ...WRITE, 's3:PutObject'].sort(),
    );
    const s3 = statements.find((statement) => actionsOf([statement]).includes('s3:PutObject'));
    expect(JSON.stringify(s3?.Resource)).toMatch(/"\/uploads\/\*"\]\]\}$/);
    expect(env).toMatchObject({
      UPLOADS_BUCKET: { Ref: expect.stringMatching(/^MediaBucket/) },
      UPLOAD_MAX_BYTES: String(20 * 1024 * 1024),
      UPLOAD_TTL_SECONDS: String(24 * 3600),
    });
  });

  test('lifecycle functions read and write the table, read the secret and use the results prefix', () => {
    for (const { name, needs } of [SWEEPER, ...LIFECYCLE_ROUTES]) {
      // Act
      const statements = statementsOf(name);

      // Assert
      // Only the sweeper copies results (a copy that waited too long) and deletes ended API keys; no
      // request path writes media.
      const sweeperOnly =
        name === SWEEPER.name
          ? [
              's3:PutObject',
              'apigateway:DELETE',
              'apigateway:GET',
              'apigateway:POST',
              'apigateway:POST',
              // The GATEWAYKEY items of keys it settled, and the queue entries of queued tasks it ended.
              'dynamodb:DeleteItem',
              // Wakes the dispatcher after putting a task back in the queue (its wake-up queue only).
              'sqs:SendMessage',
              // The key it settles, read by id and by hash (TableNeeds.reads).
              'dynamodb:GetItem',
            ]
          : [];
      // Submission puts queue entries and counts the account's (the queue bound); a poll that ends a
      // queued task deletes its entry.
      const queue = [
        ...(needs.queuesTasks ? ['dynamodb:PutItem', 'dynamodb:Query'] : []),
        ...(name !== SWEEPER.name && needs.table.deletes ? ['dynamodb:DeleteItem'] : []),
      ];
      expect(actionsOf(statements)).toEqual(
        [
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          ...READ,
          ...WRITE,
          'secretsmanager:GetSecretValue',
          // Submission signs no result URL: no media grant.
          ...(needs.media === 'none' ? [] : ['s3:GetObject']),
          ...sweeperOnly,
          ...queue,
          // Deleting a task, or its results at the end of their retention, removes its files.
          ...(needs.removesMedia ? ['s3:DeleteObject'] : []),
        ].sort(),
      );
      const s3 = statements.find((statement) => actionsOf([statement]).includes('s3:GetObject'));
      if (needs.media !== 'none') expect(JSON.stringify(s3?.Resource)).toMatch(/"\/results\/\*"\]\]\}$/);
      // Polls, callbacks and the sweeper never send (the dispatcher does): no uploads.
      // (Removing an ended task's files is the one grant on uploads/ they may hold: DeleteObject alone.)
      const removal = (statement: Statement) => actionsOf([statement]).join() === 's3:DeleteObject';
      expect(JSON.stringify(statements.filter((statement) => !removal(statement)))).not.toContain('"/uploads/*"');
      const secret = statements.find((statement) => actionsOf([statement]).includes('secretsmanager:GetSecretValue'));
      // The provider key and the callback-signing secret, nothing else.
      expect(secret?.Resource).toHaveLength(2);
      expect(secret?.Resource).toEqual(
        expect.arrayContaining([
          { Ref: expect.stringMatching(/^ProviderSecret/) },
          { Ref: expect.stringMatching(/^ProviderCallbackSecret/) },
        ]),
      );
    }
  });

  test('each function touches only the partition key patterns it uses (dynamodb:LeadingKeys)', () => {
    // Prepare
    const account = ['USER#*', 'SESSION#*', 'APIKEY#*', 'KEYID#*', 'INVITE#*'];
    const expected: Record<string, string[]> = {
      [AUTHORIZER.name]: ['APIKEY#*', 'SESSION#*', 'USER#*'],
      // WEBHOOKQUEUED: deliveries waiting past the bound; RETENTION#<n>: results due for removal.
      [SWEEPER.name]: ['USER#*', 'PENDING#*', 'WEBHOOKDUE#*', 'WEBHOOKQUEUED', 'GATEWAYKEYDUE', 'RETENTION#*'],
      [MEDIA_WORKER.name]: ['USER#*'],
      [WEBHOOK_WORKER.name]: ['USER#*'],
      [DISPATCHER.name]: ['USER#*', 'DISPATCH#QUEUE', 'DISPATCH#CAPACITY'],
      // Submit's queue entries are a statement of their own (PutItem and Query, tested below).
      'submit-image': ['USER#*'],
      'submit-video': ['USER#*'],
      // A queued task counts the queue entries before it.
      'get-task': ['USER#*', 'DISPATCH#QUEUE'],
      'provider-callback': ['USER#*'],
      uploads: ['USER#*'],
      ...Object.fromEntries(
        ACCOUNT_ROUTES.filter((route) => route.needs.table.access !== 'none').map((route) => [route.name, account]),
      ),
      // The listings read the caller's own partition only; the session also its session by hash.
      session: ['USER#*', 'SESSION#*'],
      'keys-list': ['USER#*'],
      // A key's spend limit: the key's items and guards, no sessions or invitations.
      'keys-update': ['USER#*', 'APIKEY#*', 'KEYID#*'],
      'audit-log': ['USER#*'],
      // The account's alert settings and its credits.low marker (USER#<id>/ALERTS...), nothing else.
      'account-alerts-get': ['USER#*'],
      'account-alerts-update': ['USER#*'],
      'account-limit-get': ['USER#*'],
      'account-limit-update': ['USER#*'],
      // Issue 39: webhook endpoints, their deliveries and counters: the account's own partition only.
      ...Object.fromEntries(
        ROUTES.filter((route) => route.name.startsWith('webhook-endpoints-')).map((route) => [route.name, ['USER#*']]),
      ),
      'list-tasks': ['USER#*', 'DISPATCH#QUEUE'],
      // The cancel refunds the caller's task; deleting its queue entry is a statement of its own.
      'cancel-task': ['USER#*'],
      'get-credits': ['USER#*'],
      'get-usage': ['USER#*'],
      // Deleting a task or an upload: the caller's own items (and their removal, a statement of its own).
      'delete-task': ['USER#*'],
      'delete-upload': ['USER#*'],
      // The event feed: the caller's own partition.
      'list-events': ['USER#*'],
      // Issue 40: the export reads the caller's own partition; the close ends keys and sessions (the
      // account's partitions; deleting cancelled tasks' queue entries is a statement of its own).
      'account-export': ['USER#*'],
      'account-close': account,
    };

    // Sign-in, the OpenAPI document and the model catalog touch no table.
    expect(Object.keys(expected)).toHaveLength(ROUTES.length + 5 - 3);
    for (const [name, patterns] of Object.entries(expected)) {
      // Act
      // (the stream actions of the media worker are on the stream, which has no items: not counted)
      const streamActions = [
        'dynamodb:ListStreams',
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
      ];
      const dynamodb = statementsOf(name).filter((statement) =>
        actionsOf([statement]).some((action) => action.startsWith('dynamodb:') && !streamActions.includes(action)),
      );
      // DeleteItem is a statement of its own (TableNeeds.deletes, pinned in least-privilege.test.ts), and
      // so is submission's queue access (FunctionNeeds.queuesTasks).
      const isDelete = (statement: (typeof dynamodb)[number]) =>
        actionsOf([statement]).every((action) => action === 'dynamodb:DeleteItem');
      const isQueue = (statement: (typeof dynamodb)[number]) =>
        actionsOf([statement]).join() === 'dynamodb:PutItem,dynamodb:Query' &&
        JSON.stringify(statement.Resource).indexOf('/index/') === -1;
      // So is reading single items of other partitions by key (TableNeeds.reads: the sweeper's keys).
      const isRead = (statement: (typeof dynamodb)[number]) =>
        actionsOf([statement]).every((action) => action === 'dynamodb:GetItem');
      // And so is submission's retention entry (FunctionNeeds.schedulesRetention: PutItem on RETENTION#*).
      const isRetention = (statement: (typeof dynamodb)[number]) =>
        actionsOf([statement]).join() === 'dynamodb:PutItem' &&
        JSON.stringify(statement.Condition).includes('RETENTION#');
      const table = dynamodb.filter(
        (statement) => !isDelete(statement) && !isQueue(statement) && !isRead(statement) && !isRetention(statement),
      );
      const deletes = dynamodb.filter(isDelete);
      const reads = dynamodb.filter(isRead);
      const definition = LAMBDAS.find((lambda) => lambda.name === name);

      // Assert
      expect(table).toHaveLength(1);
      expect(table[0]?.Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } });
      expect(deletes).toHaveLength(definition?.needs.table.deletes ? 1 : 0);
      for (const statement of deletes) {
        expect(statement.Condition).toEqual({
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': definition?.needs.table.deletes },
        });
      }
      expect(reads).toHaveLength(definition?.needs.table.reads ? 1 : 0);
      for (const statement of reads) {
        expect(statement.Condition).toEqual({
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': definition?.needs.table.reads },
        });
      }
    }
  });

  test('the dispatcher deletes only queue entries, in a statement of its own', () => {
    // Act
    const deleting = statementsOf(DISPATCHER.name).filter((statement) =>
      actionsOf([statement]).includes('dynamodb:DeleteItem'),
    );

    // Assert
    expect(deleting).toHaveLength(1);
    expect(actionsOf(deleting)).toEqual(['dynamodb:DeleteItem']);
    expect(deleting[0]?.Condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['DISPATCH#QUEUE'] },
    });
  });

  test('submission may only put and count queue entries there, and is told the queue bound', () => {
    for (const route of ROUTES) {
      // Act
      const queue = statementsOf(route.name).filter((statement) =>
        JSON.stringify(statement.Condition ?? {}).includes('DISPATCH#QUEUE'),
      );
      const env = environmentOf(route.name);

      // Assert
      if (route.needs.queuesTasks) {
        expect(queue).toHaveLength(1);
        expect(actionsOf(queue)).toEqual(['dynamodb:PutItem', 'dynamodb:Query']);
        // The table itself, no index: the queue is in the base table.
        expect(queue[0]?.Resource).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^Table/), 'Arn'] });
        expect(queue[0]?.Condition).toEqual({
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['DISPATCH#QUEUE'] },
        });
        expect(env.MAX_QUEUED_TASKS_PER_ACCOUNT).toBe('1000');
      } else {
        // Others may delete entries (the dispatcher, GET, the cancel, the sweeper), read them (GET and the
        // listing: a queued task's place and stage), and the dispatcher writes them; none is told the bound.
        const reads = ['dynamodb:GetItem', 'dynamodb:Query'];
        const readers = ['get-task', 'list-tasks'];
        expect(
          actionsOf(queue).filter(
            (action) => action !== 'dynamodb:DeleteItem' && !(readers.includes(route.name) && reads.includes(action)),
          ),
        ).toEqual(
          route.name === 'get-task' ? ['dynamodb:ConditionCheckItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'] : [],
        );
        expect(env).not.toHaveProperty('MAX_QUEUED_TASKS_PER_ACCOUNT');
      }
    }
  });

  test('only submission (its byte check, its inline images) and the dispatcher (signing at send) read uploads; only the uploads function and submission store them', () => {
    for (const { name } of LAMBDAS) {
      // Act
      // Removing an owner's files (FunctionNeeds.removesMedia) is a DeleteObject of its own, on results/
      // and uploads/ alike, pinned in least-privilege.test.ts.
      const removal = (statement: Statement) =>
        actionsOf([statement]).join() === 's3:DeleteObject' &&
        JSON.stringify(statement.Resource).includes('/results/*');
      const uploads = statementsOf(name).filter(
        (statement) => JSON.stringify(statement.Resource).includes('"/uploads/*"') && !removal(statement),
      );
      const removes = LAMBDAS.find((lambda) => lambda.name === name)?.needs.removesMedia === true;
      const env = environmentOf(name);

      // Assert
      const submit = ['submit-image', 'submit-video'].includes(name);
      const expected =
        name === 'uploads'
          ? ['s3:PutObject']
          : submit
            ? ['s3:DeleteObject', 's3:GetObject', 's3:PutObject']
            : name === DISPATCHER.name || name === 'delete-upload' || name === 'account-close'
              ? ['s3:GetObject']
              : [];
      expect(actionsOf(uploads)).toEqual(expected);
      // One statement, on the uploads/ prefix alone.
      if (expected.length > 0) expect(JSON.stringify(uploads[0]?.Resource)).toMatch(/"\/uploads\/\*"\]\]\}$/);
      // The bucket's name goes with the grant, and nowhere else.
      if (expected.length > 0) expect(env.UPLOADS_BUCKET).toEqual({ Ref: expect.stringMatching(/^MediaBucket/) });
      else if (!removes) expect(env).not.toHaveProperty('UPLOADS_BUCKET');
      // The functions that make uploads (presigned POSTs, inline images) know their limit and lifetime.
      if (name === 'uploads' || submit) {
        expect(env).toMatchObject({
          UPLOAD_MAX_BYTES: String(20 * 1024 * 1024),
          UPLOAD_TTL_SECONDS: String(24 * 3600),
        });
      } else {
        expect(env).not.toHaveProperty('UPLOAD_MAX_BYTES');
        expect(env).not.toHaveProperty('UPLOAD_TTL_SECONDS');
      }
    }
  });

  test('the table grant covers the table and its two indexes only', () => {
    // Act
    const table = statementsOf(SWEEPER.name).find((statement) => actionsOf([statement]).includes('dynamodb:Query'));

    // Assert
    expect(JSON.stringify(table?.Resource)).toContain(`"/index/${TABLE.pendingIndex.name}"`);
    expect(JSON.stringify(table?.Resource)).toContain(`"/index/${TABLE.taskIndex.name}"`);
    expect(table?.Resource).toHaveLength(3);
  });
});

describe('accounts', () => {
  test('a Cognito user pool for invited people only, with the service as its confidential code-flow client', () => {
    // Assert
    service.template.hasResourceProperties('AWS::Cognito::UserPool', {
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      UsernameAttributes: ['email'],
    });
    service.template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      GenerateSecret: true,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthScopes: Match.arrayWith(['openid', 'email']),
      CallbackURLs: [
        {
          'Fn::Join': [
            '',
            [
              'https://',
              { 'Fn::GetAtt': [Match.stringLikeRegexp('^Distribution'), 'DomainName'] },
              '/api/auth/callback',
            ],
          ],
        },
      ],
    });
    service.template.hasResourceProperties('AWS::SecretsManager::Secret', {
      SecretString: { 'Fn::GetAtt': [Match.stringLikeRegexp('^UserPoolServiceClient'), 'ClientSecret'] },
    });
  });

  test('one origin: CloudFront serves the dashboard bucket through OAC and forwards /api/* uncached to the API stage', () => {
    // Act
    const distribution = Object.values(service.template.findResources('AWS::CloudFront::Distribution'))[0];
    const config = distribution?.Properties.DistributionConfig;
    const api = config.CacheBehaviors.find((behavior: { PathPattern: string }) => behavior.PathPattern === '/api/*');
    const apiOrigin = config.Origins.find((origin: { Id: string }) => origin.Id === api.TargetOriginId);
    const bucketOrigin = config.Origins.find(
      (origin: { Id: string }) => origin.Id === config.DefaultCacheBehavior.TargetOriginId,
    );

    // Assert
    expect(api).toMatchObject({
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: expect.arrayContaining(['GET', 'POST']),
      CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
      OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
    });
    expect(apiOrigin.OriginPath).toMatch(/^\/[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(apiOrigin.DomainName)).toContain('.execute-api.');
    expect(bucketOrigin.OriginAccessControlId).toBeDefined();
    expect(config.DefaultRootObject).toBe('index.html');
    service.template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
  });

  test("behind the distribution the API learns the viewer's address, vouched for by a secret the template never holds", () => {
    // Act
    const distribution = Object.values(service.template.findResources('AWS::CloudFront::Distribution'))[0];
    const config = distribution?.Properties.DistributionConfig;
    const api = config.CacheBehaviors.find((behavior: { PathPattern: string }) => behavior.PathPattern === '/api/*');
    const apiOrigin = config.Origins.find((origin: { Id: string }) => origin.Id === api.TargetOriginId);
    const functions = Object.values(service.template.findResources('AWS::CloudFront::Function'));
    const verify = apiOrigin.CustomOriginConfig && apiOrigin.OriginCustomHeaders;
    const readers = [AUTHORIZER, ...ROUTES].filter((definition) => definition.needs.viewerAddress);

    // Assert
    expect(api.FunctionAssociations).toEqual([
      {
        EventType: 'viewer-request',
        FunctionARN: { 'Fn::GetAtt': [expect.stringMatching(/ViewerAddressFunction[0-9A-F]{8}$/), 'FunctionARN'] },
      },
    ]);
    expect(functions).toHaveLength(1);
    expect(functions[0]?.Properties.FunctionCode).toContain("headers['x-viewer-address'] = { value: event.viewer.ip }");
    expect(verify).toEqual([{ HeaderName: 'x-origin-verify', HeaderValue: expect.anything() }]);
    // A dynamic reference resolved by CloudFormation at deploy time, not a literal value.
    expect(JSON.stringify(verify[0].HeaderValue)).toContain('{{resolve:secretsmanager:');
    expect(readers.map((definition) => definition.name).sort()).toEqual(['auth-callback', 'authorizer']);
    for (const definition of readers) {
      expect(environmentOf(definition.name).ORIGIN_VERIFY_SECRET_ARN).toEqual({
        Ref: expect.stringMatching(/^OriginVerifySecret/),
      });
    }
  });
});

describe('dashboard', () => {
  test('its pages carry a strict CSP and the security headers; results may load from the media bucket only', () => {
    // Act
    const policies = service.template.findResources('AWS::CloudFront::ResponseHeadersPolicy');
    const [policyId, policy] = Object.entries(policies)[0] ?? [];
    const config = policy?.Properties.ResponseHeadersPolicyConfig;
    const csp = JSON.stringify(config.SecurityHeadersConfig.ContentSecurityPolicy.ContentSecurityPolicy);
    const distribution = Object.values(service.template.findResources('AWS::CloudFront::Distribution'))[0];

    // Assert
    expect(Object.keys(policies)).toHaveLength(1);
    expect(distribution?.Properties.DistributionConfig.DefaultCacheBehavior.ResponseHeadersPolicyId).toEqual({
      Ref: policyId,
    });
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain('unsafe-');
    expect(csp).toContain("img-src 'self' https://");
    // The presigned POST of an upload goes to the bucket too; previews of chosen files are blob: URLs.
    expect(csp).toContain("connect-src 'self' https://");
    expect(csp).toMatch(/img-src [^;]* blob:;/);
    expect(csp).toContain(logicalIdOf(service, service.stack.mediaBucket));
    expect(config.SecurityHeadersConfig).toMatchObject({
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: 'DENY', Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
      StrictTransportSecurity: { AccessControlMaxAgeSec: 31_536_000, IncludeSubdomains: true, Override: true },
    });
    expect(config.CustomHeadersConfig.Items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Header: 'Permissions-Policy' }),
        { Header: 'Cross-Origin-Opener-Policy', Value: 'same-origin', Override: true },
      ]),
    );
  });

  test('cdk deploy uploads the dashboard built by esbuild to its bucket and invalidates the distribution', () => {
    // Act
    const deployments = Object.values(service.template.findResources('Custom::CDKBucketDeployment'));
    const assetDirs = fs
      .readdirSync(assembly.directory)
      .map((name) => path.join(assembly.directory, name))
      .filter((dir) => fs.existsSync(path.join(dir, 'index.html')));
    const built = assetDirs[0] ?? '';
    const html = fs.readFileSync(path.join(built, 'index.html'), 'utf8');

    // Assert
    expect(deployments).toHaveLength(1);
    expect(deployments[0]?.Properties).toMatchObject({
      DestinationBucketName: { Ref: logicalIdOf(service, service.stack.dashboardBucket as never) },
      DistributionId: { Ref: logicalIdOf(service, service.stack.distribution as never) },
      DistributionPaths: ['/*'],
      Prune: true,
    });
    expect(assetDirs).toHaveLength(1);
    expect(fs.readdirSync(built).sort()).toEqual(['app.css', 'app.js', 'favicon.svg', 'index.html']);
    // Nothing inline for the CSP to refuse: scripts and styles come from files.
    expect(html).toMatch(/<script type="module" src="\/app.js"><\/script>/);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toMatch(/<style|\sstyle="|\son[a-z]+="/);
  });
});

describe('API', () => {
  test('every route is a Lambda proxy method; all but starting sign-in and its callback behind the REQUEST authorizer', () => {
    // Prepare
    const authorizerId = Object.keys(service.template.findResources('AWS::ApiGateway::Authorizer'))[0];

    // Act
    const methods = Object.values(service.template.findResources('AWS::ApiGateway::Method'));

    // Assert
    expect(methods).toHaveLength(ROUTES.length);
    for (const route of ROUTES) {
      const method = methods.find(
        (candidate) =>
          candidate.Properties.HttpMethod === route.method &&
          JSON.stringify(candidate.Properties.Integration.Uri).includes(`"${functionId(route.name)}"`),
      );
      expect(method?.Properties).toMatchObject(
        route.auth === 'none'
          ? { AuthorizationType: 'NONE', Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' } }
          : {
              AuthorizationType: 'CUSTOM',
              AuthorizerId: { Ref: authorizerId },
              Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' },
            },
      );
    }
  });

  test('the routes exist at their paths', () => {
    // Act
    const paths = Object.values(service.template.findResources('AWS::ApiGateway::Resource')).map(
      (resource) => resource.Properties.PathPart,
    );

    // Assert
    for (const route of ROUTES) {
      for (const part of route.path.split('/').filter(Boolean)) expect(paths).toContain(part);
    }
  });

  test('the authorizer is called for a cookie-only request too: its only identity source is the source IP, and nothing is cached', () => {
    // Assert
    service.template.resourceCountIs('AWS::ApiGateway::Authorizer', 1);
    service.template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: 'context.identity.sourceIp',
      AuthorizerResultTtlInSeconds: 0,
      AuthorizerUri: Match.anyValue(),
    });
    expect(AUTHORIZER_IDENTITY_SOURCES).toEqual(['context.identity.sourceIp']);
  });

  test('a cached authorizer result is refused at synth: it would be keyed on the caller address alone', () => {
    // Act
    const synth = () => synthesize({ authorizerCacheTtlSeconds: 60 }, { bundle: false });

    // Assert
    expect(synth).toThrow(/authorizerCacheTtlSeconds must be 0/);
  });

  test.each([
    ['UNAUTHORIZED', '401', '{"error":"Unauthorized"}'],
    ['ACCESS_DENIED', '403', '{"error":"Forbidden"}'],
    ['MISSING_AUTHENTICATION_TOKEN', '404', '{"error":"Not found"}'],
    ['REQUEST_TOO_LARGE', '413', '{"error":"Payload too large"}'],
    ['THROTTLED', '429', '{"error":"Too many requests"}'],
    ['QUOTA_EXCEEDED', '429', '{"error":"Daily quota exceeded"}'],
    ['INVALID_API_KEY', '403', '{"error":"Forbidden"}'],
    ['AUTHORIZER_FAILURE', '500', '{"error":"Internal error","requestId":"$context.requestId"}'],
    ['DEFAULT_5XX', '500', '{"error":"Internal error","requestId":"$context.requestId"}'],
  ])('gateway response %s answers %s with a JSON body', (type, status, body) => {
    // Assert
    service.template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: type,
      StatusCode: status,
      ResponseTemplates: { 'application/json': body },
      ResponseParameters: { 'gatewayresponse.header.Content-Type': "'application/json'" },
    });
  });

  test.each([
    ['THROTTLED', "'1'"],
    ['QUOTA_EXCEEDED', "'3600'"],
  ])('gateway response %s says when to come back (Retry-After %s)', (type, retryAfter) => {
    // Assert
    service.template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: type,
      ResponseParameters: { 'gatewayresponse.header.Retry-After': retryAfter },
    });
  });

  test('per-key limits: API keys come from the authorizer, every credentialed method needs one, the default plan holds the configured limits', () => {
    // Act
    const api = Object.values(service.template.findResources('AWS::ApiGateway::RestApi'))[0];
    const methods = Object.values(service.template.findResources('AWS::ApiGateway::Method')).filter(
      (method) => method.Properties.HttpMethod !== 'OPTIONS',
    );
    const keyed = methods.filter((method) => method.Properties.ApiKeyRequired === true);
    const open = methods.filter((method) => method.Properties.AuthorizationType === 'NONE');

    // Assert
    expect(api?.Properties.ApiKeySourceType).toBe('AUTHORIZER');
    expect(keyed.length).toBe(ROUTES.filter((route) => route.auth !== 'none').length);
    expect(open.every((method) => method.Properties.ApiKeyRequired !== true)).toBe(true);
    service.template.hasResourceProperties('AWS::ApiGateway::UsagePlan', {
      UsagePlanName: 'GenerationService-default',
      Throttle: { RateLimit: 100, BurstLimit: 200 },
      Quota: Match.absent(),
    });
    for (const route of ROUTES.filter((r) => (r.needs.usagePlans ?? []).length > 0)) {
      expect(environmentOf(route.name).USAGE_PLAN_NAME).toBe('GenerationService-default');
    }
  });

  test('a web ACL on the stage blocks a flooding address with 429 before the stage limit is reached', () => {
    // Assert
    service.template.hasResourceProperties('AWS::WAFv2::WebACL', {
      Scope: 'REGIONAL',
      Rules: Match.arrayWith([
        Match.objectLike({
          Name: 'requests-per-address',
          Statement: { RateBasedStatement: { Limit: 12000, EvaluationWindowSec: 60, AggregateKeyType: 'IP' } },
          Action: { Block: { CustomResponse: Match.objectLike({ ResponseCode: 429 }) } },
        }),
      ]),
    });
    service.template.resourceCountIs('AWS::WAFv2::WebACLAssociation', 1);
  });

  test('other 4xx keep their status and carry the message as the error', () => {
    // Assert
    service.template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'DEFAULT_4XX',
      StatusCode: Match.absent(),
      ResponseTemplates: { 'application/json': '{"error":$context.error.messageString}' },
    });
  });

  test('the stage throttles, logs access as JSON with request id and source IP, and emits metrics', () => {
    // Act
    const stage = Object.values(service.template.findResources('AWS::ApiGateway::Stage'))[0];
    const format = JSON.parse(stage?.Properties.AccessLogSetting.Format);

    // Assert
    expect(stage?.Properties).toMatchObject({
      StageName: 'prod',
      MethodSettings: [
        {
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: 1000,
          ThrottlingBurstLimit: 2000,
          MetricsEnabled: true,
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
        },
      ],
    });
    expect(format).toMatchObject({ requestId: '$context.requestId', sourceIp: '$context.identity.sourceIp' });
  });
});

describe('data', () => {
  test('the table mirrors functions/store/table.ts, on demand, with PITR, TTL, encryption and protection', () => {
    // Assert
    service.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        BillingMode: 'PAY_PER_REQUEST',
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        TimeToLiveSpecification: { AttributeName: TABLE.ttlAttribute, Enabled: true },
        KeySchema: [
          { AttributeName: TABLE.partitionKey, KeyType: 'HASH' },
          { AttributeName: TABLE.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: TABLE.pendingIndex.name,
            KeySchema: [
              { AttributeName: TABLE.pendingIndex.partitionKey, KeyType: 'HASH' },
              { AttributeName: TABLE.pendingIndex.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
          {
            IndexName: TABLE.taskIndex.name,
            KeySchema: [
              { AttributeName: TABLE.taskIndex.partitionKey, KeyType: 'HASH' },
              { AttributeName: TABLE.taskIndex.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...TABLE.taskIndex.projected] },
          },
        ],
      },
    });
  });

  test('the media bucket is private, TLS only, encrypted, logged and expires results', () => {
    // Act
    const bucketId = logicalIdOf(service, service.stack.mediaBucket);
    const bucket = service.template.toJSON().Resources[bucketId];

    // Assert
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LoggingConfiguration: { DestinationBucketName: { Ref: expect.stringMatching(/^MediaAccessLogs/) } },
      LifecycleConfiguration: {
        Rules: [
          expect.objectContaining({ Prefix: 'results/', ExpirationInDays: 30, Status: 'Enabled' }),
          // Issue 27: callers' uploads live 24 hours (uploadExpiryHours), whole days for S3.
          expect.objectContaining({ Prefix: 'uploads/', ExpirationInDays: 1, Status: 'Enabled' }),
        ],
      },
    });
    // No CORS rule unless uploadCorsOrigins names the origins whose pages POST uploads.
    expect(bucket.Properties).not.toHaveProperty('CorsConfiguration');
    service.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    service.template.resourceCountIs('Custom::S3AutoDeleteObjects', 0);
  });

  test('the provider key secret is created with a generated placeholder and retained', () => {
    // Assert
    service.template.hasResource('AWS::SecretsManager::Secret', {
      DeletionPolicy: 'Retain',
      Properties: { GenerateSecretString: Match.objectLike({}), SecretString: Match.absent() },
    });
  });
});

describe('operations', () => {
  test('a CloudWatch dashboard shows every alarm: their states, and each metric against its threshold', () => {
    // Act
    const alarms = Object.keys(service.template.findResources('AWS::CloudWatch::Alarm'));
    const dashboards = Object.values(service.template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboards[0]?.Properties.DashboardBody);

    // Assert
    expect(dashboards).toHaveLength(1);
    expect(alarms.length).toBeGreaterThan(3);
    for (const alarm of alarms) expect(body).toContain(alarm);
    expect(body).toContain('alarm');
  });

  test('tracing is off by default and, with -c tracing=true, active on every function and on the stage', () => {
    // Prepare
    const traced = synthesize({ tracing: 'true' }, { bundle: false });

    // Act
    // The service's own functions (CDK's helper functions, such as the dashboard upload's, are not traced).
    const functions = (template: typeof service.template) =>
      Object.values(template.findResources('AWS::Lambda::Function'))
        .filter((fn) => String(fn.Properties.Description ?? '').startsWith('generation-service '))
        .map((fn) => fn.Properties.TracingConfig?.Mode);
    const stage = (template: typeof service.template) =>
      Object.values(template.findResources('AWS::ApiGateway::Stage'))[0]?.Properties.TracingEnabled;

    // Assert
    expect(new Set(functions(service.template))).toEqual(new Set([undefined]));
    expect(stage(service.template)).toBe(false);
    expect(new Set(functions(traced.template))).toEqual(new Set(['Active']));
    expect(stage(traced.template)).toBe(true);
  });

  test('the sweeper runs every minute without retries', () => {
    // Assert
    service.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [functionId(SWEEPER.name), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
  });

  test('alarms watch the API, the authorizer, the sweeper, refunds, timeouts and the provider', () => {
    // Act
    const alarms = Object.values(service.template.findResources('AWS::CloudWatch::Alarm')).map(
      (alarm) => alarm.Properties,
    );
    const onMetric = (name: string) => alarms.filter((alarm) => alarm.MetricName === name);

    // Assert
    expect(JSON.stringify(alarms)).toContain('5XXError');
    expect(
      onMetric('Errors')
        .map((alarm) => alarm.Dimensions[0].Value.Ref)
        .sort(),
    ).toEqual([functionId(AUTHORIZER.name), functionId(SWEEPER.name)].sort());
    expect(onMetric('RefundFailures')).toEqual([
      expect.objectContaining({ Namespace: 'GenerationService', Threshold: 1, Statistic: 'Sum' }),
    ]);
    expect(onMetric('TasksFailed')).toEqual([
      expect.objectContaining({
        Namespace: 'GenerationService',
        Dimensions: [{ Name: 'ErrorCode', Value: 'TIMEOUT' }],
        Threshold: 3,
      }),
    ]);
    expect(onMetric('ProviderErrors')).toHaveLength(1);
    expect(alarms.every((alarm) => alarm.TreatMissingData === 'notBreaching')).toBe(true);
    service.template.resourceCountIs('AWS::SNS::Topic', 0);
  });

  test('outputs name the API URL, the table, the bucket and the secret', () => {
    // Act
    const outputs = Object.keys(service.template.toJSON().Outputs);

    // Assert
    expect(outputs).toEqual(
      expect.arrayContaining(['ApiUrl', 'ApiId', 'StageName', 'TableName', 'BucketName', 'SecretName', 'SecretArn']),
    );
  });

  test('cdk-nag AwsSolutions finds nothing unacknowledged, and every acknowledgement has a reason', () => {
    // Act
    const report = new AwsSolutionsChecks(service.app).validateScope(service.app);
    const acknowledged = service.stack.node
      .findAll()
      .flatMap((construct) => construct.node.metadata)
      .filter((entry) => entry.type === 'aws:cdk:acknowledged-rules')
      .flatMap((entry) => Object.values(entry.data as Record<string, string>));

    // Assert
    expect(report.violations.map((violation) => violation.ruleName)).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const reason of acknowledged) expect(reason.length).toBeGreaterThan(40);
  });
});

describe('the media worker', () => {
  test('reads the table stream through a filtered mapping with bisect, partial batch failures and a DLQ', () => {
    // Act
    const mappings = service.template.findResources('AWS::Lambda::EventSourceMapping');
    const mapping = Object.values(mappings).find(
      (candidate) => candidate.Properties.FunctionName.Ref === functionId(MEDIA_WORKER.name),
    );

    // Assert
    expect(Object.keys(mappings)).toHaveLength(4); // and the webhook worker's, and the dispatcher's two
    expect(mapping?.Properties).toMatchObject({
      FunctionName: { Ref: functionId(MEDIA_WORKER.name) },
      EventSourceArn: { 'Fn::GetAtt': [expect.stringMatching(/^Table/), 'StreamArn'] },
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify(MEDIA_WORKER_FILTER) }] },
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [expect.stringMatching(/^MediaWorkerDlq/), 'Arn'] } },
      },
    });
    service.template.hasResourceProperties('AWS::DynamoDB::Table', {
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
    });
  });

  test('an alarm fires when a record lands in the dead-letter queue', () => {
    // Act
    const alarms = Object.values(service.template.findResources('AWS::CloudWatch::Alarm')).map(
      (alarm) => alarm.Properties,
    );
    const dlq = alarms.filter(
      (alarm) =>
        alarm.MetricName === 'ApproximateNumberOfMessagesVisible' &&
        JSON.stringify(alarm.Dimensions).includes('MediaWorkerDlq'),
    );

    // Assert
    expect(dlq).toHaveLength(1);
    expect(dlq[0]).toMatchObject({
      Namespace: 'AWS/SQS',
      Threshold: 1,
      Dimensions: [
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [expect.stringMatching(/^MediaWorkerDlq/), 'QueueName'] } },
      ],
    });
  });

  test('has no access to the provider: no secret, no provider settings', () => {
    // Act
    const actions = actionsOf(statementsOf(MEDIA_WORKER.name));
    const env = environmentOf(MEDIA_WORKER.name);

    // Assert
    expect(actions.filter((action) => action.startsWith('secretsmanager:'))).toEqual([]);
    expect(Object.keys(env).filter((name) => name.startsWith('PROVIDER_'))).toEqual([]);
    expect(actions).toEqual(expect.arrayContaining(['s3:PutObject', 'dynamodb:UpdateItem', 'dynamodb:GetRecords']));
  });
});

describe('the webhook worker', () => {
  test('reads the table stream through a mapping filtered to ended tasks and claimed attempts, with a DLQ', () => {
    // Act
    const mapping = Object.values(service.template.findResources('AWS::Lambda::EventSourceMapping')).find(
      (candidate) => candidate.Properties.FunctionName.Ref === functionId(WEBHOOK_WORKER.name),
    );

    // Assert
    expect(mapping?.Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [expect.stringMatching(/^Table/), 'StreamArn'] },
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      FilterCriteria: { Filters: WEBHOOK_WORKER_FILTERS.map((filter) => ({ Pattern: JSON.stringify(filter) })) },
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [expect.stringMatching(/^WebhookWorkerDlq/), 'Arn'] } },
      },
    });
  });

  test('may read only its sealing key and result files: no provider, no media writes, no other secret', () => {
    // Act
    const statements = statementsOf(WEBHOOK_WORKER.name);
    const secrets = statements.filter((statement) =>
      actionsOf([statement]).some((a) => a.startsWith('secretsmanager:')),
    );
    const media = statements.filter((statement) => actionsOf([statement]).some((a) => a.startsWith('s3:')));
    const env = environmentOf(WEBHOOK_WORKER.name);

    // Assert
    expect(secrets).toHaveLength(1);
    expect(actionsOf(secrets)).toEqual(['secretsmanager:GetSecretValue']);
    expect(JSON.stringify(secrets[0]?.Resource)).toMatch(/"Ref":"WebhookSecretsKey[0-9A-F]+"/);
    expect(actionsOf(media)).toEqual(['s3:GetObject']);
    expect(Object.keys(env).filter((name) => name.startsWith('PROVIDER_'))).toEqual([]);
    expect(env).toMatchObject({ WEBHOOK_SECRETS_KEY_ARN: { Ref: expect.stringMatching(/^WebhookSecretsKey/) } });
    expect(env).not.toHaveProperty('WEBHOOK_INSECURE_ORIGINS');
  });

  test('only the webhook worker and the routes that make an endpoint secret may read the sealing key; the sweeper claims deliveries but sends nothing', () => {
    // Prepare
    const everyone = [AUTHORIZER, SWEEPER, MEDIA_WORKER, WEBHOOK_WORKER, ...ROUTES].map(
      (definition) => definition.name,
    );

    // Act
    const readers = everyone.filter((name) =>
      JSON.stringify(statementsOf(name)).match(/"Ref":"WebhookSecretsKey[0-9A-F]+"/),
    );
    const sweeperEnv = environmentOf(SWEEPER.name);

    // Assert
    expect(readers).toEqual([WEBHOOK_WORKER.name, 'webhook-endpoints-create', 'webhook-endpoints-rotate']);
    expect(sweeperEnv).not.toHaveProperty('WEBHOOK_SECRETS_KEY_ARN');
  });

  test('the sealing key is a generated secret, kept on destroy with the data, and an output names it', () => {
    // Act
    const secrets = service.template.findResources('AWS::SecretsManager::Secret');
    const [id, key] = Object.entries(secrets).find(([logicalId]) => logicalId.startsWith('WebhookSecretsKey')) ?? [];
    const outputs = service.template.toJSON().Outputs;

    // Assert
    expect(key?.Properties.GenerateSecretString).toMatchObject({ PasswordLength: 64 });
    expect(key?.DeletionPolicy).toBe('Retain');
    expect(outputs.WebhookSecretsKeyArn.Value).toEqual({ Ref: id });
  });

  test('an alarm fires when a record lands in its dead-letter queue', () => {
    // Act
    const alarms = Object.values(service.template.findResources('AWS::CloudWatch::Alarm')).map(
      (alarm) => alarm.Properties,
    );
    const dlq = alarms.filter((alarm) => JSON.stringify(alarm.Dimensions ?? []).includes('WebhookWorkerDlq'));

    // Assert
    expect(dlq).toHaveLength(1);
    expect(dlq[0]).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
    });
  });
});

describe('validation', () => {
  test("the default synth passes CDK's built-in CloudFormation validation and cdk-nag: the report lists nothing", () => {
    // Prepare: the shared synth is the one that runs the built-in validation (test/infra/support.ts).
    const reportFile = path.join(assembly.directory, 'validation-report.json');

    // Act
    const report = JSON.parse(fs.readFileSync(reportFile, 'utf8')) as { pluginReports: unknown[] };

    // Assert
    expect(report.pluginReports).toEqual([]);
  });
});
