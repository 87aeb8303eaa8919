/**
 * What each setting of `npm start` means (local/settings.ts reads them from the environment), by the
 * variable that sets it: the one place the meanings are written, and the source of the `npm start`
 * table of the configuration reference (docs/guides/configuration.md, `npm run docs:config`). The
 * defaults are not written here: the reference reads them from `localSettingsFromEnv({})`.
 */
import type { LocalSettings } from './settings';

/** One setting of `npm start`: where its default shows in the settings, and what it means. */
export interface LocalSettingDoc {
  /** The setting's value in the settings of an empty environment (its default); `undefined`: unset. */
  readonly default: (settings: LocalSettings) => unknown;
  /** What the setting does. */
  readonly doc: string;
}

/** Every variable `localSettingsFromEnv` reads, in the order the reference lists them. */
export const LOCAL_SETTING_DOCS: Readonly<Record<string, LocalSettingDoc>> = {
  PORT: { default: (s) => s.port, doc: 'The API (and the dashboard on the same origin).' },
  PORT_BASE: {
    default: () => undefined,
    doc: 'The first of four consecutive ports: API, mock provider, OpenID provider, DynamoDB Local (base, +1, +2, +3), 1024 to 65532. A port set by name still wins.',
  },
  DYNAMODB_PORT: { default: (s) => s.dynamodbPort, doc: 'DynamoDB Local.' },
  MOCK_PROVIDER_PORT: { default: (s) => s.mockProviderPort, doc: 'The mock generation provider.' },
  OIDC_PROVIDER_PORT: {
    default: (s) => s.oidcProviderPort,
    doc: 'The local OpenID provider (it stands in for Cognito).',
  },
  MOCK_PROVIDER_CREATE_RATE_LIMIT: {
    default: (s) => s.mockProviderCreateRateLimit,
    doc: "The mock provider's create rate, `<requests>/<seconds>` (e.g. `20/10`); unset: unlimited.",
  },
  MOCK_PROVIDER_MAX_IN_FLIGHT: {
    default: (s) => s.mockProviderMaxInFlight,
    doc: "The mock provider's cap on tasks in flight; unset: none.",
  },
  MOCK_UPSTREAMS: {
    default: (s) => s.mockUpstreams,
    doc: 'Mock upstreams on consecutive ports from MOCK_PROVIDER_PORT, named `mock-1` ... `mock-N` (1 to 16), each enforcing MOCK_PROVIDER_CREATE_RATE_LIMIT / MOCK_PROVIDER_MAX_IN_FLIGHT on its own and declared with PROVIDER_CREATE_RATE_LIMIT / PROVIDER_MAX_IN_FLIGHT (docs/guides/upstreams.md); the OpenID provider moves past them.',
  },
  PROVIDER_UPSTREAMS: {
    default: (s) => s.providerUpstreams,
    doc: 'The upstreams as a JSON list, keys inline (`[{ "name", "profile", "baseUrl", "apiKey", "createRateLimit"?, "maxInFlight"?, "models"?, "priority"? }]`), checked at start naming the upstream and the field; unset: one upstream, or the MOCK_UPSTREAMS mocks (docs/guides/upstreams.md).',
  },
  PROVIDER_CREATE_RATE_LIMIT: {
    default: (s) => s.providerCreateRateLimit,
    doc: "The create rate the dispatcher keeps to (e.g. `20/10`, checked at start, with PROVIDER_MAX_IN_FLIGHT, against the capacity item's 300 KB bound); unset: the profile's declared capacity (`kie`: 20/10; `mock`: none).",
  },
  PROVIDER_MAX_IN_FLIGHT: {
    default: (s) => s.providerMaxInFlight,
    doc: "The cap on the service's tasks in flight the dispatcher keeps to (a whole number from 1, checked at start, with PROVIDER_CREATE_RATE_LIMIT, against the capacity item's 300 KB bound); unset: the profile's declared one (none for `kie` and `mock`).",
  },
  LOCAL_IDP_ACCOUNTS: {
    default: () => undefined,
    doc: 'Extra accounts of the local OpenID provider, `email:password` pairs, comma-separated (invite them to let them in).',
  },
  DASHBOARD_DIR: {
    default: (s) => s.staticDir,
    doc: "Static files served on the API's origin (the dashboard's build).",
  },
  SESSION_IDLE_SECONDS: {
    default: (s) => s.sessionIdleSeconds,
    doc: 'Seconds a dashboard session lives without use; unset: the default in functions/core/session.ts.',
  },
  SESSION_ABSOLUTE_SECONDS: {
    default: (s) => s.sessionAbsoluteSeconds,
    doc: 'Seconds a dashboard session lives at most; unset: the default in functions/core/session.ts.',
  },
  TABLE_NAME: { default: (s) => s.tableName, doc: 'The DynamoDB table the local stack uses (and creates).' },
  DATA_DIR: {
    default: (s) => s.dataDir,
    doc: "Directory for DynamoDB Local's files and stored media; `:memory:` keeps nothing.",
  },
  DYNAMODB_ENDPOINT: {
    default: (s) => s.dynamodbEndpoint,
    doc: 'Use this DynamoDB (e.g. one you run yourself) instead of starting DynamoDB Local.',
  },
  EXIT_WITH_PID: {
    default: (s) => s.exitWithPid,
    doc: 'A process id: checked every second, and once that process is gone the stack stops as on Ctrl-C (DynamoDB Local too) and exits. `spawnLocalStack` sets it to the spawning process, so the stacks of a test run killed from outside end with it.',
  },
  PROVIDER_REFRESH_INTERVAL_SECONDS: {
    default: (s) => s.providerRefreshIntervalSeconds,
    doc: 'Minimum seconds between provider queries for one task (the stack: `providerRefreshIntervalSeconds`).',
  },
  MAX_PENDING_SECONDS: {
    default: (s) => s.maxPendingSeconds,
    doc: 'Age in seconds at which a pending task fails with TIMEOUT and is refunded (the stack: `maxPendingSeconds`).',
  },
  AUTHORIZER_CACHE_TTL_SECONDS: {
    default: (s) => s.authorizerCacheTtlSeconds,
    doc: "Must be 0, as the stack insists: the authorizer's only identity source is the caller's address, so a cached result would serve one caller's Allow to every other caller on the same address.",
  },
  SWEEPER_INTERVAL_SECONDS: {
    default: (s) => s.sweeperIntervalSeconds,
    doc: 'How often the sweeper runs locally (EventBridge runs it every minute in AWS).',
  },
  SWEEPER_IDLE_MAX_SECONDS: {
    default: (s) => s.sweeperIdleMaxSeconds,
    doc: 'The longest pause between local sweeps while they find nothing to do: each such sweep doubles the pause from `SWEEPER_INTERVAL_SECONDS` up to this, and a request through the gateway or a write by the stack brings the next sweep back within `SWEEPER_INTERVAL_SECONDS` (an idle sweep is 30 queries to DynamoDB Local). The default is the deployed schedule (every minute).',
  },
  DISPATCH_DRIVER: {
    default: (s) => s.dispatchDriver,
    doc: "What drives the dispatcher: `loop` looks at the queue every 50 ms (fast); `deployed` runs its deployed triggers as AWS documents them (the table stream's filtered inserts, the SQS wake-up queue with whole-second delays up to 900 s and the event source's maximum concurrency, partial batch failures: local/deployed-driver.ts).",
  },
  API_STAGE: {
    default: (s) => s.apiStage,
    doc: 'Serve the API under `/<stage>/`, as an execute-api stage URL does; unset: at the root (a custom domain).',
  },
  KEY_RATE_LIMIT: {
    default: (s) => s.keyRatePlan.ratePerSecond,
    doc: "The default plan's steady rate per API key, requests per second (the stack: `keyRateLimit`).",
  },
  KEY_BURST_LIMIT: {
    default: (s) => s.keyRatePlan.burst,
    doc: "The default plan's burst per API key (the stack: `keyBurstLimit`).",
  },
  KEY_DAILY_QUOTA: {
    default: (s) => s.keyRatePlan.dailyQuota ?? 0,
    doc: "The default plan's requests per API key and UTC day; 0 for no quota (the stack: `keyDailyQuota`).",
  },
  RATE_PLAN_CACHE_SECONDS: {
    default: (s) => s.ratePlanCacheSeconds,
    doc: "How long the local gateway keeps an account's own plan before reading it again (API Gateway also lags).",
  },
  MAX_ACTIVE_KEYS: {
    default: (s) => s.maxActiveKeys,
    doc: 'The most active API keys one account may hold (the stack: `maxActiveKeys`).',
  },
  MAX_OPEN_UPLOADS: {
    default: (s) => s.maxOpenUploads,
    doc: 'The most open uploads one account may hold (the stack: `maxOpenUploads`).',
  },
  MAX_QUEUED_TASKS_PER_ACCOUNT: {
    default: (s) => s.maxQueuedTasksPerAccount,
    doc: 'The most tasks one account may have queued for the provider, 1 to 10000, checked at start (the stack: `maxQueuedTasksPerAccount`).',
  },
  PROVIDER_PROFILE: {
    default: (s) => s.providerProfile,
    doc: 'The provider profile: a shipped name (`mock` or `kie`) or the path of a JSON profile. The mock provider then follows it: with any profile but `mock` it refuses what that upstream would refuse.',
  },
  WEBHOOK_RETRY_DELAYS_SECONDS: {
    default: (s) => s.webhookRetryDelays,
    doc: 'Seconds between webhook delivery attempts, comma-separated; unset: the deployed schedule. Shorten it to see retries without waiting hours.',
  },
  WEBHOOK_INSECURE_ORIGINS: {
    default: (s) => s.webhookInsecureOrigins,
    doc: 'Exact origins webhooks may go to over plain http, to any address: a local receiver.',
  },
  AWS_CALL_RECORD_FILE: {
    default: (s) => s.awsCallRecordFile,
    doc: 'A file to append every AWS call of the handlers to (JSON lines: function, IAM action, resource, partition keys), for the IAM simulation of `npm run deploy:check`; unset: nothing is recorded and the clients carry no recording middleware.',
  },
  WEBHOOK_MAX_OPEN_DELIVERIES: {
    default: () => undefined,
    doc: 'Open webhook deliveries one account may have at once (read by the webhook worker, checked at start); unset: 100.',
  },
  WEBHOOK_MAX_ENDPOINTS: {
    default: () => undefined,
    doc: 'Webhook endpoints one account may create (POST /api/webhooks); unset: 10.',
  },
};
