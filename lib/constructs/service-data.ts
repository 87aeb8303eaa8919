/**
 * What the service keeps: the single table, the media bucket (and its access logs) and the secrets,
 * with the retention the configuration asks for. Everything here holds data, so every resource keeps
 * the logical id it had before the stack was split (`keepFormerLogicalId`).
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Bucket, HttpMethods } from 'aws-cdk-lib/aws-s3';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { TABLE } from '../../functions/store/table';
import type { ServiceConfig } from '../config';
import { MEDIA_RESULTS_PREFIX, MEDIA_UPLOADS_PREFIX } from '../grant-actions';
import { acknowledge, keepFormerLogicalId, privateBucketProps } from './support';

/** Props of {@link ServiceData}. */
export interface ServiceDataProps {
  /** The validated context configuration (see lib/config.ts). */
  config: ServiceConfig;
}

/** The table, the media bucket and the service's secrets. */
export class ServiceData extends Construct {
  /** The single-table store (functions/store/table.ts), with the stream the workers read. */
  readonly table: Table;
  /** Result files, served through signed URLs and expired after `resultRetentionDays`. */
  readonly mediaBucket: Bucket;
  /** The provider API key (created with a placeholder, or referenced by name). */
  readonly providerSecret: ISecret;
  /** Signs the provider callback URLs of tasks (generated; only the service's functions read it). */
  readonly callbackSecret: Secret;
  /** Seals the accounts' webhook signing secrets (generated; the webhook worker and operators read it). */
  readonly webhookSecretsKey: Secret;
  /** RETAIN with `retainData` (the default), else DESTROY: what every stateful resource gets. */
  readonly removalPolicy: RemovalPolicy;

  constructor(scope: Construct, id: string, props: ServiceDataProps) {
    super(scope, id);
    const { config } = props;
    this.removalPolicy = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.table = this.createTable(config);
    this.mediaBucket = this.createMediaBucket(config);
    this.providerSecret = this.createProviderSecret(config);

    this.callbackSecret = new Secret(this, 'ProviderCallbackSecret', {
      description: 'Signs the provider callback URL of each task (HMAC-SHA256); generated, never shown',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    keepFormerLogicalId(this.callbackSecret);
    acknowledge(
      this.callbackSecret,
      'AwsSolutions-SMG4',
      'Signs the callback URLs of pending tasks: rotating it would void the URL of every task in flight (those tasks then finish by polling); rotate by hand with put-secret-value when it must change',
    );

    this.webhookSecretsKey = new Secret(this, 'WebhookSecretsKey', {
      description:
        "Seals the accounts' webhook signing secrets (AES-256-GCM, key derived with HKDF); generated, never shown",
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    // Losing it would make every account's signing secret unreadable (they would need new ones).
    this.webhookSecretsKey.applyRemovalPolicy(this.removalPolicy);
    keepFormerLogicalId(this.webhookSecretsKey);
    acknowledge(
      this.webhookSecretsKey,
      'AwsSolutions-SMG4',
      "Seals the accounts' webhook signing secrets: a new value would leave every sealed secret unreadable; accounts rotate their own secrets (webhooks secret), and this key changes only with a re-seal",
    );
  }

  private createTable(config: ServiceConfig): Table {
    const table = new Table(this, 'Table', {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TABLE.ttlAttribute,
      // The workers' feed: both images, so they can tell the write that made results ready or ended a task.
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      deletionProtection: config.retainData,
      removalPolicy: this.removalPolicy,
    });
    const pending = TABLE.pendingIndex;
    table.addGlobalSecondaryIndex({
      indexName: pending.name,
      partitionKey: { name: pending.partitionKey, type: AttributeType.STRING },
      sortKey: { name: pending.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.KEYS_ONLY,
    });
    const tasks = TABLE.taskIndex;
    table.addGlobalSecondaryIndex({
      indexName: tasks.name,
      partitionKey: { name: tasks.partitionKey, type: AttributeType.STRING },
      sortKey: { name: tasks.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.INCLUDE,
      nonKeyAttributes: [...tasks.projected],
    });
    keepFormerLogicalId(table);
    return table;
  }

  private createMediaBucket(config: ServiceConfig): Bucket {
    const common = privateBucketProps(config, this.removalPolicy);
    // Server access logs record who downloaded which result through a signed URL.
    const accessLogs = new Bucket(this, 'MediaAccessLogs', {
      ...common,
      lifecycleRules: [{ expiration: Duration.days(Math.max(config.logRetentionDays, 1)) }],
    });
    keepFormerLogicalId(accessLogs);
    const bucket = new Bucket(this, 'MediaBucket', {
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
        {
          // Callers' reference images: their records expire after uploadExpiryHours; S3 counts whole days.
          id: 'expire-uploads',
          prefix: MEDIA_UPLOADS_PREFIX,
          expiration: Duration.days(Math.ceil(config.uploadExpiryHours / 24)),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
      // Browsers POST uploads straight to the bucket from the dashboard's origin (uploadCorsOrigins).
      ...(config.uploadCorsOrigins === ''
        ? {}
        : {
            cors: [
              {
                allowedMethods: [HttpMethods.POST],
                allowedOrigins: config.uploadCorsOrigins.split(','),
                allowedHeaders: ['*'],
                maxAge: 3600,
              },
            ],
          }),
    });
    keepFormerLogicalId(bucket);
    return bucket;
  }

  private createProviderSecret(config: ServiceConfig): ISecret {
    if (config.providerSecretName !== '') {
      return Secret.fromSecretNameV2(this, 'ProviderSecret', config.providerSecretName);
    }
    // A random placeholder, never a real key: the operator puts the provider key in after deploying.
    const secret = new Secret(this, 'ProviderSecret', {
      description: 'Upstream provider API key; replace the generated placeholder with the real key',
      generateSecretString: { passwordLength: 32, excludePunctuation: true },
    });
    secret.applyRemovalPolicy(this.removalPolicy);
    keepFormerLogicalId(secret);
    acknowledge(
      secret,
      'AwsSolutions-SMG4',
      'A third-party provider API key: it can only be rotated at the provider, by the operator (put-secret-value), so there is no rotation Lambda to attach',
    );
    return secret;
  }
}
