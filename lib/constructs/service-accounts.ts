/**
 * Sign-in and the dashboard's origin: a Cognito user pool (invitation only: no self sign-up) with the
 * service as its confidential client (code flow, PKCE by the client), the client secret in Secrets
 * Manager, a private bucket for the dashboard's files, and a CloudFront distribution serving them and
 * forwarding `/api/*` to the API so the session cookie is first-party. Absent in LocalStack mode (its
 * free edition has neither Cognito nor CloudFront).
 *
 * No dependency cycle: the API origin is built from the RestApi's id (not its stage, which depends on
 * every method and so on every function), so functions may take the distribution's domain.
 */
import { type CfnElement, DockerImage, Duration, RemovalPolicy, SecretValue, Stack, Token } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
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
  AccountRecovery,
  type CfnUserPoolClient,
  FeaturePlan,
  Mfa,
  OAuthScope,
  StandardThreatProtectionMode,
  UserPool,
  type UserPoolClient,
} from 'aws-cdk-lib/aws-cognito';
import { Bucket, type IBucket } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { buildDashboard, DASHBOARD_SRC } from '../../dashboard/build';
import { ORIGIN_VERIFY_HEADER, VIEWER_ADDRESS_HEADER } from '../../functions/auth/viewer-address';
import type { ServiceConfig } from '../config';
import { dashboardCsp, PERMISSIONS_POLICY } from '../dashboard-headers';
import type { ServiceFunctions } from './service-functions';
import { acknowledge, keepFormerLogicalId, privateBucketProps } from './support';

/** Props of {@link ServiceAccounts}. */
export interface ServiceAccountsProps {
  /** The validated context configuration (see lib/config.ts). */
  config: ServiceConfig;
  /** RETAIN or DESTROY for the user pool and the dashboard bucket, as for the service's data. */
  removalPolicy: RemovalPolicy;
  /** The API the distribution forwards `/api/*` to. */
  api: RestApi;
  /** Results load from this bucket's own origin (the dashboard's CSP allows it). */
  mediaBucket: IBucket;
  /** The registry's functions: they learn the public origin, the OpenID client and the origin secret. */
  functions: ServiceFunctions;
}

/** The user pool, its client and the dashboard's distribution. */
export class ServiceAccounts extends Construct {
  /** The identity provider of the dashboard's sign-in. */
  readonly userPool: UserPool;
  /** The service as the user pool's confidential OpenID client. */
  readonly userPoolClient: UserPoolClient;
  /** One origin for browsers: the dashboard's files and `/api/*`. */
  readonly distribution: Distribution;
  /** The dashboard's static files (served only through the distribution). */
  readonly dashboardBucket: Bucket;
  /** `https://<distribution domain>`: the service's public origin. */
  readonly origin: string;

  constructor(scope: Construct, id: string, props: ServiceAccountsProps) {
    super(scope, id);
    const { config, removalPolicy, functions } = props;
    const stack = Stack.of(this);
    this.userPool = this.createUserPool(config, removalPolicy);

    this.dashboardBucket = new Bucket(this, 'DashboardBucket', privateBucketProps(config, removalPolicy));
    keepFormerLogicalId(this.dashboardBucket);
    acknowledge(
      this.dashboardBucket,
      'AwsSolutions-S1',
      'Holds only the public build of the dashboard, readable solely by the distribution (OAC); there is nothing per user to audit in its reads',
    );
    // Behind the distribution the API's sourceIp is CloudFront's. The viewer's address travels in
    // X-Viewer-Address, set here by CloudFront (overwriting whatever the viewer sent), and is believed
    // only next to X-Origin-Verify: a secret CloudFront adds as an origin custom header and the
    // authorizer checks (functions/auth/viewer-address.ts). A direct call to the API cannot forge it.
    const originVerify = new Secret(this, 'OriginVerifySecret', {
      description: 'Sent by the distribution to the API so that its X-Viewer-Address can be trusted',
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
    });
    originVerify.applyRemovalPolicy(RemovalPolicy.DESTROY);
    keepFormerLogicalId(originVerify);
    acknowledge(
      originVerify,
      'AwsSolutions-SMG4',
      'Shared only between the distribution (origin custom header) and the authorizer; a rotation takes a cdk deploy so that CloudFront sends the new value (docs/design/accounts.md)',
    );
    this.distribution = this.createDistribution(config, props, originVerify);
    this.origin = `https://${this.distribution.distributionDomainName}`;
    this.deployDashboard();

    this.userPoolClient = this.userPool.addClient('ServiceClient', {
      userPoolClientName: 'generation-service',
      generateSecret: true,
      // Sign-in is only the hosted UI's authorization code flow, which needs none of the SDK sign-in
      // flows (password, SRP, custom, admin password); the CLI creates users with the admin API only.
      // Listed as false so the client says so: unset, Cognito would allow SRP and custom auth. Cognito
      // keeps ALLOW_REFRESH_TOKEN_AUTH with any list (the service uses no refresh token; 1 h validity).
      authFlows: { userPassword: false, userSrp: false, custom: false, adminUserPassword: false, user: false },
      preventUserExistenceErrors: true,
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL],
        callbackUrls: [`${this.origin}/api/auth/callback`],
        logoutUrls: [`${this.origin}/`],
      },
      idTokenValidity: Duration.minutes(15),
      accessTokenValidity: Duration.minutes(15),
      refreshTokenValidity: Duration.hours(1),
    });
    keepFormerLogicalId(this.userPoolClient);
    // The secret's value is a CloudFormation attribute of the client, never in the template.
    const clientSecret = new Secret(this, 'OidcClientSecret', {
      description: 'Client secret of the service as the user pool OpenID client',
      secretStringValue: SecretValue.resourceAttribute(
        (this.userPoolClient.node.defaultChild as CfnUserPoolClient).attrClientSecret,
      ),
    });
    clientSecret.applyRemovalPolicy(RemovalPolicy.DESTROY);
    keepFormerLogicalId(clientSecret);
    acknowledge(
      clientSecret,
      'AwsSolutions-SMG4',
      'The value is the Cognito app client secret, which Cognito cannot rotate in place; rotating it means a new app client and a redeploy',
    );

    const issuer = `https://cognito-idp.${stack.region}.${stack.urlSuffix}/${this.userPool.userPoolId}`;
    const entries = functions.entries();
    for (const [definition, fn] of entries) if (definition.needs.viewerAddress) fn.bindOriginVerify(originVerify);
    for (const [definition, fn] of entries) {
      // The browsers' origin, for the routes that take a session cookie (CSRF checks) or sign in; not the
      // provider's callback nor the public OpenAPI document, which take neither.
      if (definition.trigger === 'route' && (definition.auth !== 'none' || definition.needs.oidc)) {
        fn.bindPublicOrigin(this.origin);
      }
      // The provider calls back through the distribution's /api/* (tasks get a callBackUrl only with
      // it), and the sweeper resends tasks the provider never took: they get a callback URL too.
      if (definition.needs.provider) fn.bindProviderCallbacks(this.origin);
      if (definition.needs.oidc) {
        fn.bindOidcClient({ issuer, clientId: this.userPoolClient.userPoolClientId, clientSecret });
      }
    }
    this.acknowledgeDeploymentHandler();
  }

  private createUserPool(config: ServiceConfig, removalPolicy: RemovalPolicy): UserPool {
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
    keepFormerLogicalId(userPool);
    acknowledge(
      userPool,
      'AwsSolutions-COG2',
      'MFA (TOTP) is offered to every user; requiring it is a product decision left open for the closed beta, and threat protection is enforced',
    );
    const domain = userPool.addDomain('HostedUi', {
      cognitoDomain: {
        // Globally unique per region: the stack name (cut before the token is appended) and the account.
        domainPrefix: `${config.stackName
          .toLowerCase()
          .replace(/[^a-z0-9-]/g, '-')
          .slice(0, 50)}-${Stack.of(this).account}`,
      },
    });
    // A new domain resource with the same prefix would be refused while the old one holds it.
    keepFormerLogicalId(domain);
    return userPool;
  }

  private createDistribution(config: ServiceConfig, props: ServiceAccountsProps, originVerify: Secret): Distribution {
    const stack = Stack.of(this);
    const apiDomain = `${props.api.restApiId}.execute-api.${stack.region}.${stack.urlSuffix}`;
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
        origin: S3BucketOrigin.withOriginAccessControl(this.dashboardBucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        responseHeadersPolicy: this.dashboardHeadersPolicy(props.mediaBucket),
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
    // Its domain is the service's public origin: callback URLs, cookies and bookmarks name it.
    keepFormerLogicalId(distribution);
    acknowledge(
      distribution,
      'AwsSolutions-CFR1',
      'The service is offered wherever API Gateway is; no country is excluded',
    );
    acknowledge(
      distribution,
      'AwsSolutions-CFR2',
      'API Gateway stage throttling bounds /api/*, and the static files are cached by CloudFront; a WAF web ACL (cost per rule and request) is an operator choice to add with the custom domain',
    );
    acknowledge(
      distribution,
      'AwsSolutions-CFR3',
      'Every /api/* request is in the API access log (with the caller, status and authorizer outcome); the static files are the same for everybody',
    );
    acknowledge(
      distribution,
      'AwsSolutions-CFR4',
      'No custom domain is configured, so the distribution uses the default *.cloudfront.net certificate, whose policy CloudFront fixes; with a custom domain, use TLSv1.2_2021 (docs/guides/deploy-aws.md)',
    );
    return distribution;
  }

  /**
   * The dashboard pages' headers (lib/dashboard-headers.ts, which the local gateway sends too), plus
   * HSTS; results load from the media bucket's own origin, where signed URLs point.
   */
  private dashboardHeadersPolicy(mediaBucket: IBucket): ResponseHeadersPolicy {
    const mediaOrigin = `https://${mediaBucket.bucketRegionalDomainName}`;
    return new ResponseHeadersPolicy(this, 'DashboardHeaders', {
      comment: 'Dashboard: strict CSP and security headers',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: dashboardCsp([mediaOrigin]), override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
      },
      customHeadersBehavior: {
        customHeaders: [
          { header: 'Permissions-Policy', value: PERMISSIONS_POLICY, override: true },
          { header: 'Cross-Origin-Opener-Policy', value: 'same-origin', override: true },
        ],
      },
    });
  }

  /**
   * The built dashboard: esbuild runs on this machine at synth (local bundling; the Docker image is
   * only CDK's fallback and is never pulled while the local build works), and the distribution's
   * cache is invalidated so a deploy shows the new files at once.
   */
  private deployDashboard(): BucketDeployment {
    return new BucketDeployment(this, 'DashboardFiles', {
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
      destinationBucket: this.dashboardBucket,
      distribution: this.distribution,
      distributionPaths: ['/*'],
      prune: true,
      memoryLimit: 512,
    });
  }

  /**
   * The bucket deployment's handler is CDK's own singleton function (one per stack, at its top level);
   * its grants are CDK's, acknowledged finding by finding so that anything new still fails the synth.
   */
  private acknowledgeDeploymentHandler(): void {
    const stack = Stack.of(this);
    const handler = stack.node.children.find((child) => child.node.id.startsWith('Custom::CDKBucketDeployment'));
    if (!handler) return;
    acknowledge(
      handler,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      "CDK's bucket-deployment handler writes its logs with the basic execution role; it runs only during a deploy",
    );
    const bucketArn = `<${stack.resolve((this.dashboardBucket.node.defaultChild as CfnElement).logicalId)}.Arn>`;
    // The bootstrap bucket's ARN prints with the partition and region literal when the stack's
    // environment fixes them (cdk.json), and as placeholders otherwise: both spellings, one bucket.
    const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
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
        handler,
        `AwsSolutions-IAM5[${grant}]`,
        "CDK's bucket-deployment grants: read the dashboard asset from the bootstrap bucket, replace the files of the dashboard bucket, invalidate the distribution (invalidations take no resource scope)",
      );
    }
    acknowledge(
      handler,
      'AwsSolutions-L1',
      'The runtime of the bucket-deployment handler is chosen by aws-cdk-lib and follows its releases',
    );
  }
}
