/**
 * The route table: every endpoint, the Lambda behind it and what that Lambda may touch. The CDK stack
 * and the local gateway are both built from it, so the deployed API and `npm start` expose the same
 * routes with the same handlers.
 */

/** Least-privilege access a function gets to the table: none, read only or read/write. */
export type TableAccess = 'none' | 'RO' | 'RW';

/**
 * Partition key patterns (`dynamodb:LeadingKeys`, IAM `StringLike`) of the items a function touches:
 * `USER#*` an account's balance shards, tasks, ledger, idempotency records, key listings, sessions
 * and audit entries; `APIKEY#*` API key items (by hash); `KEYID#*` key id lookups; `SESSION#*`
 * sessions (by hash); `INVITE#*` invitations; `PENDING#*` the pending-task index's partitions;
 * `WEBHOOKDUE#*` the partitions of the same index where webhook deliveries wait for their next attempt.
 */
export type TableKeyPattern =
  | 'USER#*'
  | 'APIKEY#*'
  | 'PENDING#*'
  | 'SESSION#*'
  | 'KEYID#*'
  | 'INVITE#*'
  | 'WEBHOOKDUE#*'
  | 'GATEWAYKEYDUE';

/** The table access of a function: what it may do, and to which items. */
export interface TableNeeds {
  access: TableAccess;
  keys: readonly TableKeyPattern[];
}

/** What a function needs besides the table; the stack grants exactly this. */
export interface FunctionNeeds {
  table: TableNeeds;
  /** Calls the upstream provider (needs the provider URL and key secret). */
  provider: boolean;
  /**
   * `false`: only creates provider tasks, never reads their state (the submit functions); the bundle
   * then leaves the state-reading code out (`providerReadsDefine`). Default: reads too.
   */
  providerReads?: boolean;
  /**
   * `write` copies results into the media bucket and signs URLs; `read` only signs URLs to results
   * (the webhook worker's payloads); `none` never touches it.
   */
  media: 'write' | 'read' | 'none';
  /** Opens accounts' webhook signing secrets (reads the service key that seals them). */
  webhookSecrets?: boolean;
  /** Acts as the OpenID Connect client (issuer, client id and the client secret). */
  oidc?: boolean;
  /** Enrolls keys (or an account's sessions) in API Gateway usage plans: their per-key rate limits. */
  usagePlans?: boolean;
  /** Judges callers behind the dashboard's distribution by their own address (reads the origin-verify secret). */
  viewerAddress?: boolean;
}

export interface LambdaDefinition {
  /** kebab-case name; also the folder under functions/. */
  name: string;
  /** Handler file relative to the repository root; it exports `handler`. */
  entry: string;
  needs: FunctionNeeds;
}

export interface RouteDefinition extends LambdaDefinition {
  method: 'GET' | 'POST';
  /** API Gateway path, `{param}` for path parameters. */
  path: string;
  /**
   * `credentials` (default): behind the authorizer, which takes a key or a session (the handler then
   * says which it accepts); `none`: no authorizer (starting sign-in and its callback).
   */
  auth?: 'credentials' | 'none';
}

// Submit and GET touch only the caller's own items (USER#<id>): balance shards, task, ledger, idempotency.
const lifecycleNeeds: FunctionNeeds = {
  table: { access: 'RW', keys: ['USER#*'] },
  provider: true,
  media: 'write',
};
/** What the authorizer touches: keys and sessions by hash, their listings under the account. */
const AUTHORIZER_KEYS: readonly TableKeyPattern[] = ['APIKEY#*', 'SESSION#*', 'USER#*'];
/** Sign-in, sessions and key management: the account's items, sessions, keys (by hash and id), invites. */
const ACCOUNT_KEYS: readonly TableKeyPattern[] = ['USER#*', 'SESSION#*', 'APIKEY#*', 'KEYID#*', 'INVITE#*'];
const readNeeds: FunctionNeeds = { table: { access: 'RO', keys: ACCOUNT_KEYS }, provider: false, media: 'none' };
/** The listings read the caller's own items only (tasks by the task index, ledger, balance shards). */
const ownReadNeeds: FunctionNeeds = { table: { access: 'RO', keys: ['USER#*'] }, provider: false, media: 'none' };
const writeNeeds: FunctionNeeds = { table: { access: 'RW', keys: ACCOUNT_KEYS }, provider: false, media: 'none' };

/**
 * The table needs of a request function that checks credentials itself (LocalStack mode, where no
 * Lambda authorizer runs): its own needs plus what the authorizer touches.
 */
export function withInlineKeyReads(needs: TableNeeds): TableNeeds {
  return { ...needs, keys: [...new Set([...needs.keys, ...AUTHORIZER_KEYS])] };
}

export const ROUTES: readonly RouteDefinition[] = [
  {
    name: 'submit-image',
    method: 'POST',
    path: '/api/ai/image/generate',
    entry: 'functions/submit-image/handler.ts',
    needs: { ...lifecycleNeeds, providerReads: false },
  },
  {
    name: 'submit-video',
    method: 'POST',
    path: '/api/ai/video/generate',
    entry: 'functions/submit-video/handler.ts',
    needs: { ...lifecycleNeeds, providerReads: false },
  },
  {
    // GET refreshes a pending task (claim, provider query, complete or refund), hence RW.
    name: 'get-task',
    method: 'GET',
    path: '/api/ai/tasks/{id}',
    entry: 'functions/get-task/handler.ts',
    needs: lifecycleNeeds,
  },
  {
    // The provider's "task ended" call. No authorizer: the HMAC signature in its URL is the credential.
    // It reads the task at the provider and completes it like a poll does, hence the lifecycle's needs.
    name: 'provider-callback',
    method: 'POST',
    path: '/api/provider/callbacks/{taskId}',
    entry: 'functions/provider-callback/handler.ts',
    needs: lifecycleNeeds,
    auth: 'none',
  },
  // Reading around tasks: the caller's tasks, credits and the catalog (a key or a session).
  {
    name: 'list-tasks',
    method: 'GET',
    path: '/api/ai/tasks',
    entry: 'functions/list-tasks/handler.ts',
    needs: ownReadNeeds,
  },
  {
    name: 'get-credits',
    method: 'GET',
    path: '/api/ai/credits',
    entry: 'functions/get-credits/handler.ts',
    needs: ownReadNeeds,
  },
  {
    name: 'list-models',
    method: 'GET',
    path: '/api/ai/models',
    entry: 'functions/list-models/handler.ts',
    needs: ownReadNeeds,
  },
  {
    // The OpenAPI document, public (a client generator needs it before it has a key).
    name: 'openapi',
    method: 'GET',
    path: '/api/openapi.json',
    entry: 'functions/openapi/handler.ts',
    needs: { table: { access: 'none', keys: [] }, provider: false, media: 'none' },
    auth: 'none',
  },
  // Accounts: sign-in, sessions and key management (session only, see each handler).
  {
    name: 'auth-sign-in',
    method: 'GET',
    path: '/api/auth/sign-in',
    entry: 'functions/auth-sign-in/handler.ts',
    needs: { table: { access: 'none', keys: [] }, provider: false, media: 'none', oidc: true },
    auth: 'none',
  },
  {
    name: 'auth-callback',
    method: 'GET',
    path: '/api/auth/callback',
    entry: 'functions/auth-callback/handler.ts',
    needs: { ...writeNeeds, oidc: true, usagePlans: true, viewerAddress: true },
    auth: 'none',
  },
  {
    name: 'auth-sign-out',
    method: 'POST',
    path: '/api/auth/sign-out',
    entry: 'functions/auth-sign-out/handler.ts',
    needs: writeNeeds,
  },
  {
    name: 'auth-sign-out-everywhere',
    method: 'POST',
    path: '/api/auth/sign-out-everywhere',
    entry: 'functions/auth-sign-out-everywhere/handler.ts',
    needs: writeNeeds,
  },
  { name: 'session', method: 'GET', path: '/api/session', entry: 'functions/session/handler.ts', needs: readNeeds },
  { name: 'keys-list', method: 'GET', path: '/api/keys', entry: 'functions/keys-list/handler.ts', needs: readNeeds },
  {
    name: 'keys-create',
    method: 'POST',
    path: '/api/keys',
    entry: 'functions/keys-create/handler.ts',
    needs: { ...writeNeeds, usagePlans: true },
  },
  {
    name: 'keys-rotate',
    method: 'POST',
    path: '/api/keys/{keyId}/rotate',
    entry: 'functions/keys-rotate/handler.ts',
    needs: { ...writeNeeds, usagePlans: true },
  },
  {
    name: 'keys-revoke',
    method: 'POST',
    path: '/api/keys/{keyId}/revoke',
    entry: 'functions/keys-revoke/handler.ts',
    needs: { ...writeNeeds, usagePlans: true },
  },
  { name: 'audit-log', method: 'GET', path: '/api/audit', entry: 'functions/audit-log/handler.ts', needs: readNeeds },
];

/**
 * The API Gateway REQUEST authorizer in front of every route with `auth: 'credentials'`. It writes
 * (hence RW): a session's idle expiry and a key's "last used", each at most once a minute.
 */
export const AUTHORIZER: LambdaDefinition = {
  name: 'authorizer',
  entry: 'functions/authorizer/handler.ts',
  // Keys by hash and sessions by hash; "last used" and idle expiry also on the listings (USER#<id>).
  needs: { table: { access: 'RW', keys: AUTHORIZER_KEYS }, provider: false, media: 'none', viewerAddress: true },
};

/** Runs on a schedule and drives every pending task to a terminal state. */
export const SWEEPER: LambdaDefinition = {
  name: 'sweeper',
  entry: 'functions/sweeper/handler.ts',
  // Lists the pending index (PENDING#<shard>), then moves each user's task and money (USER#<id>); lists
  // due webhook deliveries (WEBHOOKDUE#<shard>) and claims them (USER#<id>). It never sends webhooks.
  // Lists API Gateway keys due for a look (GATEWAYKEYDUE) and gives back those of ended keys.
  needs: {
    ...lifecycleNeeds,
    table: { access: 'RW', keys: ['USER#*', 'PENDING#*', 'WEBHOOKDUE#*', 'GATEWAYKEYDUE'] },
    usagePlans: true,
  },
};

/**
 * Identity sources of the authorizer. API Gateway answers 401 without calling the authorizer when any
 * identity source is missing, and a request carries either `Authorization` (API clients) or `Cookie`
 * (browsers), never necessarily both: so neither header can be one. The caller's address is always
 * present. With it alone the result cache would share one caller's Allow with everybody behind the
 * same address, so the cache is off (`AUTHORIZER_CACHE_TTL_SECONDS` = 0) and every request is decided
 * on the store's current state (revocation is immediate).
 */
export const AUTHORIZER_IDENTITY_SOURCES = ['context.identity.sourceIp'] as const;

/** The only cache TTL the identity sources above allow. */
export const AUTHORIZER_CACHE_TTL_SECONDS = 0;

/**
 * Copies finished tasks' results into media storage, fed by the table's stream (deployed: an event
 * source mapping; locally: local/stream-poller.ts). Reads and completes tasks (USER#*), writes results.
 */
export const MEDIA_WORKER: LambdaDefinition = {
  name: 'media-worker',
  entry: 'functions/media-worker/handler.ts',
  // No provider: it never calls it (its wiring has none, see worker-lifecycle-from-env.ts).
  needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'write' },
};

/**
 * The stream records the media worker is invoked for (an event source mapping filter pattern): a task
 * still pending with results ready to copy. The worker itself also checks that the record is the write
 * that made them ready (`readyTaskOf`), so other writes to such a task cost no copy.
 */
export const MEDIA_WORKER_FILTER = {
  eventName: ['MODIFY'],
  dynamodb: { NewImage: { status: { N: ['0'] }, resultsReadyAt: { N: [{ exists: true }] } } },
} as const;

/**
 * Sends webhooks: opens a task's delivery when the task ends and makes each claimed attempt, fed by the
 * table's stream (deployed: an event source mapping; locally: local/stream-poller.ts). Reads tasks and
 * webhook settings and writes deliveries and attempts (USER#*), signs result URLs for the payload, and
 * opens signing secrets. No provider.
 */
export const WEBHOOK_WORKER: LambdaDefinition = {
  name: 'webhook-worker',
  entry: 'functions/webhook-worker/handler.ts',
  needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'read', webhookSecrets: true },
};

/**
 * The stream records the webhook worker is invoked for (event source mapping filter patterns; a record
 * matching any of them passes): a task whose status left 0 (it ended), and a webhook delivery whose
 * attempt was just claimed. The worker checks both again (`endedTaskOf`, `claimedDeliveryOf`).
 */
export const WEBHOOK_WORKER_FILTERS = [
  {
    eventName: ['MODIFY'],
    dynamodb: { NewImage: { status: { N: ['1', '2'] } }, OldImage: { status: { N: ['0'] } } },
  },
  {
    eventName: ['INSERT', 'MODIFY'],
    dynamodb: { NewImage: { deliveryState: { S: ['sending'] } } },
  },
] as const;
