/**
 * The REST API: one Lambda proxy method per route of the registry, the REQUEST authorizer in front of
 * the routes that take credentials, JSON gateway responses, JSON access logs, the default usage plan
 * (per-key limits) and the web ACL in front of the stage.
 */
import { Duration, RemovalPolicy, Stack, Tags, Token } from 'aws-cdk-lib';
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
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { USAGE_PLAN_API_TAG } from '../../functions/aws/usage-plans';
import {
  QUOTA_EXCEEDED_BODY,
  QUOTA_RETRY_AFTER_SECONDS,
  THROTTLED_BODY,
  THROTTLED_RETRY_AFTER_SECONDS,
} from '../../functions/core/rate-plan';
import { MAX_ACTIVE_KEYS } from '../../functions/environment/environment';
import type { ServiceConfig } from '../config';
import { AUTHORIZER_CACHE_TTL_SECONDS, AUTHORIZER_IDENTITY_SOURCES, lambdasTriggeredBy } from '../routes';
import type { ServiceFunctions } from './service-functions';
import { acknowledge, keepFormerLogicalId, pascal } from './support';

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

/** Props of {@link ServiceApi}. */
export interface ServiceApiProps {
  /** The validated context configuration (see lib/config.ts). */
  config: ServiceConfig;
  /** The registry's functions: the routes' handlers and the authorizer. */
  functions: ServiceFunctions;
}

/** The REST API and everything in front of it. */
export class ServiceApi extends Construct {
  /** The REST API (its deployment stage is `stageName`). */
  readonly api: RestApi;
  /** The default usage plan every account's API Gateway API key starts in (absent in LocalStack mode). */
  readonly defaultUsagePlan?: UsagePlan;
  /** The web ACL in front of the stage (absent in LocalStack mode or with wafRequestsPerIpPerMinute 0). */
  readonly webAcl?: CfnWebACL;

  constructor(scope: Construct, id: string, props: ServiceApiProps) {
    super(scope, id);
    const { config, functions } = props;
    this.api = this.createRestApi(config);
    this.addRoutes(config, functions);
    for (const response of GATEWAY_RESPONSES) {
      this.api.addGatewayResponse(`Gateway${pascal(response.type.responseType.toLowerCase().replace(/_/g, '-'))}`, {
        type: response.type,
        statusCode: response.statusCode,
        responseHeaders: {
          'Content-Type': "'application/json'",
          ...Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, value]) => [name, `'${value}'`])),
        },
        templates: { 'application/json': response.body },
      });
    }
    if (!config.localstack) {
      this.defaultUsagePlan = this.createDefaultUsagePlan(config, functions);
      if (config.wafRequestsPerIpPerMinute > 0) this.webAcl = this.createWebAcl(config);
    }
    acknowledge(
      this.api,
      'AwsSolutions-APIG2',
      'Every handler validates its input with valibot and answers the 400 body of docs/api/errors.md; an API Gateway validator would duplicate the schema with a different error format',
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
  }

  private createRestApi(config: ServiceConfig): RestApi {
    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      retention: config.logRetentionDays,
      removalPolicy: config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    keepFormerLogicalId(accessLogs);
    // The role is an account-wide (per region) setting; LocalStack does not need it.
    const cloudWatchRole = config.apiGatewayCloudWatchRole && !config.localstack;
    // `Default`: CDK leaves that id out of logical ids, so the API, its stage, deployment, methods and
    // usage plan keep the logical ids they had at the stack's top level (a new API is a new URL).
    const api = new RestApi(this, 'Default', {
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
    const role = api.node.tryFindChild('CloudWatchRole');
    if (role) {
      acknowledge(
        role,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        'The AWS-documented service role policy for the account-level API Gateway logging role; it must write to log groups API Gateway creates per stage',
      );
    }
    return api;
  }

  /** One Lambda proxy method per route, behind the authorizer unless the route says `auth: 'none'`. */
  private addRoutes(config: ServiceConfig, functions: ServiceFunctions): void {
    if (config.authorizerCacheTtlSeconds !== AUTHORIZER_CACHE_TTL_SECONDS) {
      throw new Error(
        "authorizerCacheTtlSeconds must be 0: the authorizer takes a key or a session cookie, so its only identity source is the caller address, and a cache keyed on it alone would share one caller's Allow with others (lib/routes.ts)",
      );
    }
    // LocalStack's free edition runs no Lambda authorizers: there the handlers authorize inline.
    const [authorizerDefinition] = lambdasTriggeredBy('authorizer');
    const authorizer: Authorizer | undefined =
      config.localstack || !authorizerDefinition
        ? undefined
        : new RequestAuthorizer(this, 'ApiKeyAuthorizer', {
            authorizerName: 'key-or-session',
            handler: functions.functionOf(authorizerDefinition),
            identitySources: [...AUTHORIZER_IDENTITY_SOURCES],
            resultsCacheTtl: Duration.seconds(AUTHORIZER_CACHE_TTL_SECONDS),
          });
    for (const route of lambdasTriggeredBy('route')) {
      const integration = new LambdaIntegration(functions.functionOf(route), { proxy: true, allowTestInvoke: false });
      const method = this.api.root.resourceForPath(route.path).addMethod(route.method, integration, {
        authorizer: route.auth === 'none' ? undefined : authorizer,
        // Behind the authorizer, every request counts against its account's usage plan.
        apiKeyRequired: route.auth !== 'none' && authorizer !== undefined,
      });
      acknowledge(
        method,
        'AwsSolutions-COG4',
        config.localstack
          ? 'LocalStack mode: the free edition runs no authorizers, so the handlers authorize inline'
          : 'Callers are machines holding API keys, not Cognito users: every method uses the REQUEST authorizer',
      );
      if (route.auth === 'none') {
        acknowledge(
          method,
          'AwsSolutions-APIG4',
          'Starting sign-in and its callback are where a visitor without credentials arrives; the callback creates a session only for a code the user pool issued, with PKCE, state and nonce checked',
        );
      } else if (config.localstack) {
        acknowledge(
          method,
          'AwsSolutions-APIG4',
          'LocalStack mode only: the free edition runs no Lambda authorizers, so every handler authorizes inline (INLINE_AUTHORIZER=true)',
        );
      }
    }
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
  private createDefaultUsagePlan(config: ServiceConfig, functions: ServiceFunctions): UsagePlan {
    const name = `${config.stackName}-default`;
    const plan = this.api.addUsagePlan('DefaultUsagePlan', {
      name,
      description: 'Default request limits per API key (lib/config.ts: keyRateLimit, keyBurstLimit, keyDailyQuota)',
      throttle: { rateLimit: config.keyRateLimit, burstLimit: config.keyBurstLimit },
      ...(config.keyDailyQuota > 0 ? { quota: { limit: config.keyDailyQuota, period: Period.DAY } } : {}),
      apiStages: [{ api: this.api, stage: this.api.deploymentStage }],
    });
    // The tag this API's plans carry (account plans get it when created, functions/aws/usage-plans.ts).
    Tags.of(plan).add(USAGE_PLAN_API_TAG, this.api.restApiId);
    const stack = Stack.of(this);
    const apiGateway = (path: string) => `arn:${stack.partition}:apigateway:${stack.region}::${path}`;
    // As cdk-nag prints a resource: the partition and region literally when the stack has them (a CLI
    // synth), else as placeholders.
    const printed = (path: string) =>
      `arn:${Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition}:apigateway:${Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region}::${path}`;
    for (const [definition, fn] of functions.entries()) {
      const actions = definition.needs.usagePlans ?? [];
      if (actions.length === 0) continue;
      const grants: PolicyStatement[] = [];
      if (actions.includes('enroll')) {
        grants.push(
          // CreateApiKey. Creating a key grants nothing by itself: only a plan's keys pass the gateway.
          new PolicyStatement({ actions: ['apigateway:POST'], resources: [apiGateway('/apikeys')] }),
          // GetApiKeys by name (when a retried enrollment finds the key made already) and GetUsagePlans
          // by name (the default plan's id): lists, which IAM cannot narrow (see docs/design/security.md).
          new PolicyStatement({
            actions: ['apigateway:GET'],
            resources: [apiGateway('/apikeys'), apiGateway('/usageplans')],
          }),
          // CreateUsagePlanKey: into the default plan, or an account plan of this API (its tag; a plan's
          // keys inherit it). No other plan of the region, and no reading of any plan's keys.
          new PolicyStatement({
            actions: ['apigateway:POST'],
            resources: [apiGateway(`/usageplans/${plan.usagePlanId}/keys`)],
          }),
          new PolicyStatement({
            actions: ['apigateway:POST'],
            resources: [apiGateway('/usageplans/*/keys')],
            conditions: { StringEquals: { [`aws:ResourceTag/${USAGE_PLAN_API_TAG}`]: this.api.restApiId } },
          }),
        );
        acknowledge(
          fn,
          `AwsSolutions-IAM5[Resource::${printed('/usageplans/*/keys')}]`,
          "Adding a key to an account's own usage plan, made at run time (limits set): only plans tagged with this API's id, and POST is the only action",
        );
      }
      if (actions.includes('delete')) {
        // DeleteApiKey of an ended key. API key ARNs carry only a random id, so no narrower resource exists.
        grants.push(new PolicyStatement({ actions: ['apigateway:DELETE'], resources: [apiGateway('/apikeys/*')] }));
        // The key is found by its name first (GetApiKeys), when enrolling does not grant that already.
        if (!actions.includes('enroll')) {
          grants.push(new PolicyStatement({ actions: ['apigateway:GET'], resources: [apiGateway('/apikeys')] }));
        }
        acknowledge(
          fn,
          `AwsSolutions-IAM5[Resource::${printed('/apikeys/*')}]`,
          'Deleting the API Gateway key of an ended key: API key ARNs hold only a random id, so no narrower resource names them; DELETE is the only action',
        );
      }
      fn.bindUsagePlans(name, grants);
      // The cap on an account's active keys, checked where keys are issued (functions/auth/key-issuing.ts);
      // sign-in and the sweeper enroll keys too but issue none.
      if (definition.needs.issuesKeys) fn.addEnvironment(MAX_ACTIVE_KEYS.name, String(config.maxActiveKeys));
    }
    return plan;
  }

  /**
   * A regional web ACL on the stage, evaluated before API Gateway counts a request against the stage
   * limit: addresses on Amazon's IP reputation list are blocked, and one address sending more than
   * `wafRequestsPerIpPerMinute` gets 429s from the web ACL. So a flood, authenticated or not, must come
   * from many addresses to reach the stage limit that paying callers share (docs/design/rate-limits.md).
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
}
