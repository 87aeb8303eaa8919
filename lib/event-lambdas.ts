/**
 * The Lambdas no route invokes: the API's authorizer, the sweeper on its schedule, the stream workers
 * (media, webhooks) and the paced dispatcher, with the stream filters that wake them. Part of the
 * registry (lib/routes.ts `LAMBDAS`).
 */
import { AUTHORIZER_KEYS, lifecycleNeeds } from './function-needs';
import type { AuthorizerDefinition, PacedDefinition, ScheduleDefinition, StreamDefinition } from './lambda-definitions';

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
  // due webhook deliveries (WEBHOOKDUE#<shard>) and claims them (USER#<id>), and promotes the queued
  // deliveries of the accounts listed under WEBHOOKQUEUED (deleting their queue entries). It never sends webhooks.
  // It copies results whose copy waited too long (media write), lists API Gateway keys due for a look
  // (GATEWAYKEYDUE): deletes those of ended keys and enrolls again those a crash left unenrolled. A send
  // lost to a crash goes back to the queue by its task's stage (USER#<id>); it never sends to the provider.
  needs: {
    ...lifecycleNeeds,
    // Deletes the GATEWAYKEY items of keys it settled (USER#<id>), and the queue entries of queued tasks
    // it ended (`TIMEOUT`, a send lost twice: DISPATCH#QUEUE, DeleteItem only).
    table: {
      access: 'RW',
      // RETENTION#<n>: the due removals of results by their task's own retention (lifecycle/expire-results.ts).
      keys: ['USER#*', 'PENDING#*', 'WEBHOOKDUE#*', 'WEBHOOKQUEUED', 'GATEWAYKEYDUE', 'RETENTION#*'],
      deletes: ['USER#*', 'DISPATCH#QUEUE', 'RETENTION#*'],
      // Settling a key's API Gateway key reads the key by its id (KEYID#) and then by its hash (APIKEY#):
      // GetItem only (issue 38: found by the IAM simulation of the recorded calls).
      reads: ['KEYID#*', 'APIKEY#*'],
    },
    media: 'write',
    // Results whose retention ended: their files and upload copies (DeleteObject), the uploads' records.
    removesMedia: true,
    usagePlans: ['enroll', 'delete'],
    // A task it put back in the queue, or queued too long, gets the dispatcher woken (SendMessage only).
    wakesDispatcher: true,
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
 * The stream workers' event source mappings (lib/constructs/service-workers.ts), which the local
 * deployed driver follows too (local/deployed-driver.ts): batches of up to 10 records, up to 10 batches
 * of a shard at once, a batch whose invocation failed split in two and retried.
 */
export const STREAM_WORKER_MAPPING = { batchSize: 10, parallelizationFactor: 10, bisectBatchOnError: true } as const;

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
  // Deletes the queue entry of a delivery it promotes past the bound (USER#<id>/WHQUEUE#...).
  needs: {
    table: { access: 'RW', keys: ['USER#*'], deletes: ['USER#*'] },
    provider: false,
    media: 'read',
    webhookSecrets: true,
  },
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
