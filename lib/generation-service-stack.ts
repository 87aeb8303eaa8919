/**
 * The generation service stack: one DynamoDB table, one Lambda per route behind an API Gateway REST
 * API with a REQUEST authorizer, a scheduled sweeper, the media bucket, the provider key secret and
 * the alarms an operator needs. Everything is driven by the route table (lib/routes.ts), the table
 * definition (functions/store/table.ts) and the context configuration (lib/config.ts).
 */
import {
  CfnOutput,
  DockerImage,
  Duration,
  RemovalPolicy,
  SecretValue,
  Stack,
  type StackProps,
  Token,
  Validations,
} from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  ApiKeySourceType,
  type Authorizer,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  Period,
  RequestAuthorizer,
  ResponseType,
  RestApi,
  type UsagePlan,
} from 'aws-cdk-lib/aws-apigateway';
import {
  AllowedMethods,
  CachePolicy,
  Function as CloudFrontFunction,
  Distribution,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestPolicy,
  ResponseHeadersPolicy,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { HttpOrigin, S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import {
  Alarm,
  AlarmStatusWidget,
  AlarmWidget,
  ComparisonOperator,
  Dashboard,
  type IAlarmAction,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import {
  AccountRecovery,
  type CfnUserPoolClient,
  FeaturePlan,
  Mfa,
  OAuthScope,
  StandardThreatProtectionMode,
  UserPool,
  type UserPoolClient,
} from 'aws-cdk-lib/aws-cognito';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Architecture, FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, type CfnBucket, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import type { Construct, IConstruct } from 'constructs';
import { buildDashboard, DASHBOARD_SRC } from '../dashboard/build';
import { ORIGIN_VERIFY_HEADER, VIEWER_ADDRESS_HEADER } from '../functions/auth/viewer-address';
import {
  QUOTA_EXCEEDED_BODY,
  QUOTA_RETRY_AFTER_SECONDS,
  THROTTLED_BODY,
  THROTTLED_RETRY_AFTER_SECONDS,
} from '../functions/core/rate-plan';
// The alarms read the metric names the handlers emit (EMF), from the one module that defines them.
import {
  INLINE_AUTHORIZER,
  LOG_LEVEL,
  MAX_PENDING_SECONDS,
  MEDIA_SOURCE_HOSTS,
  OIDC_CLIENT_ID,
  OIDC_CLIENT_SECRET_ARN,
  OIDC_ISSUER,
  ORIGIN_VERIFY_SECRET_ARN,
  PROVIDER_CALLBACK_BASE_URL,
  PROVIDER_PROFILE,
  PROVIDER_REFRESH_INTERVAL_SECONDS,
  PUBLIC_ORIGIN,
  RESULT_RETENTION_DAYS,
  USAGE_PLAN_NAME,
} from '../functions/environment/environment';
import { METRICS_NAMESPACE, MetricName } from '../functions/observability/metrics';
import { TABLE } from '../functions/store/table';
import { resolveProviderProfile, type ServiceConfig } from './config';
import { dashboardCsp, PERMISSIONS_POLICY } from './dashboard-headers';
import {
  GenerationFunction,
  MEDIA_RESULTS_PREFIX,
  providerProfileDefine,
  providerReadsDefine,
} from './generation-function';
import {
  AUTHORIZER,
  AUTHORIZER_CACHE_TTL_SECONDS,
  AUTHORIZER_IDENTITY_SOURCES,
  type LambdaDefinition,
  MEDIA_WORKER,
  MEDIA_WORKER_FILTER,
  ROUTES,
  SWEEPER,
  WEBHOOK_WORKER,
  WEBHOOK_WORKER_FILTERS,
  withInlineKeyReads,
} from './routes';

/** JSON bodies of the API Gateway gateway responses (the errors API Gateway answers by itself). */
export const GATEWAY_RESPONSES: readonly {
  type: ResponseType;
  /** Undefined keeps the status API Gateway chose (DEFAULT_4XX covers several 4xx codes). */
  statusCode?: string;
  body: string;
  /** Header values beyond Content-Type, as plain strings (quoted for API Gateway when attached). */
  headers?: Record<string, string>;
}[] = [
  { type: ResponseType.UNAUTHORIZED, statusCode: '401', body: '{"error":"Unauthorized"}' },
  { type: ResponseType.ACCESS_DENIED, statusCode: '403', body: '{"error":"Forbidden"}' },
  // A REST API answers an unknown route with "Missing Authentication Token"; the DESIGN says 404.
  { type: ResponseType.MISSING_AUTHENTICATION_TOKEN, statusCode: '404', body: '{"error":"Not found"}' },
  { type: ResponseType.RESOURCE_NOT_FOUND, statusCode: '404', body: '{"error":"Not found"}' },
  { type: ResponseType.REQUEST_TOO_LARGE, statusCode: '413', body: '{"error":"Payload too large"}' },
  // The stage limit or the account's usage plan: a token is back within a second (whole rates only).
  {
    type: ResponseType.THROTTLED,
    statusCode: '429',
    body: JSON.stringify(THROTTLED_BODY),
    headers: { 'Retry-After': String(THROTTLED_RETRY_AFTER_SECONDS) },
  },
  // A fixed header cannot say when the UTC day ends; an hour is the documented answer.
  {
    type: ResponseType.QUOTA_EXCEEDED,
    statusCode: '429',
    body: JSON.stringify(QUOTA_EXCEEDED_BODY),
    headers: { 'Retry-After': String(QUOTA_RETRY_AFTER_SECONDS) },
  },
  // An allowed caller whose account has no API Gateway API key in a plan (not provisioned by the CLI).
  { type: ResponseType.INVALID_API_KEY, statusCode: '403', body: '{"error":"Forbidden"}' },
  {
    type: ResponseType.AUTHORIZER_FAILURE,
    statusCode: '500',
    body: '{"error":"Internal error","requestId":"$context.requestId"}',
  },
  {
    type: ResponseType.DEFAULT_5XX,
    statusCode: '500',
    body: '{"error":"Internal error","requestId":"$context.requestId"}',
  },
  // messageString is the message already quoted as a JSON string.
  { type: ResponseType.DEFAULT_4XX, body: '{"error":$context.error.messageString}' },
];

/** Props of {@link GenerationServiceStack}. */
export interface GenerationServiceStackProps extends StackProps {
  /** The validated context configuration (see lib/config.ts). */
  config: ServiceConfig;
}

/** The whole service in one stack. */
export class GenerationServiceStack extends Stack {
  /** The single-table store. */
  readonly table: Table;
  /** Result files, served through signed URLs. */
  readonly mediaBucket: Bucket;
  /** The provider API key (created empty or referenced by name). */
  readonly providerSecret: ISecret;
  /** Signs the provider callback URLs of tasks (generated; only the service's functions read it). */
  readonly callbackSecret: Secret;
  /** The REST API. */
  readonly api: RestApi;
  /** One function per route, keyed by route name. */
  readonly routeFunctions: ReadonlyMap<string, GenerationFunction>;
  /** The REQUEST authorizer's function (created in LocalStack mode too, but attached to no route). */
  readonly authorizerFunction: GenerationFunction;
  /** The scheduled sweeper. */
  readonly sweeperFunction: GenerationFunction;
  /** Copies finished tasks' results into the bucket, fed by the table's stream. */
  readonly mediaWorkerFunction: GenerationFunction;
  /** Stream records the media worker gave up on (the sweeper still copies those tasks). */
  readonly mediaWorkerDlq: Queue;
  /** Seals the accounts' webhook signing secrets (generated; the webhook worker and operators read it). */
  readonly webhookSecretsKey: Secret;
  /** Sends webhooks, fed by the table's stream. */
  readonly webhookWorkerFunction: GenerationFunction;
  /** Stream records the webhook worker gave up on. */
  readonly webhookWorkerDlq: Queue;
  /** The identity provider of the dashboard's sign-in (absent in LocalStack mode). */
  readonly userPool?: UserPool;
  /** The service as the user pool's confidential OpenID client. */
  readonly userPoolClient?: UserPoolClient;
  /** One origin for browsers: the dashboard's files and `/api/*` (absent in LocalStack mode). */
  readonly distribution?: Distribution;
  /** The dashboard's static files (served only through the distribution). */
  readonly dashboardBucket?: Bucket;
  /** The default usage plan every account's API Gateway API key starts in (absent in LocalStack mode). */
  readonly defaultUsagePlan?: UsagePlan;
  /** The web ACL in front of the stage (absent in LocalStack mode or with wafRequestsPerIpPerMinute 0). */
  readonly webAcl?: CfnWebACL;
  /** Uploads the built dashboard to its bucket (absent in LocalStack mode). */
  private dashboardDeployment?: BucketDeployment;

  constructor(scope: Construct, id: string, props: GenerationServiceStackProps) {
    super(scope, id, props);
    const { config } = props;
    const dataRemoval = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    this.table = this.createTable(config, dataRemoval);
    this.mediaBucket = this.createMediaBucket(config, dataRemoval);
    this.providerSecret = this.createProviderSecret(config, dataRemoval);
    this.callbackSecret = new Secret(this, 'ProviderCallbackSecret', {
      description: 'Signs the provider callback URL of each task (HMAC-SHA256); generated, never shown',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    this.webhookSecretsKey = new Secret(this, 'WebhookSecretsKey', {
      description:
        "Seals the accounts' webhook signing secrets (AES-256-GCM, key derived with HKDF); generated, never shown",
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    // Losing it would make every account's signing secret unreadable (they would need new ones).
    this.webhookSecretsKey.applyRemovalPolicy(dataRemoval);

    const build = (definition: LambdaDefinition, options: { timeout?: Duration; inlineAuthorizer?: boolean }) =>
      this.createFunction(definition, config, options);
    this.authorizerFunction = build(AUTHORIZER, { timeout: Duration.seconds(10) });
    // Overlapping sweeps are safe (every transition is a conditional write), so the sweeper may run
    // longer than its one-minute period when a large video is being copied.
    this.sweeperFunction = build(SWEEPER, { timeout: Duration.minutes(2) });
    // A 1 GB video streams through in minutes; the copy's own deadline (MEDIA_COPY_TIMEOUT_MS) is shorter.
    this.mediaWorkerFunction = build(MEDIA_WORKER, { timeout: Duration.minutes(15) });
    this.mediaWorkerDlq = this.connectMediaWorker();
    // One attempt waits at most 10 s for its endpoint, and a batch's attempts run side by side.
    this.webhookWorkerFunction = build(WEBHOOK_WORKER, { timeout: Duration.minutes(1) });
    this.webhookWorkerDlq = this.connectWebhookWorker();
    this.routeFunctions = new Map(
      ROUTES.map((route) => [route.name, build(route, { inlineAuthorizer: config.localstack })] as const),
    );

    this.api = this.createApi(config);
    if (!config.localstack) {
      this.defaultUsagePlan = this.createDefaultUsagePlan(config);
      if (config.wafRequestsPerIpPerMinute > 0) this.webAcl = this.createWebAcl(config);
    }
    if (!config.localstack) {
      // LocalStack's free edition has neither Cognito nor CloudFront; there only API keys work.
      const accounts = this.createAccounts(config, dataRemoval);
      this.userPool = accounts.userPool;
      this.userPoolClient = accounts.client;
      this.distribution = accounts.distribution;
      this.dashboardBucket = accounts.bucket;
    }
    this.scheduleSweeper();
    this.createAlarms(config);
    this.acknowledgeNagFindings(config);

    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL of the API (ends with the stage)' });
    new CfnOutput(this, 'ApiId', { value: this.api.restApiId, description: 'REST API id (LocalStack URLs use it)' });
    new CfnOutput(this, 'StageName', { value: this.api.deploymentStage.stageName });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    if (this.defaultUsagePlan) {
      new CfnOutput(this, 'DefaultUsagePlanId', {
        value: this.defaultUsagePlan.usagePlanId,
        description: 'USAGE_PLAN_ID for the operator CLI with --aws (keys create, accounts invite, limits)',
      });
    }
    new CfnOutput(this, 'BucketName', { value: this.mediaBucket.bucketName });
    new CfnOutput(this, 'SecretName', { value: this.providerSecret.secretName });
    new CfnOutput(this, 'WebhookSecretsKeyArn', {
      value: this.webhookSecretsKey.secretArn,
      description: 'WEBHOOK_SECRETS_KEY_ARN for the operator CLI with --aws (webhooks secret)',
    });
    new CfnOutput(this, 'SecretArn', {
      value: this.providerSecret.secretArn,
      description: 'Put the provider API key here: aws secretsmanager put-secret-value --secret-id <this>',
    });
  }

  private createTable(config: ServiceConfig, removalPolicy: RemovalPolicy): Table {
    const gsi = TABLE.pendingIndex;
    const table = new Table(this, 'Table', {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TABLE.ttlAttribute,
      // The media worker's feed: both images, so it can tell the write that made results ready.
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      deletionProtection: config.retainData,
      removalPolicy,
    });
    table.addGlobalSecondaryIndex({
      indexName: gsi.name,
      partitionKey: { name: gsi.partitionKey, type: AttributeType.STRING },
      sortKey: { name: gsi.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.KEYS_ONLY,
    });
    const taskIndex = TABLE.taskIndex;
    table.addGlobalSecondaryIndex({
      indexName: taskIndex.name,
      partitionKey: { name: taskIndex.partitionKey, type: AttributeType.STRING },
      sortKey: { name: taskIndex.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.INCLUDE,
      nonKeyAttributes: [...taskIndex.projected],
    });
    return table;
  }

  /** What every bucket of the stack is: private, TLS only, encrypted, owner-enforced, retained or emptied. */
  private privateBucketProps(config: ServiceConfig, removalPolicy: RemovalPolicy) {
    return {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      encryption: BucketEncryption.S3_MANAGED,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy,
      autoDeleteObjects: !config.retainData,
    };
  }

  private createMediaBucket(config: ServiceConfig, removalPolicy: RemovalPolicy): Bucket {
    const common = this.privateBucketProps(config, removalPolicy);
    // Server access logs record who downloaded which result through a signed URL.
    const accessLogs = new Bucket(this, 'MediaAccessLogs', {
      ...common,
      lifecycleRules: [{ expiration: Duration.days(Math.max(config.logRetentionDays, 1)) }],
    });
    return new Bucket(this, 'MediaBucket', {
      ...common,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'media/',
      lifecycleRules: [
        {
          id: 'expire-results',
          prefix: MEDIA_RESULTS_PREFIX,
          expiration: Duration.days(config.resultRetentionDays),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
    });
  }

  /**
   * The event source mapping of the media worker: only the stream records the filter keeps (tasks whose
   * results just became ready) invoke it; a batch that throws is split in two until the bad record is
   * alone (bisect), records the worker reports are retried alone, and after the retries they go to the
   * dead-letter queue (the sweeper copies a task whose copy waited too long anyway).
   */
  private connectMediaWorker(): Queue {
    const dlq = new Queue(this, 'MediaWorkerDlq', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.mediaWorkerFunction.addEventSource(
      new DynamoEventSource(this.table, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: 10,
        bisectBatchOnError: true,
        reportBatchItemFailures: true,
        retryAttempts: 5,
        maxRecordAge: Duration.hours(1),
        parallelizationFactor: 10,
        onFailure: new SqsDlq(dlq),
        filters: [FilterCriteria.filter(MEDIA_WORKER_FILTER as unknown as Record<string, unknown>)],
      }),
    );
    return dlq;
  }

  /**
   * The webhook worker's event source mapping on the same stream (a table stream serves two readers at
   * full speed; this is the second, beside the media worker): only records the filters keep (a task
   * that ended, a delivery attempt just claimed) invoke it. Failing records are retried alone, then
   * parked in the dead-letter queue; a claimed attempt lost that way is claimed again by the sweeper.
   */
  private connectWebhookWorker(): Queue {
    const dlq = new Queue(this, 'WebhookWorkerDlq', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.webhookWorkerFunction.addEventSource(
      new DynamoEventSource(this.table, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: 10,
        bisectBatchOnError: true,
        reportBatchItemFailures: true,
        retryAttempts: 3,
        maxRecordAge: Duration.hours(1),
        parallelizationFactor: 10,
        onFailure: new SqsDlq(dlq),
        filters: WEBHOOK_WORKER_FILTERS.map((filter) =>
          FilterCriteria.filter(filter as unknown as Record<string, unknown>),
        ),
      }),
    );
    return dlq;
  }

  private createProviderSecret(config: ServiceConfig, removalPolicy: RemovalPolicy): ISecret {
    if (config.providerSecretName !== '') {
      return Secret.fromSecretNameV2(this, 'ProviderSecret', config.providerSecretName);
    }
    // A random placeholder, never a real key: the operator puts the provider key in after deploying.
    const secret = new Secret(this, 'ProviderSecret', {
      description: 'Upstream provider API key; replace the generated placeholder with the real key',
      generateSecretString: { passwordLength: 32, excludePunctuation: true },
    });
    secret.applyRemovalPolicy(removalPolicy);
    return secret;
  }

  private createFunction(
    definition: LambdaDefinition,
    config: ServiceConfig,
    options: { timeout?: Duration; inlineAuthorizer?: boolean },
  ): GenerationFunction {
    const fn = new GenerationFunction(this, pascal(definition.name), {
      entry: definition.entry,
      description: `generation-service ${definition.name}`,
      logRetention: config.logRetentionDays,
      retainLogs: config.retainData,
      timeout: options.timeout,
      architecture: config.localstack && process.arch !== 'arm64' ? Architecture.X86_64 : undefined,
      tracing: config.tracing,
      environment: {
        [LOG_LEVEL.name]: config.logLevel,
        ...(options.inlineAuthorizer ? { [INLINE_AUTHORIZER.name]: 'true' } : {}),
      },
      define: definition.needs.provider
        ? { ...profileDefine(config), ...providerReadsDefine(definition.needs) }
        : undefined,
    });
    const { needs } = definition;
    fn.bindTable(this.table, options.inlineAuthorizer ? withInlineKeyReads(needs.table) : needs.table);
    if (needs.provider) {
      fn.bindProvider(this.providerSecret, config.providerBaseUrl);
      fn.addEnvironment(PROVIDER_PROFILE.name, resolveProviderProfile(config.providerProfile).profile.name);
      fn.addEnvironment(PROVIDER_REFRESH_INTERVAL_SECONDS.name, String(config.providerRefreshIntervalSeconds));
      fn.addEnvironment(MAX_PENDING_SECONDS.name, String(config.maxPendingSeconds));
      // Signing (submit, retries) and checking (the callback route) callback URLs need the secret.
      fn.bindCallbackSecret(this.callbackSecret);
    }
    if (needs.media !== 'none') {
      fn.bindMedia(this.mediaBucket, Duration.seconds(config.mediaUrlTtlSeconds), needs.media);
      // The bucket's lifecycle rule, so tasks can say until when their results exist.
      fn.addEnvironment(RESULT_RETENTION_DAYS.name, String(config.resultRetentionDays));
      if (config.mediaSourceHosts !== '') fn.addEnvironment(MEDIA_SOURCE_HOSTS.name, config.mediaSourceHosts);
    }
    if (needs.webhookSecrets) fn.bindWebhookSecretsKey(this.webhookSecretsKey);
    return fn;
  }

  private createApi(config: ServiceConfig): RestApi {
    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      retention: config.logRetentionDays,
      removalPolicy: config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    // The role is an account-wide (per region) setting; LocalStack does not need it.
    const cloudWatchRole = config.apiGatewayCloudWatchRole && !config.localstack;
    const api = new RestApi(this, 'Api', {
      restApiName: `${config.stackName}-api`,
      description: 'Generation service: image and video generation tasks paid in credits',
      endpointTypes: [EndpointType.REGIONAL],
      // Usage plans identify the caller by the key the authorizer names (usageIdentifierKey), never by a
      // header a client sends. LocalStack mode has no authorizer, hence no usage plans.
      ...(config.localstack ? {} : { apiKeySourceType: ApiKeySourceType.AUTHORIZER }),
      cloudWatchRole,
      // Other stacks' APIs in the region rely on the account setting, so it outlives this stack.
      cloudWatchRoleRemovalPolicy: cloudWatchRole ? RemovalPolicy.RETAIN : undefined,
      deployOptions: {
        stageName: config.stageName,
        throttlingRateLimit: config.throttlingRateLimit,
        throttlingBurstLimit: config.throttlingBurstLimit,
        metricsEnabled: true,
        tracingEnabled: config.tracing,
        // Errors only, and never data traces: a full trace would log the Authorization header.
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            extendedRequestId: AccessLogField.contextExtendedRequestId(),
            requestTime: AccessLogField.contextRequestTime(),
            sourceIp: AccessLogField.contextIdentitySourceIp(),
            userAgent: AccessLogField.contextIdentityUserAgent(),
            httpMethod: AccessLogField.contextHttpMethod(),
            resourcePath: AccessLogField.contextResourcePath(),
            path: AccessLogField.contextPath(),
            status: AccessLogField.contextStatus(),
            responseLength: AccessLogField.contextResponseLength(),
            responseLatency: AccessLogField.contextResponseLatency(),
            principalId: AccessLogField.contextAuthorizerPrincipalId(),
            authorizerStatus: AccessLogField.contextAuthorizerStatus(),
            authorizerLatency: AccessLogField.contextAuthorizerLatency(),
            authorizerError: AccessLogField.contextAuthorizerError(),
            integrationStatus: AccessLogField.contextIntegrationStatus(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            integrationError: AccessLogField.contextIntegrationErrorMessage(),
            errorResponseType: AccessLogField.contextErrorResponseType(),
            errorMessage: AccessLogField.contextErrorMessage(),
          }),
        ),
      },
    });

    // LocalStack's free edition runs no Lambda authorizers: there the handlers authorize inline.
    if (config.authorizerCacheTtlSeconds !== AUTHORIZER_CACHE_TTL_SECONDS) {
      throw new Error(
        "authorizerCacheTtlSeconds must be 0: the authorizer takes a key or a session cookie, so its only identity source is the caller address, and a cache keyed on it alone would share one caller's Allow with others (lib/routes.ts)",
      );
    }
    const authorizer: Authorizer | undefined = config.localstack
      ? undefined
      : new RequestAuthorizer(this, 'ApiKeyAuthorizer', {
          authorizerName: 'key-or-session',
          handler: this.authorizerFunction,
          identitySources: [...AUTHORIZER_IDENTITY_SOURCES],
          resultsCacheTtl: Duration.seconds(AUTHORIZER_CACHE_TTL_SECONDS),
        });

    for (const route of ROUTES) {
      const fn = this.routeFunctions.get(route.name);
      if (!fn) throw new Error(`no function for route ${route.name}`);
      api.root
        .resourceForPath(route.path)
        .addMethod(route.method, new LambdaIntegration(fn, { proxy: true, allowTestInvoke: false }), {
          authorizer: route.auth === 'none' ? undefined : authorizer,
          // Behind the authorizer, every request counts against its account's usage plan.
          apiKeyRequired: route.auth !== 'none' && authorizer !== undefined,
        });
    }

    for (const response of GATEWAY_RESPONSES) {
      api.addGatewayResponse(`Gateway${pascal(response.type.responseType.toLowerCase().replace(/_/g, '-'))}`, {
        type: response.type,
        statusCode: response.statusCode,
        responseHeaders: {
          'Content-Type': "'application/json'",
          ...Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, value]) => [name, `'${value}'`])),
        },
        templates: { 'application/json': response.body },
      });
    }
    return api;
  }

  /**
   * The default usage plan: the limits every API key gets. Each API key of the service has an API
   * Gateway API key of its own (value `usageKeyOf`, enrolled when the key is created or rotated; an
   * account's sessions share one, enrolled at sign-in), so each key has its own bucket; an account given
   * its own limits (`limits set`) moves to a plan of its own. The keys are not in this stack: they come
   * and go at run time.
   *
   * The enrolling functions find the plan by its name: its id would be a circular reference (plan ->
   * stage -> deployment -> methods -> functions).
   */
  private createDefaultUsagePlan(config: ServiceConfig): UsagePlan {
    const name = `${config.stackName}-default`;
    const plan = this.api.addUsagePlan('DefaultUsagePlan', {
      name,
      description: 'Default request limits per API key (lib/config.ts: keyRateLimit, keyBurstLimit, keyDailyQuota)',
      throttle: { rateLimit: config.keyRateLimit, burstLimit: config.keyBurstLimit },
      ...(config.keyDailyQuota > 0 ? { quota: { limit: config.keyDailyQuota, period: Period.DAY } } : {}),
      apiStages: [{ api: this.api, stage: this.api.deploymentStage }],
    });
    const apiGateway = (path: string) => `arn:${this.partition}:apigateway:${this.region}::${path}`;
    for (const route of ROUTES) {
      if (!route.needs.usagePlans) continue;
      const fn = this.functionFor(route);
      fn.addEnvironment(USAGE_PLAN_NAME.name, name);
      // Create and find API keys, find the default plan, add keys to plans: nothing else of API Gateway.
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['apigateway:GET', 'apigateway:POST'],
          resources: [apiGateway('/apikeys'), apiGateway('/usageplans'), apiGateway('/usageplans/*/keys')],
        }),
      );
    }
    return plan;
  }

  /**
   * A regional web ACL on the stage, evaluated before API Gateway counts a request against the stage
   * limit: addresses on Amazon's IP reputation list are blocked, and one address sending more than
   * `wafRequestsPerIpPerMinute` gets 429s from the web ACL. So a flood, authenticated or not, must come
   * from many addresses to reach the stage limit that paying callers share (README "Rate limits").
   */
  private createWebAcl(config: ServiceConfig): CfnWebACL {
    const visibility = (metricName: string) => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    const acl = new CfnWebACL(this, 'ApiWebAcl', {
      scope: 'REGIONAL',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`${config.stackName}-api`),
      customResponseBodies: {
        tooMany: { contentType: 'APPLICATION_JSON', content: JSON.stringify(THROTTLED_BODY) },
      },
      rules: [
        {
          name: 'ip-reputation',
          priority: 0,
          overrideAction: { none: {} },
          statement: {
            managedRuleGroupStatement: { vendorName: 'AWS', name: 'AWSManagedRulesAmazonIpReputationList' },
          },
          visibilityConfig: visibility('ip-reputation'),
        },
        {
          name: 'requests-per-address',
          priority: 1,
          action: {
            block: {
              customResponse: {
                responseCode: 429,
                customResponseBodyKey: 'tooMany',
                // The web ACL counts over a minute; a minute's wait always clears the address.
                responseHeaders: [{ name: 'Retry-After', value: '60' }],
              },
            },
          },
          statement: {
            rateBasedStatement: {
              limit: config.wafRequestsPerIpPerMinute,
              evaluationWindowSec: 60,
              aggregateKeyType: 'IP',
            },
          },
          visibilityConfig: visibility('requests-per-address'),
        },
      ],
    });
    new CfnWebACLAssociation(this, 'ApiWebAclAssociation', {
      resourceArn: this.api.deploymentStage.stageArn,
      webAclArn: acl.attrArn,
    });
    return acl;
  }

  /**
   * Sign-in and the dashboard's origin: a Cognito user pool (invitation only: no self sign-up) with the
   * service as its confidential client (code flow, PKCE by the client), the client secret in Secrets
   * Manager, a private bucket for the dashboard's files, and a CloudFront distribution serving them and
   * forwarding `/api/*` to the API so the session cookie is first-party.
   *
   * No dependency cycle: the API origin is built from the RestApi's id (not its stage, which depends on
   * every method and so on every function), so functions may take the distribution's domain.
   */
  private createAccounts(config: ServiceConfig, removalPolicy: RemovalPolicy) {
    const userPool = new UserPool(this, 'UserPool', {
      userPoolName: `${config.stackName}-users`,
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      autoVerify: { email: true },
      standardAttributes: { email: { required: true, mutable: true } },
      passwordPolicy: {
        minLength: 12,
        requireDigits: true,
        requireLowercase: true,
        requireUppercase: true,
        requireSymbols: true,
      },
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      // Threat protection (compromised credentials, adaptive authentication) enforced.
      featurePlan: FeaturePlan.PLUS,
      standardThreatProtectionMode: StandardThreatProtectionMode.FULL_FUNCTION,
      deletionProtection: config.retainData,
      removalPolicy,
    });
    userPool.addDomain('HostedUi', {
      cognitoDomain: {
        // Globally unique per region: the stack name (cut before the token is appended) and the account.
        domainPrefix: `${config.stackName
          .toLowerCase()
          .replace(/[^a-z0-9-]/g, '-')
          .slice(0, 50)}-${this.account}`,
      },
    });

    const bucket = new Bucket(this, 'DashboardBucket', this.privateBucketProps(config, removalPolicy));
    const pageHeaders = this.dashboardHeadersPolicy();
    const apiDomain = `${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}`;
    // Behind the distribution the API's sourceIp is CloudFront's. The viewer's address travels in
    // X-Viewer-Address, set here by CloudFront (overwriting whatever the viewer sent), and is believed
    // only next to X-Origin-Verify: a secret CloudFront adds as an origin custom header and the
    // authorizer checks (functions/auth/viewer-address.ts). A direct call to the API cannot forge it.
    const originVerify = new Secret(this, 'OriginVerifySecret', {
      description: 'Sent by the distribution to the API so that its X-Viewer-Address can be trusted',
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
    });
    originVerify.applyRemovalPolicy(RemovalPolicy.DESTROY);
    const viewerAddress = new CloudFrontFunction(this, 'ViewerAddressFunction', {
      comment: 'Passes the viewer address to the API as X-Viewer-Address',
      runtime: FunctionRuntime.JS_2_0,
      code: FunctionCode.fromInline(
        `function handler(event) { event.request.headers['${VIEWER_ADDRESS_HEADER}'] = { value: event.viewer.ip }; return event.request; }`,
      ),
    });
    const distribution = new Distribution(this, 'Distribution', {
      comment: 'Generation service: dashboard and /api/* on one origin',
      defaultRootObject: 'index.html',
      httpVersion: HttpVersion.HTTP2_AND_3,
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        responseHeadersPolicy: pageHeaders,
      },
      additionalBehaviors: {
        '/api/*': {
          origin: new HttpOrigin(apiDomain, {
            originPath: `/${config.stageName}`,
            protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
            // A dynamic reference: CloudFormation resolves it at deploy, the template never holds the value.
            customHeaders: { [ORIGIN_VERIFY_HEADER]: originVerify.secretValue.unsafeUnwrap() },
          }),
          functionAssociations: [{ function: viewerAddress, eventType: FunctionEventType.VIEWER_REQUEST }],
          viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
          allowedMethods: AllowedMethods.ALLOW_ALL,
          // Every answer is per caller: nothing is cached, and everything but Host reaches the API.
          cachePolicy: CachePolicy.CACHING_DISABLED,
          originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        },
      },
    });
    const origin = `https://${distribution.distributionDomainName}`;
    // The built dashboard: esbuild runs on this machine at synth (local bundling; the Docker image is
    // only CDK's fallback and is never pulled while the local build works), and the distribution's
    // cache is invalidated so a deploy shows the new files at once.
    this.dashboardDeployment = new BucketDeployment(this, 'DashboardFiles', {
      sources: [
        Source.asset(DASHBOARD_SRC, {
          bundling: {
            image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim'),
            local: {
              tryBundle(outputDir: string) {
                buildDashboard(outputDir);
                return true;
              },
            },
          },
        }),
      ],
      destinationBucket: bucket,
      distribution,
      distributionPaths: ['/*'],
      prune: true,
      memoryLimit: 512,
    });

    const client = userPool.addClient('ServiceClient', {
      userPoolClientName: 'generation-service',
      generateSecret: true,
      authFlows: {},
      preventUserExistenceErrors: true,
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL],
        callbackUrls: [`${origin}/api/auth/callback`],
        logoutUrls: [`${origin}/`],
      },
      idTokenValidity: Duration.minutes(15),
      accessTokenValidity: Duration.minutes(15),
      refreshTokenValidity: Duration.hours(1),
    });
    // The secret's value is a CloudFormation attribute of the client, never in the template.
    const clientSecret = new Secret(this, 'OidcClientSecret', {
      description: 'Client secret of the service as the user pool OpenID client',
      secretStringValue: SecretValue.resourceAttribute(
        (client.node.defaultChild as CfnUserPoolClient).attrClientSecret,
      ),
    });
    clientSecret.applyRemovalPolicy(RemovalPolicy.DESTROY);

    const issuer = `https://cognito-idp.${this.region}.${this.urlSuffix}/${userPool.userPoolId}`;
    for (const definition of [AUTHORIZER, ...ROUTES].filter((d) => d.needs.viewerAddress)) {
      const fn = this.functionFor(definition);
      fn.addEnvironment(ORIGIN_VERIFY_SECRET_ARN.name, originVerify.secretArn);
      originVerify.grantRead(fn);
    }
    for (const route of ROUTES) {
      const fn = this.functionFor(route);
      fn.addEnvironment(PUBLIC_ORIGIN.name, origin);
      // The provider calls back through the distribution's /api/* (tasks get a callBackUrl only with it).
      if (route.needs.provider) fn.addEnvironment(PROVIDER_CALLBACK_BASE_URL.name, origin);
      if (route.needs.oidc) {
        fn.addEnvironment(OIDC_ISSUER.name, issuer);
        fn.addEnvironment(OIDC_CLIENT_ID.name, client.userPoolClientId);
        fn.addEnvironment(OIDC_CLIENT_SECRET_ARN.name, clientSecret.secretArn);
        clientSecret.grantRead(fn);
      }
    }

    // The sweeper resends tasks the provider never took: they get a callback URL too.
    this.sweeperFunction.addEnvironment(PROVIDER_CALLBACK_BASE_URL.name, origin);

    new CfnOutput(this, 'DashboardUrl', { value: `${origin}/`, description: 'The dashboard and /api/* for browsers' });
    new CfnOutput(this, 'DashboardBucketName', {
      value: bucket.bucketName,
      description: 'Upload the built dashboard here',
    });
    new CfnOutput(this, 'UserPoolId', {
      value: userPool.userPoolId,
      description: 'USER_POOL_ID for admin accounts invite --aws',
    });
    return { userPool, client, distribution, bucket };
  }

  private scheduleSweeper(): void {
    new Rule(this, 'SweeperSchedule', {
      description: 'Drives every pending generation task to a terminal state',
      schedule: Schedule.rate(Duration.minutes(1)),
      // A missed tick is covered by the next one, so stale or failed invocations are not retried.
      targets: [new LambdaFunction(this.sweeperFunction, { retryAttempts: 0, maxEventAge: Duration.minutes(1) })],
    });
  }

  private createAlarms(config: ServiceConfig): void {
    const actions: IAlarmAction[] = [];
    if (config.alarmEmail !== '') {
      const topic = new Topic(this, 'AlarmTopic', { displayName: 'Generation service alarms', enforceSSL: true });
      topic.addSubscription(new EmailSubscription(config.alarmEmail));
      actions.push(new SnsAction(topic));
    }
    const fiveMinutes = Duration.minutes(5);
    const custom = (metricName: MetricName, period: Duration, dimensionsMap?: Record<string, string>) =>
      new Metric({ namespace: METRICS_NAMESPACE, metricName, dimensionsMap, statistic: 'Sum', period });

    const alarms = [
      new Alarm(this, 'Api5xxRateAlarm', {
        alarmDescription: 'More than 5% of API requests failed with 5xx (over at least 20 requests) for 3 minutes',
        metric: new MathExpression({
          expression: 'IF(requests >= 20, 100 * errors / requests, 0)',
          usingMetrics: {
            errors: this.api.metricServerError({ statistic: 'Sum', period: Duration.minutes(1) }),
            requests: this.api.metricCount({ statistic: 'Sum', period: Duration.minutes(1) }),
          },
          period: Duration.minutes(1),
          label: '5xx rate (%)',
        }),
        threshold: 5,
        evaluationPeriods: 3,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'Api5xxCountAlarm', {
        alarmDescription: 'At least 10 API requests failed with 5xx within 5 minutes',
        metric: this.api.metricServerError({ statistic: 'Sum', period: fiveMinutes }),
        threshold: 10,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'AuthorizerErrorsAlarm', {
        alarmDescription: 'The authorizer failed: every affected request was answered 500',
        metric: this.authorizerFunction.metricErrors({ statistic: 'Sum', period: fiveMinutes }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'SweeperErrorsAlarm', {
        alarmDescription: 'The sweeper failed in 2 of the last 3 five-minute periods: pending tasks may be stuck',
        metric: this.sweeperFunction.metricErrors({ statistic: 'Sum', period: fiveMinutes }),
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'RefundFailuresAlarm', {
        alarmDescription: 'A refund could not be written: a customer may be owed credits (see the logs)',
        metric: custom(MetricName.RefundFailures, fiveMinutes),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'TasksTimingOutAlarm', {
        alarmDescription: `At least ${config.timeoutAlarmThreshold} tasks failed with TIMEOUT within 15 minutes`,
        metric: custom(MetricName.TasksFailed, Duration.minutes(15), { ErrorCode: 'TIMEOUT' }),
        threshold: config.timeoutAlarmThreshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'MediaWorkerDlqAlarm', {
        alarmDescription:
          'The media worker gave up on a stream record (it is in MediaWorkerDlq): the sweeper copies such a task after 5 minutes; look at the worker logs',
        metric: this.mediaWorkerDlq.metricApproximateNumberOfMessagesVisible({
          period: fiveMinutes,
          statistic: 'Maximum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'WebhookWorkerDlqAlarm', {
        alarmDescription:
          'The webhook worker gave up on a stream record (it is in WebhookWorkerDlq): a task may not have opened its webhook delivery; look at the worker logs',
        metric: this.webhookWorkerDlq.metricApproximateNumberOfMessagesVisible({
          period: fiveMinutes,
          statistic: 'Maximum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'ProviderErrorsAlarm', {
        alarmDescription: `At least ${config.providerErrorAlarmThreshold} provider calls failed within 5 minutes`,
        metric: custom(MetricName.ProviderErrors, fiveMinutes),
        threshold: config.providerErrorAlarmThreshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    ];
    for (const alarm of alarms) alarm.addAlarmAction(...actions);

    // One page for what the alarms watch: each alarm's metric against its threshold, and the state of all.
    const dashboard = new Dashboard(this, 'OperationsDashboard', {
      dashboardName: `${config.stackName}-operations`,
      defaultInterval: Duration.hours(3),
    });
    dashboard.addWidgets(new AlarmStatusWidget({ title: 'Alarms', alarms, width: 24, height: 3 }));
    for (let at = 0; at < alarms.length; at += 3) {
      dashboard.addWidgets(
        ...alarms
          .slice(at, at + 3)
          .map((alarm) => new AlarmWidget({ alarm, title: alarm.node.id, width: 8, height: 6 })),
      );
    }
    new CfnOutput(this, 'DashboardName', {
      value: `${config.stackName}-operations`,
      description: 'CloudWatch dashboard',
    });
  }

  /** Each acknowledgement names the finding and why it does not apply here. */
  private acknowledgeNagFindings(config: ServiceConfig): void {
    const acknowledge = (scope: IConstruct, id: string, reason: string) =>
      Validations.of(scope).acknowledge({ id, reason });
    this.acknowledgeAccountFindings(acknowledge);
    for (const fn of [
      this.authorizerFunction,
      this.sweeperFunction,
      this.mediaWorkerFunction,
      this.webhookWorkerFunction,
      ...this.routeFunctions.values(),
    ]) {
      acknowledge(
        fn,
        'AwsSolutions-L1',
        'nodejs24.x is the runtime the project targets and tests (the tests, the local stack and the bench run on the same Node 24, pinned in package.json); moving to a newer runtime is a deliberate, tested upgrade',
      );
    }
    const bucketArn = `<${this.getLogicalId(this.mediaBucket.node.defaultChild as CfnBucket)}.Arn>`;
    const resultsFinding = `AwsSolutions-IAM5[Resource::${bucketArn}/${MEDIA_RESULTS_PREFIX}*]`;
    const secretFinding = `AwsSolutions-IAM5[Resource::${this.secretArnPattern()}]`;
    acknowledge(
      this.mediaWorkerFunction.executionRole,
      'AwsSolutions-IAM5[Resource::*]',
      'dynamodb:ListStreams, which the stream event source needs, has no resource-level permissions; the read actions (GetRecords, GetShardIterator, DescribeStream) are granted on the table stream only',
    );
    acknowledge(
      this.mediaWorkerDlq,
      'AwsSolutions-SQS3',
      'This queue is itself the dead-letter queue of the media worker; nothing consumes it automatically',
    );
    acknowledge(
      this.webhookWorkerFunction.executionRole,
      'AwsSolutions-IAM5[Resource::*]',
      'dynamodb:ListStreams, which the stream event source needs, has no resource-level permissions; the read actions (GetRecords, GetShardIterator, DescribeStream) are granted on the table stream only',
    );
    acknowledge(
      this.webhookWorkerDlq,
      'AwsSolutions-SQS3',
      'This queue is itself the dead-letter queue of the webhook worker; nothing consumes it automatically',
    );
    acknowledge(
      this.webhookSecretsKey,
      'AwsSolutions-SMG4',
      "Seals the accounts' webhook signing secrets: a new value would leave every sealed secret unreadable; accounts rotate their own secrets (webhooks secret), and this key changes only with a re-seal",
    );
    for (const definition of [AUTHORIZER, SWEEPER, MEDIA_WORKER, WEBHOOK_WORKER, ...ROUTES]) {
      const fn = this.functionFor(definition);
      if (definition.needs.media !== 'none') {
        acknowledge(
          fn.executionRole,
          resultsFinding,
          'Result keys are per user and per task, so the grant is the results/ prefix: Put/Get only, no listing, no deletes, nothing outside the prefix',
        );
      }
      if (config.tracing) {
        acknowledge(
          fn.executionRole,
          'AwsSolutions-IAM5[Resource::*]',
          "Active tracing (tracing=true): X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions, so their grant is on *",
        );
      }
      if (definition.needs.usagePlans && !config.localstack) {
        acknowledge(
          fn.executionRole,
          // As cdk-nag prints it: the region literally when the stack has one (a CLI synth), else the token.
          `AwsSolutions-IAM5[Resource::arn:${Token.isUnresolved(this.partition) ? '<AWS::Partition>' : this.partition}:apigateway:${Token.isUnresolved(this.region) ? '<AWS::Region>' : this.region}::/usageplans/*/keys]`,
          "Adding a key to its account's usage plan: the plan ids are made at run time (account plans) or would be a circular reference (the default plan), and GET/POST are the only actions",
        );
      }
      if (definition.needs.provider && config.providerSecretName !== '') {
        acknowledge(
          fn.executionRole,
          secretFinding,
          'A secret referenced by name has a random six-character ARN suffix; <name>-?????? matches that one secret and GetSecretValue is the only action',
        );
      }
    }
    if (this.providerSecret instanceof Secret) {
      acknowledge(
        this.providerSecret,
        'AwsSolutions-SMG4',
        'A third-party provider API key: it can only be rotated at the provider, by the operator (put-secret-value), so there is no rotation Lambda to attach',
      );
    }
    acknowledge(
      this.callbackSecret,
      'AwsSolutions-SMG4',
      'Signs the callback URLs of pending tasks: rotating it would void the URL of every task in flight (those tasks then finish by polling); rotate by hand with put-secret-value when it must change',
    );
    acknowledge(
      this.api,
      'AwsSolutions-APIG2',
      'Every handler validates its input with valibot and answers the DESIGN.md 400 body; an API Gateway validator would duplicate the schema with a different error format',
    );
    if (!this.webAcl) {
      acknowledge(
        this.api,
        'AwsSolutions-APIG3',
        config.localstack
          ? 'LocalStack mode: its free edition does not emulate WAF'
          : 'The web ACL was turned off (wafRequestsPerIpPerMinute 0): the stage limit and the per-account usage plans remain',
      );
    }
    const cloudWatchRole = this.api.node.tryFindChild('CloudWatchRole');
    if (cloudWatchRole) {
      acknowledge(
        cloudWatchRole,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        'The AWS-documented service role policy for the account-level API Gateway logging role; it must write to log groups API Gateway creates per stage',
      );
    }
    for (const method of this.api.methods) {
      acknowledge(
        method,
        'AwsSolutions-COG4',
        config.localstack
          ? 'LocalStack mode: the free edition runs no authorizers, so the handlers authorize inline'
          : 'Callers are machines holding API keys, not Cognito users: every method uses the REQUEST authorizer',
      );
      if (config.localstack) {
        acknowledge(
          method,
          'AwsSolutions-APIG4',
          'LocalStack mode only: the free edition runs no Lambda authorizers, so every handler authorizes inline (INLINE_AUTHORIZER=true)',
        );
      }
    }
  }

  /**
   * The dashboard pages' headers (lib/dashboard-headers.ts, which the local gateway sends too), plus
   * HSTS; results load from the media bucket's own origin, where signed URLs point.
   */
  private dashboardHeadersPolicy(): ResponseHeadersPolicy {
    const mediaOrigin = `https://${this.mediaBucket.bucketRegionalDomainName}`;
    return new ResponseHeadersPolicy(this, 'DashboardHeaders', {
      comment: 'Dashboard: strict CSP and security headers',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: dashboardCsp([mediaOrigin]), override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
        strictTransportSecurity: {
          accessControlMaxAge: Duration.days(365),
          includeSubdomains: true,
          override: true,
        },
      },
      customHeadersBehavior: {
        customHeaders: [
          { header: 'Permissions-Policy', value: PERMISSIONS_POLICY, override: true },
          { header: 'Cross-Origin-Opener-Policy', value: 'same-origin', override: true },
        ],
      },
    });
  }

  /** Findings on the sign-in and dashboard resources, each with why it does not apply. */
  private acknowledgeAccountFindings(acknowledge: (scope: IConstruct, id: string, reason: string) => void): void {
    for (const method of this.api.methods) {
      const route = ROUTES.find((r) => method.resource.path === r.path && method.httpMethod === r.method);
      if (route?.auth !== 'none') continue;
      acknowledge(
        method,
        'AwsSolutions-APIG4',
        'Starting sign-in and its callback are where a visitor without credentials arrives; the callback creates a session only for a code the user pool issued, with PKCE, state and nonce checked',
      );
    }
    if (!this.userPool || !this.distribution || !this.dashboardBucket) return;
    acknowledge(
      this.userPool,
      'AwsSolutions-COG2',
      'MFA (TOTP) is offered to every user; requiring it is a product decision left open for the closed beta, and threat protection is enforced',
    );
    acknowledge(
      this.dashboardBucket,
      'AwsSolutions-S1',
      'Holds only the public build of the dashboard, readable solely by the distribution (OAC); there is nothing per user to audit in its reads',
    );
    const originVerify = this.node.tryFindChild('OriginVerifySecret');
    if (originVerify) {
      acknowledge(
        originVerify,
        'AwsSolutions-SMG4',
        'Shared only between the distribution (origin custom header) and the authorizer; a rotation takes a cdk deploy so that CloudFront sends the new value (README "Accounts and sign-in")',
      );
    }
    acknowledge(
      this.distribution,
      'AwsSolutions-CFR1',
      'The service is offered wherever API Gateway is; no country is excluded',
    );
    acknowledge(
      this.distribution,
      'AwsSolutions-CFR2',
      'API Gateway stage throttling bounds /api/*, and the static files are cached by CloudFront; a WAF web ACL (cost per rule and request) is an operator choice to add with the custom domain',
    );
    acknowledge(
      this.distribution,
      'AwsSolutions-CFR3',
      'Every /api/* request is in the API access log (with the caller, status and authorizer outcome); the static files are the same for everybody',
    );
    acknowledge(
      this.distribution,
      'AwsSolutions-CFR4',
      'No custom domain is configured, so the distribution uses the default *.cloudfront.net certificate, whose policy CloudFront fixes; with a custom domain, use TLSv1.2_2021 (README)',
    );
    // The bucket deployment's handler is CDK's own singleton function (one per stack); its grants are
    // CDK's, acknowledged finding by finding so that anything new still fails the synth.
    const deploymentHandler = this.node.children.find((child) =>
      child.node.id.startsWith('Custom::CDKBucketDeployment'),
    );
    if (deploymentHandler && this.dashboardDeployment) {
      acknowledge(
        deploymentHandler,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        "CDK's bucket-deployment handler writes its logs with the basic execution role; it runs only during a deploy",
      );
      const bucketArn = `<${this.getLogicalId(this.dashboardBucket.node.defaultChild as CfnBucket)}.Arn>`;
      // The bootstrap bucket's ARN prints with the partition and region literal when the stack's
      // environment fixes them (cdk.json), and as placeholders otherwise: both spellings, one bucket.
      const region = Token.isUnresolved(this.region) ? '<AWS::Region>' : this.region;
      const bootstrapAssets = [`arn:aws:s3:::`, 'arn:<AWS::Partition>:s3:::'].flatMap((prefix) =>
        [region, '<AWS::Region>'].map((where) => `Resource::${prefix}cdk-hnb659fds-assets-<AWS::AccountId>-${where}/*`),
      );
      const grants = [
        'Action::s3:GetBucket*',
        'Action::s3:GetObject*',
        'Action::s3:List*',
        'Action::s3:Abort*',
        'Action::s3:DeleteObject*',
        `Resource::${bucketArn}/*`,
        ...new Set(bootstrapAssets),
        'Resource::*',
      ];
      for (const grant of grants) {
        acknowledge(
          deploymentHandler,
          `AwsSolutions-IAM5[${grant}]`,
          "CDK's bucket-deployment grants: read the dashboard asset from the bootstrap bucket, replace the files of the dashboard bucket, invalidate the distribution (invalidations take no resource scope)",
        );
      }
      acknowledge(
        deploymentHandler,
        'AwsSolutions-L1',
        'The runtime of the bucket-deployment handler is chosen by aws-cdk-lib and follows its releases',
      );
    }
    const secret = this.node.tryFindChild('OidcClientSecret');
    if (secret) {
      acknowledge(
        secret,
        'AwsSolutions-SMG4',
        'The value is the Cognito app client secret, which Cognito cannot rotate in place; rotating it means a new app client and a redeploy',
      );
    }
  }

  /** The resource pattern `bindProvider` grants for a secret referenced by name, as cdk-nag prints it. */
  private secretArnPattern(): string {
    return `arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${this.providerSecret.secretName}-??????`;
  }

  private functionFor(definition: LambdaDefinition): GenerationFunction {
    if (definition === AUTHORIZER) return this.authorizerFunction;
    if (definition === SWEEPER) return this.sweeperFunction;
    if (definition === MEDIA_WORKER) return this.mediaWorkerFunction;
    if (definition === WEBHOOK_WORKER) return this.webhookWorkerFunction;
    const fn = this.routeFunctions.get(definition.name);
    if (!fn) throw new Error(`no function for ${definition.name}`);
    return fn;
  }
}

/** `submit-image` -> `SubmitImage`: construct ids and logical ids stay readable. */
/** The provider profile, fixed into the bundles of the functions that call the provider. */
function profileDefine(config: ServiceConfig): Record<string, string> {
  const { profile, json } = resolveProviderProfile(config.providerProfile);
  return providerProfileDefine(profile.name, json);
}

function pascal(kebab: string): string {
  return kebab
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
