/**
 * The generation service stack: one DynamoDB table, one Lambda per route behind an API Gateway REST
 * API with a REQUEST authorizer, a scheduled sweeper, the media bucket, the provider key secret and
 * the alarms an operator needs. Everything is driven by the route table (lib/routes.ts), the table
 * definition (functions/store/table.ts) and the context configuration (lib/config.ts).
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  type Authorizer,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  RequestAuthorizer,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  ComparisonOperator,
  type IAlarmAction,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Architecture } from 'aws-cdk-lib/aws-lambda';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, type CfnBucket, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct, IConstruct } from 'constructs';
// The alarms read the metric names the handlers emit (EMF), from the one module that defines them.
import { METRICS_NAMESPACE, MetricName } from '../functions/observability/metrics';
import { TABLE } from '../functions/store/table';
import type { ServiceConfig } from './config';
import { GenerationFunction, MEDIA_RESULTS_PREFIX } from './generation-function';
import { AUTHORIZER, AUTHORIZER_IDENTITY_SOURCES, type LambdaDefinition, ROUTES, SWEEPER } from './routes';

/** JSON bodies of the API Gateway gateway responses (the errors API Gateway answers by itself). */
export const GATEWAY_RESPONSES: readonly {
  type: ResponseType;
  /** Undefined keeps the status API Gateway chose (DEFAULT_4XX covers several 4xx codes). */
  statusCode?: string;
  body: string;
}[] = [
  { type: ResponseType.UNAUTHORIZED, statusCode: '401', body: '{"error":"Unauthorized"}' },
  { type: ResponseType.ACCESS_DENIED, statusCode: '403', body: '{"error":"Forbidden"}' },
  // A REST API answers an unknown route with "Missing Authentication Token"; the DESIGN says 404.
  { type: ResponseType.MISSING_AUTHENTICATION_TOKEN, statusCode: '404', body: '{"error":"Not found"}' },
  { type: ResponseType.RESOURCE_NOT_FOUND, statusCode: '404', body: '{"error":"Not found"}' },
  { type: ResponseType.REQUEST_TOO_LARGE, statusCode: '413', body: '{"error":"Payload too large"}' },
  { type: ResponseType.THROTTLED, statusCode: '429', body: '{"error":"Too many requests"}' },
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
  /** The REST API. */
  readonly api: RestApi;
  /** One function per route, keyed by route name. */
  readonly routeFunctions: ReadonlyMap<string, GenerationFunction>;
  /** The REQUEST authorizer's function (created in LocalStack mode too, but attached to no route). */
  readonly authorizerFunction: GenerationFunction;
  /** The scheduled sweeper. */
  readonly sweeperFunction: GenerationFunction;

  constructor(scope: Construct, id: string, props: GenerationServiceStackProps) {
    super(scope, id, props);
    const { config } = props;
    const dataRemoval = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    this.table = this.createTable(config, dataRemoval);
    this.mediaBucket = this.createMediaBucket(config, dataRemoval);
    this.providerSecret = this.createProviderSecret(config, dataRemoval);

    const build = (definition: LambdaDefinition, options: { timeout?: Duration; inlineAuthorizer?: boolean }) =>
      this.createFunction(definition, config, options);
    this.authorizerFunction = build(AUTHORIZER, { timeout: Duration.seconds(10) });
    // Overlapping sweeps are safe (every transition is a conditional write), so the sweeper may run
    // longer than its one-minute period when a large video is being copied.
    this.sweeperFunction = build(SWEEPER, { timeout: Duration.minutes(2) });
    this.routeFunctions = new Map(
      ROUTES.map((route) => [route.name, build(route, { inlineAuthorizer: config.localstack })] as const),
    );

    this.api = this.createApi(config);
    this.scheduleSweeper();
    this.createAlarms(config);
    this.acknowledgeNagFindings(config);

    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL of the API (ends with the stage)' });
    new CfnOutput(this, 'ApiId', { value: this.api.restApiId, description: 'REST API id (LocalStack URLs use it)' });
    new CfnOutput(this, 'StageName', { value: this.api.deploymentStage.stageName });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'BucketName', { value: this.mediaBucket.bucketName });
    new CfnOutput(this, 'SecretName', { value: this.providerSecret.secretName });
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
      deletionProtection: config.retainData,
      removalPolicy,
    });
    table.addGlobalSecondaryIndex({
      indexName: gsi.name,
      partitionKey: { name: gsi.partitionKey, type: AttributeType.STRING },
      sortKey: { name: gsi.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.KEYS_ONLY,
    });
    return table;
  }

  private createMediaBucket(config: ServiceConfig, removalPolicy: RemovalPolicy): Bucket {
    const common = {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      encryption: BucketEncryption.S3_MANAGED,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy,
      autoDeleteObjects: !config.retainData,
    };
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
      environment: {
        LOG_LEVEL: config.logLevel,
        ...(options.inlineAuthorizer ? { INLINE_AUTHORIZER: 'true' } : {}),
      },
    });
    const { needs } = definition;
    fn.bindTable(this.table, needs.table);
    if (needs.provider) {
      fn.bindProvider(this.providerSecret, config.providerBaseUrl);
      fn.addEnvironment('PROVIDER_REFRESH_INTERVAL_SECONDS', String(config.providerRefreshIntervalSeconds));
      fn.addEnvironment('MAX_PENDING_SECONDS', String(config.maxPendingSeconds));
    }
    if (needs.media === 'write') fn.bindMedia(this.mediaBucket, Duration.seconds(config.mediaUrlTtlSeconds));
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
      cloudWatchRole,
      // Other stacks' APIs in the region rely on the account setting, so it outlives this stack.
      cloudWatchRoleRemovalPolicy: cloudWatchRole ? RemovalPolicy.RETAIN : undefined,
      deployOptions: {
        stageName: config.stageName,
        throttlingRateLimit: config.throttlingRateLimit,
        throttlingBurstLimit: config.throttlingBurstLimit,
        metricsEnabled: true,
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
    const authorizer: Authorizer | undefined = config.localstack
      ? undefined
      : new RequestAuthorizer(this, 'ApiKeyAuthorizer', {
          authorizerName: 'api-key',
          handler: this.authorizerFunction,
          identitySources: [...AUTHORIZER_IDENTITY_SOURCES],
          resultsCacheTtl: Duration.seconds(config.authorizerCacheTtlSeconds),
        });

    for (const route of ROUTES) {
      const fn = this.routeFunctions.get(route.name);
      if (!fn) throw new Error(`no function for route ${route.name}`);
      api.root
        .resourceForPath(route.path)
        .addMethod(route.method, new LambdaIntegration(fn, { proxy: true, allowTestInvoke: false }), {
          authorizer,
        });
    }

    for (const response of GATEWAY_RESPONSES) {
      api.addGatewayResponse(`Gateway${pascal(response.type.responseType.toLowerCase().replace(/_/g, '-'))}`, {
        type: response.type,
        statusCode: response.statusCode,
        responseHeaders: { 'Content-Type': "'application/json'" },
        templates: { 'application/json': response.body },
      });
    }
    return api;
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
  }

  /** Each acknowledgement names the finding and why it does not apply here. */
  private acknowledgeNagFindings(config: ServiceConfig): void {
    const acknowledge = (scope: IConstruct, id: string, reason: string) =>
      Validations.of(scope).acknowledge({ id, reason });
    for (const fn of [this.authorizerFunction, this.sweeperFunction, ...this.routeFunctions.values()]) {
      acknowledge(
        fn,
        'AwsSolutions-L1',
        'nodejs22.x is the runtime the project targets and tests (DESIGN.md); moving to a newer runtime is a deliberate, tested upgrade',
      );
    }
    const bucketArn = `<${this.getLogicalId(this.mediaBucket.node.defaultChild as CfnBucket)}.Arn>`;
    const resultsFinding = `AwsSolutions-IAM5[Resource::${bucketArn}/${MEDIA_RESULTS_PREFIX}*]`;
    const secretFinding = `AwsSolutions-IAM5[Resource::${this.secretArnPattern()}]`;
    for (const definition of [AUTHORIZER, SWEEPER, ...ROUTES]) {
      const fn = this.functionFor(definition);
      if (definition.needs.media === 'write') {
        acknowledge(
          fn.executionRole,
          resultsFinding,
          'Result keys are per user and per task, so the grant is the results/ prefix: Put/Get only, no listing, no deletes, nothing outside the prefix',
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
      this.api,
      'AwsSolutions-APIG2',
      'Every handler validates its input with valibot and answers the DESIGN.md 400 body; an API Gateway validator would duplicate the schema with a different error format',
    );
    acknowledge(
      this.api,
      'AwsSolutions-APIG3',
      'WAF is an account-level choice (cost, managed rule sets): the API has stage throttling, a per-key IP allowlist in the authorizer, and a web ACL can be attached to the stage without changing this stack',
    );
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

  /** The resource pattern `bindProvider` grants for a secret referenced by name, as cdk-nag prints it. */
  private secretArnPattern(): string {
    return `arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${this.providerSecret.secretName}-??????`;
  }

  private functionFor(definition: LambdaDefinition): GenerationFunction {
    if (definition === AUTHORIZER) return this.authorizerFunction;
    if (definition === SWEEPER) return this.sweeperFunction;
    const fn = this.routeFunctions.get(definition.name);
    if (!fn) throw new Error(`no function for ${definition.name}`);
    return fn;
  }
}

/** `submit-image` -> `SubmitImage`: construct ids and logical ids stay readable. */
function pascal(kebab: string): string {
  return kebab
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
