/**
 * Every Lambda of the service, built from the registry (lib/routes.ts `LAMBDAS`): one
 * `GenerationFunction` each, with the table, provider, media and secret grants its needs declare. What
 * invokes a function (a route, the authorizer, a schedule, the stream) is attached by the construct
 * that owns the trigger (api, workers); this one only builds and grants.
 */
import { type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Architecture } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import {
  INLINE_AUTHORIZER,
  LOG_LEVEL,
  MAX_OPEN_UPLOADS,
  MAX_PENDING_SECONDS,
  MEDIA_SOURCE_HOSTS,
  PROVIDER_PROFILE,
  PROVIDER_REFRESH_INTERVAL_SECONDS,
  RESULT_RETENTION_DAYS,
  UPLOAD_MAX_BYTES,
  UPLOAD_TTL_SECONDS,
} from '../../functions/environment/environment';
import { providerProfileDefine, providerReadsDefine } from '../bundle-options';
import { resolveProviderProfile, type ServiceConfig } from '../config';
import { GenerationFunction } from '../generation-function';
import { MEDIA_RESULTS_PREFIX, MEDIA_UPLOADS_PREFIX } from '../grant-actions';
import { LAMBDAS, type LambdaDefinition, withInlineKeyReads } from '../routes';
import { acknowledge, pascal } from './support';

/** Props of {@link ServiceFunctions}. */
export interface ServiceFunctionsProps {
  /** The validated context configuration (see lib/config.ts). */
  config: ServiceConfig;
  /** The store every function with table needs is bound to. */
  table: ITable;
  /** Where results are copied and signed from. */
  mediaBucket: IBucket;
  /** The provider API key. */
  providerSecret: ISecret;
  /** Signs and checks provider callback URLs. */
  callbackSecret: ISecret;
  /** Seals accounts' webhook signing secrets. */
  webhookSecretsKey: ISecret;
}

/**
 * One function per registry entry. Give it the id `Default`: CDK leaves that id out of logical ids, so
 * the functions, their roles and their log groups keep the logical ids they had when the stack built
 * them itself (a log group replaced would start empty).
 */
export class ServiceFunctions extends Construct {
  private readonly byName = new Map<string, GenerationFunction>();

  constructor(scope: Construct, id: string, props: ServiceFunctionsProps) {
    super(scope, id);
    for (const definition of LAMBDAS) this.byName.set(definition.name, this.build(definition, props));
  }

  /** The function of a registry entry (by its name). */
  functionOf(definition: Pick<LambdaDefinition, 'name'>): GenerationFunction {
    const fn = this.byName.get(definition.name);
    if (!fn) throw new Error(`no function ${definition.name} in the registry`);
    return fn;
  }

  /** Every function with its registry entry, in registry order. */
  entries(): [LambdaDefinition, GenerationFunction][] {
    return LAMBDAS.map((definition) => [definition, this.functionOf(definition)]);
  }

  /** Every function by registry name. */
  get functions(): ReadonlyMap<string, GenerationFunction> {
    return this.byName;
  }

  private build(definition: LambdaDefinition, props: ServiceFunctionsProps): GenerationFunction {
    const { config } = props;
    const { needs } = definition;
    // LocalStack's free edition runs no Lambda authorizers: there the route handlers authorize inline.
    const inlineAuthorizer = config.localstack && definition.trigger === 'route';
    const fn = new GenerationFunction(this, pascal(definition.name), {
      entry: definition.entry,
      description: `generation-service ${definition.name}`,
      logRetention: config.logRetentionDays,
      retainLogs: config.retainData,
      timeout: definition.timeoutSeconds === undefined ? undefined : Duration.seconds(definition.timeoutSeconds),
      architecture: config.localstack && process.arch !== 'arm64' ? Architecture.X86_64 : undefined,
      tracing: config.tracing,
      environment: {
        [LOG_LEVEL.name]: config.logLevel,
        ...(inlineAuthorizer ? { [INLINE_AUTHORIZER.name]: 'true' } : {}),
      },
      define: needs.provider ? { ...profileDefine(config), ...providerReadsDefine(needs) } : undefined,
    });
    fn.bindTable(props.table, inlineAuthorizer ? withInlineKeyReads(needs.table) : needs.table);
    if (needs.queuesTasks) fn.bindTaskQueue(props.table, config.maxQueuedTasksPerAccount);
    if (needs.schedulesRetention) fn.bindRetentionSchedule(props.table);
    if (needs.provider) {
      fn.bindProvider(props.providerSecret, config.providerBaseUrl);
      fn.addEnvironment(PROVIDER_PROFILE.name, resolveProviderProfile(config.providerProfile).profile.name);
      fn.addEnvironment(PROVIDER_REFRESH_INTERVAL_SECONDS.name, String(config.providerRefreshIntervalSeconds));
      fn.addEnvironment(MAX_PENDING_SECONDS.name, String(config.maxPendingSeconds));
      // Signing (submit, retries) and checking (the callback route) callback URLs need the secret.
      fn.bindCallbackSecret(props.callbackSecret);
      if (!(props.providerSecret instanceof Secret)) {
        acknowledge(
          fn.executionRole,
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${props.providerSecret.secretName}-??????]`,
          'A secret referenced by name has a random six-character ARN suffix; <name>-?????? matches that one secret and GetSecretValue is the only action',
        );
      }
    }
    // The bucket's lifecycle rule, so tasks can say until when their results exist: every function
    // that builds the lifecycle (the submit functions too, which sign no result URL).
    if (needs.provider || needs.media !== 'none') {
      fn.addEnvironment(RESULT_RETENTION_DAYS.name, String(config.resultRetentionDays));
    }
    if (needs.media !== 'none') {
      fn.bindMedia(props.mediaBucket, Duration.seconds(config.mediaUrlTtlSeconds), needs.media);
      if (config.mediaSourceHosts !== '') fn.addEnvironment(MEDIA_SOURCE_HOSTS.name, config.mediaSourceHosts);
      // As cdk-nag prints the grant: the bucket's ARN is an attribute of its logical id.
      const bucketArn = `<${Stack.of(this).resolve((props.mediaBucket.node.defaultChild as CfnElement).logicalId)}.Arn>`;
      acknowledge(
        fn.executionRole,
        `AwsSolutions-IAM5[Resource::${bucketArn}/${MEDIA_RESULTS_PREFIX}*]`,
        'Result keys are per user and per task, so the grant is the results/ prefix: Put/Get only, no listing, no deletes, nothing outside the prefix',
      );
    }
    if (needs.uploads) {
      fn.bindUploads(props.mediaBucket, needs.uploads);
      // The uploads function and the submit (inline images) make uploads: their limit and lifetime.
      if (needs.uploads === 'post' || needs.uploads === 'read-put') {
        fn.addEnvironment(UPLOAD_MAX_BYTES.name, String(config.uploadMaxBytes));
        fn.addEnvironment(UPLOAD_TTL_SECONDS.name, String(config.uploadExpiryHours * 3600));
        fn.addEnvironment(MAX_OPEN_UPLOADS.name, String(config.maxOpenUploads));
      }
      const bucketArn = `<${Stack.of(this).resolve((props.mediaBucket.node.defaultChild as CfnElement).logicalId)}.Arn>`;
      acknowledge(
        fn.executionRole,
        `AwsSolutions-IAM5[Resource::${bucketArn}/${MEDIA_UPLOADS_PREFIX}*]`,
        'Upload keys are per user and per upload, so the grant is the uploads/ prefix: Put to sign presigned POSTs, Get to sign for the provider, Get and Put to check uploads and store inline images, Delete to remove those of a refused submit; no listing',
      );
    }
    if (needs.removesMedia) {
      fn.bindMediaRemoval(props.mediaBucket);
      const bucketArn = `<${Stack.of(this).resolve((props.mediaBucket.node.defaultChild as CfnElement).logicalId)}.Arn>`;
      for (const prefix of [MEDIA_RESULTS_PREFIX, MEDIA_UPLOADS_PREFIX]) {
        acknowledge(
          fn.executionRole,
          `AwsSolutions-IAM5[Resource::${bucketArn}/${prefix}*]`,
          'An owner deletes the files of its own tasks and uploads, whose keys are per user and per task or upload: DeleteObject on the results/ and uploads/ prefixes only, no listing',
        );
      }
    }
    if (needs.webhookSecrets) fn.bindWebhookSecretsKey(props.webhookSecretsKey);
    acknowledge(
      fn,
      'AwsSolutions-L1',
      'nodejs24.x is the runtime the project targets and tests (the tests, the local stack and the bench run on the same Node 24, pinned in package.json); moving to a newer runtime is a deliberate, tested upgrade',
    );
    if (config.tracing) {
      acknowledge(
        fn.executionRole,
        'AwsSolutions-IAM5[Resource::*]',
        "Active tracing (tracing=true): X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions, so their grant is on *",
      );
    }
    return fn;
  }
}

/** The provider profile, fixed into the bundles of the functions that call the provider. */
function profileDefine(config: ServiceConfig): Record<string, string> {
  const { profile, json } = resolveProviderProfile(config.providerProfile);
  return providerProfileDefine(profile.name, json);
}
