/**
 * The generation service stack: a composition of the service's constructs (lib/constructs/), each
 * built from typed props and exposing what the others need. The registry of Lambdas (lib/routes.ts),
 * the table definition (functions/store/table.ts) and the context configuration (lib/config.ts) drive
 * them all.
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { RestApi, UsagePlan } from 'aws-cdk-lib/aws-apigateway';
import type { Distribution } from 'aws-cdk-lib/aws-cloudfront';
import type { UserPool, UserPoolClient } from 'aws-cdk-lib/aws-cognito';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import { resolveProviderProfile, type ServiceConfig } from './config';
import { dispatchCapacityFromContext, ServiceDispatch } from './constructs/dispatch';
import { ServiceAccounts } from './constructs/service-accounts';
import { ServiceApi } from './constructs/service-api';
import { ServiceData } from './constructs/service-data';
import { ServiceFunctions } from './constructs/service-functions';
import { ServiceObservability } from './constructs/service-observability';
import { ServiceWorkers } from './constructs/service-workers';
import { ServiceUpstreams, upstreamsFromContext } from './constructs/upstreams';
import type { GenerationFunction } from './generation-function';
import { AUTHORIZER, DISPATCHER, MEDIA_WORKER, SWEEPER, WEBHOOK_WORKER } from './routes';

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
  /** The provider API key (created with a placeholder or referenced by name). */
  readonly providerSecret: ISecret;
  /** Seals the accounts' webhook signing secrets. */
  readonly webhookSecretsKey: Secret;
  /** The REST API. */
  readonly api: RestApi;
  /** Every Lambda of the registry (lib/routes.ts `LAMBDAS`), by name. */
  readonly functions: ReadonlyMap<string, GenerationFunction>;
  /** The paced dispatcher's wake-up queues and event sources (docs/design/dispatching.md). */
  readonly dispatch: ServiceDispatch;
  /** The default usage plan (absent in LocalStack mode). */
  readonly defaultUsagePlan?: UsagePlan;
  /** The web ACL in front of the stage (absent in LocalStack mode or with wafRequestsPerIpPerMinute 0). */
  readonly webAcl?: CfnWebACL;
  /** The identity provider of the dashboard's sign-in (absent in LocalStack mode). */
  readonly userPool?: UserPool;
  /** The service as the user pool's confidential OpenID client (absent in LocalStack mode). */
  readonly userPoolClient?: UserPoolClient;
  /** One origin for browsers: the dashboard's files and `/api/*` (absent in LocalStack mode). */
  readonly distribution?: Distribution;
  /** The dashboard's static files (absent in LocalStack mode). */
  readonly dashboardBucket?: Bucket;

  constructor(scope: Construct, id: string, props: GenerationServiceStackProps) {
    super(scope, id, props);
    const { config } = props;

    const data = new ServiceData(this, 'Data', { config });
    // `Default`: the functions, their roles and log groups keep the logical ids they had at the top level.
    const functions = new ServiceFunctions(this, 'Default', { config, ...data });
    const workers = new ServiceWorkers(this, 'Workers', { table: data.table, functions });
    // Sends queued tasks to the provider at the upstream's declared pace (context, else the profile's).
    const dispatch = new ServiceDispatch(this, 'Dispatch', {
      table: data.table,
      functions,
      capacity: dispatchCapacityFromContext(this.node, resolveProviderProfile(config.providerProfile).profile),
    });
    // More than one upstream (-c upstreams=...): each its own secret, capacity and alarm.
    const upstreamList = upstreamsFromContext(this.node, resolveProviderProfile(config.providerProfile).profile.name);
    const upstreams = upstreamList
      ? new ServiceUpstreams(this, 'Upstreams', { upstreams: upstreamList, functions })
      : undefined;
    const api = new ServiceApi(this, 'Api', { config, functions });
    // LocalStack's free edition has neither Cognito nor CloudFront; there only API keys work.
    const accounts = config.localstack
      ? undefined
      : new ServiceAccounts(this, 'Accounts', {
          config,
          removalPolicy: data.removalPolicy,
          api: api.api,
          mediaBucket: data.mediaBucket,
          functions,
        });
    const observability = new ServiceObservability(this, 'Observability', {
      config,
      api: api.api,
      authorizer: functions.functionOf(AUTHORIZER),
      sweeper: functions.functionOf(SWEEPER),
      mediaWorkerDlq: workers.deadLetterQueueOf(MEDIA_WORKER),
      webhookWorkerDlq: workers.deadLetterQueueOf(WEBHOOK_WORKER),
      dispatcherWakeDlq: dispatch.wakeDeadLetterQueueOf(DISPATCHER),
      ...(upstreams ? { upstreamAlarms: upstreams.alarms } : {}),
    });

    this.table = data.table;
    this.mediaBucket = data.mediaBucket;
    this.providerSecret = data.providerSecret;
    this.webhookSecretsKey = data.webhookSecretsKey;
    this.functions = functions.functions;
    this.dispatch = dispatch;
    this.api = api.api;
    this.defaultUsagePlan = api.defaultUsagePlan;
    this.webAcl = api.webAcl;
    this.userPool = accounts?.userPool;
    this.userPoolClient = accounts?.userPoolClient;
    this.distribution = accounts?.distribution;
    this.dashboardBucket = accounts?.dashboardBucket;

    // Outputs stay at the stack's top level: their names are what operators and scripts read.
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
    if (accounts) {
      new CfnOutput(this, 'DashboardUrl', {
        value: `${accounts.origin}/`,
        description: 'The dashboard and /api/* for browsers',
      });
      new CfnOutput(this, 'DashboardBucketName', {
        value: accounts.dashboardBucket.bucketName,
        description: 'Upload the built dashboard here',
      });
      new CfnOutput(this, 'UserPoolId', {
        value: accounts.userPool.userPoolId,
        description: 'USER_POOL_ID for admin accounts invite --aws',
      });
    }
    new CfnOutput(this, 'DashboardName', { value: observability.dashboardName, description: 'CloudWatch dashboard' });
  }
}
