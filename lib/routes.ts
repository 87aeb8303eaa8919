/**
 * The registry of every Lambda of the service (`LAMBDAS`): its handler, what it may touch, its timeout
 * and what invokes it (a route, the API's authorizer, a schedule, the table's stream, or the stream and
 * delayed wake-ups for the paced dispatcher). The CDK stack
 * (lib/constructs/), the local stack (local/stack.ts, local/gateway.ts) and the tests are all built from
 * it, so the deployed API and `npm start` run the same handlers on the same triggers. `ROUTES` is the
 * route table: the registry's route entries, in order.
 */

import type {
  AuthorizerDefinition,
  FunctionNeeds,
  LambdaDefinition,
  PacedDefinition,
  RouteDefinition,
  ScheduleDefinition,
  StreamDefinition,
  TableKeyPattern,
  TableNeeds,
} from './lambda-definitions';

export type * from './lambda-definitions';

// Submit and GET touch the caller's own items (USER#<id>): balance shards, task, ledger, idempotency;
// beyond them only the dispatch queue (submit puts and counts entries, GET deletes one it ended).
// No request copies media (the media worker does): GET and the callback only sign URLs to results.
const lifecycleNeeds: FunctionNeeds = {
  table: { access: 'RW', keys: ['USER#*'] },
  provider: true,
  media: 'read',
  // GET, the provider's callback and the sweeper refresh tasks, which completes or fails them.
  finishesTasks: true,
};
/** What the authorizer touches: keys and sessions by hash, their listings under the account. */
const AUTHORIZER_KEYS: readonly TableKeyPattern[] = ['APIKEY#*', 'SESSION#*', 'USER#*'];
/** Sign-in, sessions and key management: the account's items, sessions, keys (by hash and id), invites. */
const ACCOUNT_KEYS: readonly TableKeyPattern[] = ['USER#*', 'SESSION#*', 'APIKEY#*', 'KEYID#*', 'INVITE#*'];
/** The listings read the caller's own items only (tasks by the task index, ledger, balance shards). */
/**
 * Submission queues provider tasks (the dispatcher creates them) and never reads their state; a task it
 * answers has no result yet, so it signs no media URL (its bundle holds no media store).
 */
const SUBMIT_NEEDS: FunctionNeeds = {
  // No provider: the dispatcher sends, so the submit functions hold no provider key or callback secret.
  provider: false,
  // The accept transaction also puts the task's entry in the dispatch queue, and the queue bound counts
  // the account's entries first: PutItem and Query there only (`queuesTasks`), not read/write.
  table: { access: 'RW', keys: ['USER#*'] },
  queuesTasks: true,
  media: 'none',
  providerReads: false,
};
/**
 * A poll ends a task that waited too long, a queued one too (`TIMEOUT`), and removes that task's queue
 * entry (finish-task.ts): DeleteItem on the dispatch queue. It also counts the tasks queued ahead of a
 * queued one (`queuedAhead`): a Query there. (Read/write is one grant for all its partitions, so it may
 * also write queue entries, which it never does.)
 */
const getTaskNeeds: FunctionNeeds = {
  ...lifecycleNeeds,
  table: { access: 'RW', keys: ['USER#*', 'DISPATCH#QUEUE'], deletes: ['DISPATCH#QUEUE'] },
};
const ownReadNeeds: FunctionNeeds = { table: { access: 'RO', keys: ['USER#*'] }, provider: false, media: 'none' };
const writeNeeds: FunctionNeeds = { table: { access: 'RW', keys: ACCOUNT_KEYS }, provider: false, media: 'none' };
/**
 * Key management that settles a key's API Gateway key deletes its GATEWAYKEY item under the account
 * (store/gateway-keys.ts `clearGatewayKey`): DeleteItem there, and nowhere else.
 */
const keyManagementTable: TableNeeds = { access: 'RW', keys: ACCOUNT_KEYS, deletes: ['USER#*'] };

/**
 * The table needs of a request function that checks credentials itself (LocalStack mode, where no
 * Lambda authorizer runs): its own needs plus what the authorizer touches.
 */
export function withInlineKeyReads(needs: TableNeeds): TableNeeds {
  return { ...needs, keys: [...new Set([...needs.keys, ...AUTHORIZER_KEYS])] };
}

const ROUTE_TABLE: readonly RouteDefinition[] = [
  {
    name: 'submit-image',
    trigger: 'route',
    method: 'POST',
    path: '/api/ai/image/generate',
    entry: 'functions/submit-image/handler.ts',
    needs: { ...SUBMIT_NEEDS, uploads: 'read-put' },
  },
  {
    name: 'submit-video',
    trigger: 'route',
    method: 'POST',
    path: '/api/ai/video/generate',
    entry: 'functions/submit-video/handler.ts',
    needs: { ...SUBMIT_NEEDS, uploads: 'read-put' },
  },
  {
    // A presigned POST for one reference image; the bytes go straight to storage, never through here.
    name: 'uploads',
    trigger: 'route',
    method: 'POST',
    path: '/api/ai/uploads',
    entry: 'functions/uploads/handler.ts',
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none', uploads: 'post' },
  },
  {
    // GET refreshes a pending task (claim, provider query, complete or refund), hence RW; a queued task
    // counts the account's queue entries before it (DISPATCH#QUEUE, read only by what this code does).
    name: 'get-task',
    trigger: 'route',
    method: 'GET',
    path: '/api/ai/tasks/{id}',
    entry: 'functions/get-task/handler.ts',
    needs: getTaskNeeds,
  },
  {
    // Cancels a task still queued here: fails and refunds it (USER#<id>), then deletes its queue entry
    // (DeleteItem on DISPATCH#QUEUE only). No provider: a queued task is not there yet.
    name: 'cancel-task',
    trigger: 'route',
    method: 'POST',
    path: '/api/ai/tasks/{id}/cancel',
    entry: 'functions/cancel-task/handler.ts',
    needs: {
      table: { access: 'RW', keys: ['USER#*'], deletes: ['DISPATCH#QUEUE'] },
      provider: false,
      media: 'none',
    },
  },
  {
    // The provider's "task ended" call. No authorizer: the HMAC signature in its URL is the credential.
    // It reads the task at the provider and completes it like a poll does, hence the lifecycle's needs.
    name: 'provider-callback',
    trigger: 'route',
    method: 'POST',
    path: '/api/provider/callbacks/{taskId}',
    entry: 'functions/provider-callback/handler.ts',
    needs: lifecycleNeeds,
    auth: 'none',
  },
  // Reading around tasks: the caller's tasks, credits and the catalog (a key or a session).
  {
    // The task index, and the account's queue entries in the page's time range (a pending task's stage).
    name: 'list-tasks',
    trigger: 'route',
    method: 'GET',
    path: '/api/ai/tasks',
    entry: 'functions/list-tasks/handler.ts',
    needs: { ...ownReadNeeds, table: { access: 'RO', keys: ['USER#*', 'DISPATCH#QUEUE'] } },
  },
  {
    name: 'get-credits',
    trigger: 'route',
    method: 'GET',
    path: '/api/ai/credits',
    entry: 'functions/get-credits/handler.ts',
    needs: ownReadNeeds,
  },
  {
    // Usage from the counters under the account (USER#<id>/USAGE#...) and, by key, the key listings.
    name: 'get-usage',
    trigger: 'route',
    method: 'GET',
    path: '/api/ai/usage',
    entry: 'functions/get-usage/handler.ts',
    needs: ownReadNeeds,
  },
  {
    name: 'list-models',
    trigger: 'route',
    method: 'GET',
    path: '/api/ai/models',
    entry: 'functions/list-models/handler.ts',
    // The catalog is in the bundle (core/catalog.ts): no table.
    needs: { table: { access: 'none', keys: [] }, provider: false, media: 'none' },
  },
  {
    // The OpenAPI document, public (a client generator needs it before it has a key).
    name: 'openapi',
    trigger: 'route',
    method: 'GET',
    path: '/api/openapi.json',
    entry: 'functions/openapi/handler.ts',
    needs: { table: { access: 'none', keys: [] }, provider: false, media: 'none' },
    auth: 'none',
  },
  // Accounts: sign-in, sessions and key management (session only, see each handler).
  {
    name: 'auth-sign-in',
    trigger: 'route',
    method: 'GET',
    path: '/api/auth/sign-in',
    entry: 'functions/auth-sign-in/handler.ts',
    needs: { table: { access: 'none', keys: [] }, provider: false, media: 'none', oidc: true },
    auth: 'none',
  },
  {
    name: 'auth-callback',
    trigger: 'route',
    method: 'GET',
    path: '/api/auth/callback',
    entry: 'functions/auth-callback/handler.ts',
    needs: { ...writeNeeds, oidc: true, usagePlans: ['enroll'], viewerAddress: true },
    auth: 'none',
  },
  {
    name: 'auth-sign-out',
    trigger: 'route',
    method: 'POST',
    path: '/api/auth/sign-out',
    entry: 'functions/auth-sign-out/handler.ts',
    needs: writeNeeds,
  },
  {
    name: 'auth-sign-out-everywhere',
    trigger: 'route',
    method: 'POST',
    path: '/api/auth/sign-out-everywhere',
    entry: 'functions/auth-sign-out-everywhere/handler.ts',
    needs: writeNeeds,
  },
  {
    name: 'session',
    trigger: 'route',
    method: 'GET',
    path: '/api/session',
    entry: 'functions/session/handler.ts',
    // The session by its hash and the account's balance; no keys, no invitations.
    needs: { table: { access: 'RO', keys: ['USER#*', 'SESSION#*'] }, provider: false, media: 'none' },
  },
  {
    name: 'keys-list',
    trigger: 'route',
    method: 'GET',
    path: '/api/keys',
    entry: 'functions/keys-list/handler.ts',
    // The key listings under the account (USER#<id>/KEY#...), never the keys themselves.
    needs: ownReadNeeds,
  },
  {
    name: 'keys-create',
    trigger: 'route',
    method: 'POST',
    path: '/api/keys',
    entry: 'functions/keys-create/handler.ts',
    needs: { ...writeNeeds, table: keyManagementTable, issuesKeys: true, usagePlans: ['enroll'] },
  },
  {
    name: 'keys-rotate',
    trigger: 'route',
    method: 'POST',
    path: '/api/keys/{keyId}/rotate',
    entry: 'functions/keys-rotate/handler.ts',
    // Enrolls the new key's API Gateway key; deletes the API Gateway key of the key it ends.
    needs: { ...writeNeeds, table: keyManagementTable, issuesKeys: true, usagePlans: ['enroll', 'delete'] },
  },
  {
    name: 'keys-update',
    trigger: 'route',
    method: 'PATCH',
    path: '/api/keys/{keyId}',
    entry: 'functions/keys-update/handler.ts',
    // Sets a key's spend limit: the key's items (APIKEY#, KEYID# to find it, its listing under USER#),
    // its key-end guards and the audit entry under USER#. No deletes, no usage plans.
    needs: { ...writeNeeds, table: { access: 'RW', keys: ['USER#*', 'APIKEY#*', 'KEYID#*'] } },
  },
  {
    name: 'keys-revoke',
    trigger: 'route',
    method: 'POST',
    path: '/api/keys/{keyId}/revoke',
    entry: 'functions/keys-revoke/handler.ts',
    // Deletes the revoked key's API Gateway key.
    needs: { ...writeNeeds, table: keyManagementTable, usagePlans: ['delete'] },
  },
  {
    name: 'audit-log',
    trigger: 'route',
    method: 'GET',
    path: '/api/audit',
    entry: 'functions/audit-log/handler.ts',
    // The account's audit entries (USER#<id>/AUDIT#...).
    needs: ownReadNeeds,
  },
  {
    name: 'account-alerts-get',
    trigger: 'route',
    method: 'GET',
    path: '/api/account/alerts',
    entry: 'functions/account-alerts-get/handler.ts',
    // The account's alert settings and its credits.low marker (USER#<id>/ALERTS...).
    needs: ownReadNeeds,
  },
  {
    name: 'account-alerts-update',
    trigger: 'route',
    method: 'PUT',
    path: '/api/account/alerts',
    entry: 'functions/account-alerts-update/handler.ts',
    // Sets the low-balance threshold and re-arms credits.low (an update of its marker, never a delete):
    // the account's own items only, no deletes.
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none' },
  },
  {
    name: 'account-limit-get',
    trigger: 'route',
    method: 'GET',
    path: '/api/account/spend-limit',
    entry: 'functions/account-limit-get/handler.ts',
    // The account's limit (USER#<id>/SPENDLIMIT) and its month's counter.
    needs: ownReadNeeds,
  },
  {
    name: 'account-limit-update',
    trigger: 'route',
    method: 'PUT',
    path: '/api/account/spend-limit',
    entry: 'functions/account-limit-update/handler.ts',
    // Sets the limit, stamps it on the account's balance shards and audits it: USER#<id> only, no deletes.
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none' },
  },
];

/**
 * The API Gateway REQUEST authorizer in front of every route with `auth: 'credentials'`. It writes
 * (hence RW): a session's idle expiry and a key's "last used", each at most once a minute.
 */
export const AUTHORIZER: AuthorizerDefinition = {
  name: 'authorizer',
  trigger: 'authorizer',
  entry: 'functions/authorizer/handler.ts',
  // Keys by hash and sessions by hash; "last used" and idle expiry also on the listings (USER#<id>).
  needs: { table: { access: 'RW', keys: AUTHORIZER_KEYS }, provider: false, media: 'none', viewerAddress: true },
  // Every API request waits for it: a store read and at most one write.
  timeoutSeconds: 10,
};

/** Runs on a schedule and drives every pending task to a terminal state. */
export const SWEEPER: ScheduleDefinition = {
  name: 'sweeper',
  trigger: 'schedule',
  rateMinutes: 1,
  description: 'Drives every pending generation task to a terminal state',
  entry: 'functions/sweeper/handler.ts',
  // Lists the pending index (PENDING#<shard>), then moves each user's task and money (USER#<id>); lists
  // due webhook deliveries (WEBHOOKDUE#<shard>) and claims them (USER#<id>). It never sends webhooks.
  // It copies results whose copy waited too long (media write), lists API Gateway keys due for a look
  // (GATEWAYKEYDUE): deletes those of ended keys and enrolls again those a crash left unenrolled. A send
  // lost to a crash goes back to the queue by its task's stage (USER#<id>); it never sends to the provider.
  needs: {
    ...lifecycleNeeds,
    // Deletes the GATEWAYKEY items of keys it settled (USER#<id>), and the queue entries of queued tasks
    // it ended (`TIMEOUT`, a send lost twice: DISPATCH#QUEUE, DeleteItem only).
    table: {
      access: 'RW',
      keys: ['USER#*', 'PENDING#*', 'WEBHOOKDUE#*', 'GATEWAYKEYDUE'],
      deletes: ['USER#*', 'DISPATCH#QUEUE'],
    },
    media: 'write',
    usagePlans: ['enroll', 'delete'],
  },
  // Overlapping sweeps are safe (every transition is a conditional write), so the sweeper may run
  // longer than its one-minute period when a large video is being copied.
  timeoutSeconds: 120,
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
 * The stream records the media worker is invoked for (an event source mapping filter pattern): a task
 * still pending with results ready to copy. The worker itself also checks that the record is the write
 * that made them ready (`readyTaskOf`), so other writes to such a task cost no copy.
 */
export const MEDIA_WORKER_FILTER = {
  eventName: ['MODIFY'],
  dynamodb: { NewImage: { status: { N: ['0'] }, resultsReadyAt: { N: [{ exists: true }] } } },
} as const;

/**
 * Copies finished tasks' results into media storage, fed by the table's stream (deployed: an event
 * source mapping; locally: local/stream-poller.ts). Reads and completes tasks (USER#*), writes results.
 */
export const MEDIA_WORKER: StreamDefinition = {
  name: 'media-worker',
  trigger: 'stream',
  filters: [MEDIA_WORKER_FILTER],
  retryAttempts: 5,
  entry: 'functions/media-worker/handler.ts',
  // No provider: it never calls it (its wiring has none, see worker-lifecycle-from-env.ts).
  // It completes tasks (or fails them when a copy keeps failing).
  needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'write', finishesTasks: true },
  // A 1 GB video streams through in minutes; the copy's own deadline (MEDIA_COPY_TIMEOUT_MS) is shorter.
  timeoutSeconds: 900,
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

/**
 * Sends webhooks: opens a task's delivery when the task ends and makes each claimed attempt, fed by the
 * table's stream (deployed: an event source mapping; locally: local/stream-poller.ts). Reads tasks and
 * webhook settings and writes deliveries and attempts (USER#*), signs result URLs for the payload, and
 * opens signing secrets. No provider.
 */
export const WEBHOOK_WORKER: StreamDefinition = {
  name: 'webhook-worker',
  trigger: 'stream',
  filters: WEBHOOK_WORKER_FILTERS,
  retryAttempts: 3,
  entry: 'functions/webhook-worker/handler.ts',
  needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'read', webhookSecrets: true },
  // One attempt waits at most 10 s for its endpoint, and a batch's attempts run side by side.
  timeoutSeconds: 60,
};

/** The stream records that wake the dispatcher: a task's entry was put in the dispatch queue. */
export const DISPATCHER_FILTER = {
  eventName: ['INSERT'],
  dynamodb: { Keys: { PK: { S: ['DISPATCH#QUEUE'] } } },
} as const;

/**
 * Sends queued tasks to the provider at its pace (docs/design/dispatching.md): reads the
 * dispatch queue and the capacity item (DISPATCH#QUEUE, DISPATCH#CAPACITY), claims and records tasks and
 * refunds refused ones (USER#*). Deployed (lib/constructs/dispatch.ts) it is fed by the table's stream
 * (`DISPATCHER_FILTER`) and by its SQS wake-up queue; locally by local/dispatch-loop.ts. It never reads
 * provider task states, and signs no result URL.
 */
export const DISPATCHER: PacedDefinition = {
  name: 'dispatcher',
  trigger: 'paced',
  filters: [DISPATCHER_FILTER],
  retryAttempts: 2,
  // Every slot is decided by a conditional write anyway: two at once only keeps the contention low.
  wakeConcurrency: 2,
  entry: 'functions/dispatcher/handler.ts',
  needs: {
    // Deletes a queue entry once its task reached the provider (or ended): DeleteItem there only.
    table: { access: 'RW', keys: ['USER#*', 'DISPATCH#QUEUE', 'DISPATCH#CAPACITY'], deletes: ['DISPATCH#QUEUE'] },
    provider: true,
    providerReads: false,
    media: 'none',
    // It fails and refunds what the provider refused.
    finishesTasks: true,
    // Each send signs a short-lived GET URL per upload of the task (send-to-provider.ts).
    uploads: 'read',
  },
  // A run sends while capacity lasts and stops 10 s before its deadline (SAFETY_MARGIN_MS in the handler).
  timeoutSeconds: 120,
};

/** The route table: every endpoint and the function behind it, in the order the API documents them. */
export const ROUTES: readonly RouteDefinition[] = ROUTE_TABLE;

/**
 * Every Lambda of the service, once: what builds the stack's functions, the local stack's handlers and
 * the tests' lists. Names are unique (they name the functions' constructs and folders).
 */
export const LAMBDAS: readonly LambdaDefinition[] = [
  AUTHORIZER,
  ...ROUTE_TABLE,
  SWEEPER,
  MEDIA_WORKER,
  WEBHOOK_WORKER,
  DISPATCHER,
];

/** The registry's entries with one trigger, typed by it. */
export function lambdasTriggeredBy<T extends LambdaDefinition['trigger']>(
  trigger: T,
): Extract<LambdaDefinition, { trigger: T }>[] {
  return LAMBDAS.filter(
    (definition): definition is Extract<LambdaDefinition, { trigger: T }> => definition.trigger === trigger,
  );
}
