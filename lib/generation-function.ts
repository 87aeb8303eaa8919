/**
 * The one way this project builds a Lambda: `NodejsFunction` with the team's defaults, its own role
 * and log group, and `bind*` methods that grant exactly what a handler uses and set the environment
 * variables it reads.
 */
import * as path from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Policy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import {
  MAX_QUEUED_TASKS_PER_ACCOUNT,
  MEDIA_BUCKET,
  MEDIA_URL_TTL_SECONDS,
  OIDC_CLIENT_ID,
  OIDC_CLIENT_SECRET_ARN,
  OIDC_ISSUER,
  ORIGIN_VERIFY_SECRET_ARN,
  PROVIDER_BASE_URL,
  PROVIDER_CALLBACK_BASE_URL,
  PROVIDER_CALLBACK_SECRET_ARN,
  PROVIDER_SECRET_ARN,
  PUBLIC_ORIGIN,
  TABLE_NAME,
  UPLOADS_BUCKET,
  USAGE_PLAN_NAME,
  WEBHOOK_SECRETS_KEY_ARN,
} from '../functions/environment/environment';
import { TABLE } from '../functions/store/table';
import { BUNDLE_OPTIONS, inlineAuthorizerDefine, LOCAL_ONLY_DEFINE } from './bundle-options';
import {
  MEDIA_ACTIONS,
  MEDIA_RESULTS_PREFIX,
  MEDIA_UPLOADS_PREFIX,
  TABLE_READ_ACTIONS,
  TABLE_WRITE_ACTIONS,
} from './grant-actions';
import type { TableNeeds } from './routes';

/** The repository root: route entries and the lock file are resolved from here. */
export const REPO_ROOT = path.resolve(__dirname, '..');

/** Construction options; everything but `entry` and `logRetention` has a project default. */
export interface GenerationFunctionProps {
  /** Handler file, relative to the repository root (a route table `entry`); it exports `handler`. */
  entry: string;
  /** Retention of the function's own log group. */
  logRetention: RetentionDays;
  /** Keep the log group when the stack is deleted. Default: destroy it with the function. */
  retainLogs?: boolean;
  /** Human-readable purpose, shown in the console. */
  description?: string;
  /**
   * Timeout. Default 29 s, API Gateway's integration timeout: an API function working longer would
   * answer nobody. The authorizer and the sweeper set their own.
   */
  timeout?: Duration;
  /**
   * Memory in MB. Default 512: Lambda allots CPU in proportion to memory, and the cold start (parsing
   * a ~600 kB bundle that includes the SDK) and JSON work are CPU-bound, so 512 MB halves them
   * compared with 256 MB for a cost that is negligible at these durations. Results are streamed, so
   * memory itself is never the limit.
   */
  memorySize?: number;
  /**
   * Bundle the AWS SDK v3 into the function (default true) instead of using the runtime's copy. The
   * bundle then carries exactly the SDK version that was tested (package-lock.json) and does not
   * change under us when Lambda updates its runtime. False marks `@aws-sdk/*` external.
   */
  bundleAwsSdk?: boolean;
  /** Module format of the bundle. Default CJS; ESM gets a `require` shim for CommonJS dependencies. */
  format?: 'cjs' | 'esm';
  /**
   * Emit a source map next to the bundle (default false). It is never enabled at runtime
   * (`--enable-source-maps` slows every stack trace and the cold start); with it, a stack trace can be
   * mapped offline. Function and class names are kept in any case so stack traces stay readable.
   */
  sourceMap?: boolean;
  /**
   * X-Ray active tracing (default false): the handlers carry no tracer, and request ids in the logs
   * and EMF metrics are the correlation tools; turning it on adds `xray:Put*` on `*` to the role.
   */
  tracing?: boolean;
  /**
   * Instruction set. Default arm64 (Graviton: cheaper per GB-second and the bundle is plain
   * JavaScript). LocalStack mode passes the host's, so its Lambda containers run without emulation.
   */
  architecture?: Architecture;
  /** Extra environment variables (the `bind*` methods add their own). */
  environment?: Record<string, string>;
  /**
   * Values fixed at build time (esbuild `define`, `process.env.X` -> a JSON literal), on top of
   * `INLINE_AUTHORIZER`: a custom provider profile travels this way, too large for the environment.
   */
  define?: Record<string, string>;
}

/**
 * A project Lambda: Node.js 22 on arm64, bundled locally by esbuild (no Docker), minified, with its
 * own IAM role (no managed policies: it may write only to its own log group until a `bind*` method
 * grants more) and an explicit log group with retention.
 */
export class GenerationFunction extends NodejsFunction {
  /** The function's log group (created by this construct, retention from configuration). */
  readonly logGroupResource: LogGroup;
  /** The function's execution role; every grant lands in its default policy. */
  readonly executionRole: Role;

  constructor(scope: Construct, id: string, props: GenerationFunctionProps) {
    // The role and the log group must exist before the function, so they are siblings (`<id>Role`,
    // `<id>Logs`) rather than children; a role of our own avoids AWSLambdaBasicExecutionRole, which
    // lets a function write to any log group.
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of the ${id} function`,
    });
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: props.logRetention,
      removalPolicy: props.retainLogs ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    const bundleAwsSdk = props.bundleAwsSdk ?? true;
    const esm = props.format === 'esm';
    super(scope, id, {
      entry: path.join(REPO_ROOT, props.entry),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      description: props.description,
      runtime: Runtime.NODEJS_24_X,
      architecture: props.architecture ?? Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(29),
      role,
      logGroup,
      tracing: props.tracing ? Tracing.ACTIVE : Tracing.DISABLED,
      environment: props.environment,
      bundling: {
        forceDockerBundling: false,
        ...BUNDLE_OPTIONS,
        mainFields: [...BUNDLE_OPTIONS.mainFields],
        sourceMap: props.sourceMap ?? false,
        define: {
          ...inlineAuthorizerDefine(props.environment?.INLINE_AUTHORIZER === 'true'),
          ...LOCAL_ONLY_DEFINE,
          ...props.define,
        },
        externalModules: bundleAwsSdk ? [] : ['@aws-sdk/*'],
        format: esm ? OutputFormat.ESM : OutputFormat.CJS,
        banner: esm
          ? "import { createRequire as __createRequire } from 'node:module';const require = __createRequire(import.meta.url);"
          : undefined,
      },
    });
    this.executionRole = role;
    this.logGroupResource = logGroup;
    logGroup.grantWrite(role);
  }

  /**
   * Grants the table (and its pending-task and task-listing indexes) read-only or read/write access, to
   * the items whose partition key matches `needs.keys` only, and sets
   * `TABLE_NAME`. Read/write is read plus item writes; nobody gets `Scan` or table management.
   */
  bindTable(table: ITable, needs: TableNeeds): this {
    const { access } = needs;
    if (access === 'none') return this;
    const actions = access === 'RW' ? [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS] : [...TABLE_READ_ACTIONS];
    this.addToRolePolicy(
      new PolicyStatement({
        actions,
        resources: [
          table.tableArn,
          `${table.tableArn}/index/${TABLE.pendingIndex.name}`,
          `${table.tableArn}/index/${TABLE.taskIndex.name}`,
        ],
        // Only items whose partition key matches (the index's partition key for index queries). Every
        // granted action names its key, so the set is never empty (ForAllValues would then allow).
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...needs.keys] } },
      }),
    );
    if (access === 'RW' && needs.deletes && needs.deletes.length > 0) {
      // Deleting is granted apart, on the partitions that need it only (the dispatch queue's entries, the
      // GATEWAYKEY items of settled keys).
      this.addToRolePolicy(
        new PolicyStatement({
          actions: ['dynamodb:DeleteItem'],
          resources: [table.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...needs.deletes] } },
        }),
      );
    }
    if (needs.reads && needs.reads.length > 0) {
      // Reading single items by key, on the partitions that need it only (the sweeper's look at a key).
      this.addToRolePolicy(
        new PolicyStatement({
          actions: ['dynamodb:GetItem'],
          resources: [table.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...needs.reads] } },
        }),
      );
    }
    table.encryptionKey?.grantDecrypt(this);
    if (access === 'RW') table.encryptionKey?.grantEncrypt(this);
    this.addEnvironment(TABLE_NAME.name, table.tableName);
    return this;
  }

  /**
   * Grants access to the `uploads/` prefix only: `post` may store objects there (what a presigned POST
   * is authorized as), `read` may read them (the dispatcher's signed GET URLs for the provider),
   * `read-put` both (the submit's ranged GET of their first bytes, and its presigned PUT of an inline
   * image), and DeleteObject for the inline images of a refused submit. Sets `UPLOADS_BUCKET`.
   */
  bindUploads(bucket: IBucket, access: 'post' | 'read' | 'read-put'): this {
    const actions = {
      post: ['s3:PutObject'],
      read: ['s3:GetObject'],
      'read-put': ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
    };
    this.addToRolePolicy(
      new PolicyStatement({
        actions: actions[access],
        resources: [bucket.arnForObjects(`${MEDIA_UPLOADS_PREFIX}*`)],
      }),
    );
    this.addEnvironment(UPLOADS_BUCKET.name, bucket.bucketName);
    return this;
  }

  /** DeleteObject on `results/*` and `uploads/*` only (no listing); sets MEDIA_BUCKET and UPLOADS_BUCKET. */
  bindMediaRemoval(bucket: IBucket): this {
    const resources = [MEDIA_RESULTS_PREFIX, MEDIA_UPLOADS_PREFIX].map((prefix) => bucket.arnForObjects(`${prefix}*`));
    this.addToRolePolicy(new PolicyStatement({ actions: ['s3:DeleteObject'], resources }));
    this.addEnvironment(MEDIA_BUCKET.name, bucket.bucketName);
    this.addEnvironment(UPLOADS_BUCKET.name, bucket.bucketName);
    return this;
  }

  /** Grants putting retention entries (`FunctionNeeds.schedulesRetention`): `PutItem` on `RETENTION#*` only. */
  bindRetentionSchedule(table: ITable): this {
    this.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:PutItem'],
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RETENTION#*'] } },
      }),
    );
    return this;
  }

  /**
   * Grants what accepting into the dispatch queue takes (`FunctionNeeds.queuesTasks`): `PutItem` (the
   * accept transaction's queue entry) and `Query` (counting the account's entries against the bound) on
   * the table's `DISPATCH#QUEUE` items only, no index; sets `MAX_QUEUED_TASKS_PER_ACCOUNT`.
   */
  bindTaskQueue(table: ITable, maxQueuedTasksPerAccount: number): this {
    this.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:PutItem', 'dynamodb:Query'],
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['DISPATCH#QUEUE'] } },
      }),
    );
    this.addEnvironment(MAX_QUEUED_TASKS_PER_ACCOUNT.name, String(maxQueuedTasksPerAccount));
    return this;
  }

  /**
   * Grants `secretsmanager:GetSecretValue` on the provider key secret only and sets
   * `PROVIDER_BASE_URL` and `PROVIDER_SECRET_ARN`. The key is read at runtime, never passed in the
   * environment.
   */
  bindProvider(secret: ISecret, baseUrl: string): this {
    // A secret referenced by name has a partial ARN; its real ARN ends in `-` and six random characters.
    const secretArn = secret.secretFullArn ?? `${secret.secretArn}-??????`;
    this.addToRolePolicy(new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secretArn] }));
    secret.encryptionKey?.grantDecrypt(this);
    this.addEnvironment(PROVIDER_BASE_URL.name, baseUrl);
    this.addEnvironment(PROVIDER_SECRET_ARN.name, secret.secretArn);
    return this;
  }

  /**
   * Grants `secretsmanager:GetSecretValue` (nothing else) on the secret that signs provider callback
   * URLs and sets `PROVIDER_CALLBACK_SECRET_ARN`.
   */
  bindCallbackSecret(secret: ISecret): this {
    this.addToRolePolicy(
      new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
    );
    secret.encryptionKey?.grantDecrypt(this);
    this.addEnvironment(PROVIDER_CALLBACK_SECRET_ARN.name, secret.secretArn);
    return this;
  }

  /**
   * Grants `secretsmanager:GetSecretValue` (nothing else) on the key that seals accounts' webhook
   * signing secrets and sets `WEBHOOK_SECRETS_KEY_ARN`.
   */
  bindWebhookSecretsKey(secret: ISecret): this {
    this.addToRolePolicy(
      new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
    );
    secret.encryptionKey?.grantDecrypt(this);
    this.addEnvironment(WEBHOOK_SECRETS_KEY_ARN.name, secret.secretArn);
    return this;
  }

  /**
   * Grants reading (`GetSecretValue`, `DescribeSecret`) the secret the dashboard's distribution sends
   * as `X-Origin-Verify` and sets `ORIGIN_VERIFY_SECRET_ARN`: with it the function believes the viewer
   * address the distribution forwards (functions/auth/viewer-address.ts).
   */
  bindOriginVerify(secret: ISecret): this {
    this.addEnvironment(ORIGIN_VERIFY_SECRET_ARN.name, secret.secretArn);
    secret.grantRead(this);
    return this;
  }

  /** Sets `PUBLIC_ORIGIN`, the browsers' origin (CSRF checks, redirects after sign-in). */
  bindPublicOrigin(origin: string): this {
    this.addEnvironment(PUBLIC_ORIGIN.name, origin);
    return this;
  }

  /**
   * Sets `PROVIDER_CALLBACK_BASE_URL`: tasks sent to the provider get a callback URL under it (without
   * it, tasks finish by polling and the sweeper).
   */
  bindProviderCallbacks(origin: string): this {
    this.addEnvironment(PROVIDER_CALLBACK_BASE_URL.name, origin);
    return this;
  }

  /**
   * Makes the function the OpenID Connect client: sets `OIDC_ISSUER`, `OIDC_CLIENT_ID` and
   * `OIDC_CLIENT_SECRET_ARN`, and grants reading the client secret (nothing else).
   */
  bindOidcClient(client: { issuer: string; clientId: string; clientSecret: ISecret }): this {
    this.addEnvironment(OIDC_ISSUER.name, client.issuer);
    this.addEnvironment(OIDC_CLIENT_ID.name, client.clientId);
    this.addEnvironment(OIDC_CLIENT_SECRET_ARN.name, client.clientSecret.secretArn);
    client.clientSecret.grantRead(this);
    return this;
  }

  /**
   * Lets the function act on API Gateway API keys and usage plans (functions/aws/usage-plans.ts): sets
   * `USAGE_PLAN_NAME`, the default plan it finds by name, and grants what the caller scoped to this
   * API's plans. The grants go into a policy of their own, not the role's default policy: the function
   * depends on that one, and these grants name the default plan, which depends on the function (plan ->
   * stage -> deployment -> methods -> functions).
   */
  bindUsagePlans(planName: string, grants: readonly PolicyStatement[]): this {
    this.addEnvironment(USAGE_PLAN_NAME.name, planName);
    new Policy(this, 'UsagePlans', { statements: [...grants], roles: [this.executionRole] });
    return this;
  }

  /**
   * Grants writing and reading result files under `results/` of the media bucket (nothing else in
   * it, no listing, no deletes), or with `read` reading only, and sets `MEDIA_BUCKET`, plus
   * `MEDIA_URL_TTL_SECONDS` when given.
   */
  bindMedia(bucket: IBucket, urlTtl?: Duration, access: 'write' | 'read' = 'write'): this {
    this.addToRolePolicy(
      new PolicyStatement({
        // `read`: signed GET URLs only (they are authorized as the signer); nothing is written.
        actions: access === 'write' ? [...MEDIA_ACTIONS] : ['s3:GetObject'],
        resources: [bucket.arnForObjects(`${MEDIA_RESULTS_PREFIX}*`)],
      }),
    );
    if (access === 'write') bucket.encryptionKey?.grantEncryptDecrypt(this);
    else bucket.encryptionKey?.grantDecrypt(this);
    this.addEnvironment(MEDIA_BUCKET.name, bucket.bucketName);
    if (urlTtl) this.addEnvironment(MEDIA_URL_TTL_SECONDS.name, String(urlTtl.toSeconds()));
    return this;
  }
}
