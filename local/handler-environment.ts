/**
 * The handlers' environment on this machine, built once for both places that run the real handlers in
 * one process: the local stack (`npm start`, local/stack.ts) and the tests' in-process harness
 * (test/support/service-harness.ts). It follows the contract the CDK stack sets by
 * (functions/environment/environment.ts): the same names, with this machine's stand-ins where AWS has a
 * service (DynamoDB Local, a plain provider key for the Secrets Manager ARN, a media directory for the
 * bucket). Typed settings: a value the handlers would refuse fails here.
 */
import {
  AWS_ACCESS_KEY_ID,
  AWS_REGION,
  AWS_SECRET_ACCESS_KEY,
  DYNAMODB_ENDPOINT,
  type EnvSetting,
  environmentOf,
  MAX_PENDING_SECONDS,
  MAX_QUEUED_TASKS_PER_ACCOUNT,
  MEDIA_BASE_URL,
  MEDIA_DIR,
  MEDIA_SOURCE_INSECURE_ORIGINS,
  PROVIDER_API_KEY,
  PROVIDER_BASE_URL,
  PROVIDER_CREATE_RATE_LIMIT,
  PROVIDER_MAX_IN_FLIGHT,
  PROVIDER_REFRESH_INTERVAL_SECONDS,
  setting,
  TABLE_NAME,
} from '../functions/environment/environment';

/** The parts every in-process run of the handlers has. */
export interface HandlerParts {
  tableName: string;
  /** DynamoDB Local, or the conflict layer in front of it. */
  dynamodbEndpoint: string;
  /** The mock provider (or a provider the operator pointed at) and its key. */
  provider: {
    url: string;
    apiKey: string;
    /** The upstream's create rate the dispatcher keeps to (`20/10s`), when it has one. */
    createRateLimit?: string | undefined;
    /** The upstream's cap on tasks in flight, for the dispatcher and every function that finishes tasks. */
    maxInFlight?: number | undefined;
  };
  /** Where the fs media store writes results, and the address they are served from. */
  media: { dir: string; baseUrl: string };
  providerRefreshIntervalSeconds: number;
  maxPendingSeconds: number;
  maxQueuedTasksPerAccount: number;
}

/** The environment of `parts`, plus whatever `extra` settings the caller's run has of its own. */
export function handlerEnvironment(parts: HandlerParts, ...extra: readonly EnvSetting[]): Record<string, string> {
  return environmentOf(
    setting(TABLE_NAME, parts.tableName),
    setting(DYNAMODB_ENDPOINT, parts.dynamodbEndpoint),
    setting(AWS_REGION, 'local'),
    setting(AWS_ACCESS_KEY_ID, 'local'),
    setting(AWS_SECRET_ACCESS_KEY, 'local'),
    setting(PROVIDER_BASE_URL, parts.provider.url),
    setting(PROVIDER_API_KEY, parts.provider.apiKey),
    // The mock provider serves results over plain HTTP on 127.0.0.1: allowed by name, nothing wider.
    setting(MEDIA_SOURCE_INSECURE_ORIGINS, parts.provider.url),
    setting(MEDIA_DIR, parts.media.dir),
    setting(MEDIA_BASE_URL, parts.media.baseUrl),
    setting(PROVIDER_REFRESH_INTERVAL_SECONDS, parts.providerRefreshIntervalSeconds),
    setting(MAX_PENDING_SECONDS, parts.maxPendingSeconds),
    setting(MAX_QUEUED_TASKS_PER_ACCOUNT, parts.maxQueuedTasksPerAccount),
    // The upstream's capacity the dispatcher keeps to, as a deployment's profile tells it Kie's.
    setting(PROVIDER_CREATE_RATE_LIMIT, parts.provider.createRateLimit),
    setting(PROVIDER_MAX_IN_FLIGHT, parts.provider.maxInFlight),
    ...extra,
  );
}
