/**
 * The shape of the Lambda registry (lib/routes.ts): what a function needs (table, provider, media,
 * secrets) and what invokes it (a route, the authorizer, a schedule, the table's stream, or the stream
 * and a queue of delayed wake-ups for a paced function).
 */
/** Least-privilege access a function gets to the table: none, read only or read/write. */
export type TableAccess = 'none' | 'RO' | 'RW';

/**
 * Partition key patterns (`dynamodb:LeadingKeys`, IAM `StringLike`) of the items a function touches:
 * `USER#*` an account's balance shards, tasks, ledger, idempotency records, key listings, sessions
 * and audit entries; `APIKEY#*` API key items (by hash); `KEYID#*` key id lookups; `SESSION#*`
 * sessions (by hash); `INVITE#*` invitations; `PENDING#*` the pending-task index's partitions;
 * `WEBHOOKDUE#*` the partitions of the same index where webhook deliveries wait for their next attempt;
 * `GATEWAYKEYDUE` the index partition where API Gateway keys wait to be given back or enrolled again;
 * `DISPATCH#QUEUE` the dispatch queue's entries (tasks accepted, not yet sent to the provider);
 * `DISPATCH#CAPACITY` the dispatcher's capacity item (the upstream's recent sends, backoff, wake-up).
 */
export type TableKeyPattern =
  | 'USER#*'
  | 'APIKEY#*'
  | 'PENDING#*'
  | 'SESSION#*'
  | 'KEYID#*'
  | 'INVITE#*'
  | 'WEBHOOKDUE#*'
  | 'GATEWAYKEYDUE'
  | 'DISPATCH#QUEUE'
  | 'DISPATCH#CAPACITY';

/** The table access of a function: what it may do, and to which items. */
export interface TableNeeds {
  access: TableAccess;
  keys: readonly TableKeyPattern[];
  /**
   * Partitions whose items it deletes outright (`dynamodb:DeleteItem`, granted there only, a statement
   * of its own: a partition here need not be among `keys`, e.g. the dispatch queue's entries, which a
   * function ending a queued task only ever deletes); read/write access alone deletes nothing.
   */
  deletes?: readonly TableKeyPattern[];
  /**
   * Partitions whose items it only reads by key (`dynamodb:GetItem`, a statement of its own), beyond
   * `keys`: e.g. the sweeper reading a key's `KEYID#` and `APIKEY#` items to settle its API Gateway key,
   * which read access to the whole of those partitions would widen to queries and writes.
   */
  reads?: readonly TableKeyPattern[];
}

/** An action on API Gateway API keys (see `FunctionNeeds.usagePlans`). */
export type UsageKeyAction = 'enroll' | 'delete';

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
   * `write` copies results into the media bucket and signs URLs (the media worker, and the sweeper for
   * copies that waited too long); `read` only signs URLs to results (reading a task, the provider's
   * callback, the webhook worker's payloads); `none` never touches it (submission: a task it answers has
   * no result yet).
   */
  media: 'write' | 'read' | 'none';
  /**
   * Callers' uploads under the media bucket's `uploads/` prefix: `post` signs the presigned POSTs that
   * store them (the uploads function); `read` reads their first bytes and signs GET URLs for the
   * provider (the dispatcher, which sends); `read-put` reads their first bytes (the check) and stores
   * the inline `data:` images of a request (the submit functions). Absent: no access to the prefix.
   */
  uploads?: 'post' | 'read' | 'read-put';
  /** Opens accounts' webhook signing secrets (reads the service key that seals them). */
  webhookSecrets?: boolean;
  /** Acts as the OpenID Connect client (issuer, client id and the client secret). */
  oidc?: boolean;
  /**
   * What it does with API Gateway API keys, the carriers of per-key rate limits: `enroll` creates a
   * key (or an account's sessions' key) and adds it to its account's usage plan; `delete` deletes the
   * API Gateway key of an ended key. Absent: nothing.
   */
  usagePlans?: readonly UsageKeyAction[];
  /** Issues API keys to callers (creation, rotation): held to the cap on an account's active keys. */
  issuesKeys?: boolean;
  /**
   * Accepts tasks into the dispatch queue (submission): puts queue entries and counts the account's
   * (`dynamodb:PutItem` and `dynamodb:Query` on `DISPATCH#QUEUE`, nothing else there), held to the bound
   * on an account's queued tasks (`MAX_QUEUED_TASKS_PER_ACCOUNT`).
   */
  queuesTasks?: boolean;
  /** Judges callers behind the dashboard's distribution by their own address (reads the origin-verify secret). */
  viewerAddress?: boolean;
  /**
   * Finishes tasks (completes, fails and refunds them: functions/lifecycle/finish-task.ts). Where a cap
   * on tasks in flight is configured, such a function is told it (`PROVIDER_MAX_IN_FLIGHT`) and may
   * update the dispatcher's capacity item (`DISPATCH#CAPACITY`), to take a finished task off its count
   * (lib/constructs/dispatch.ts); without a cap it gets neither.
   */
  finishesTasks?: boolean;
  /**
   * Wakes the paced functions (the dispatcher) with an undelayed message on their wake-up queues: the
   * sweeper, after it put a task back in the queue (an update, which the stream's insert filter lets
   * through to no one) or saw tasks queued too long. Gets `DISPATCH_WAKE_QUEUE_URL` and `sqs:SendMessage`
   * on that queue only (lib/constructs/dispatch.ts).
   */
  wakesDispatcher?: boolean;
}

/** What every Lambda of the registry has, whatever invokes it. */
export interface LambdaBase {
  /** kebab-case name; also the folder under functions/. */
  name: string;
  /** Handler file relative to the repository root; it exports `handler`. */
  entry: string;
  needs: FunctionNeeds;
  /**
   * Timeout in seconds. Default 29, API Gateway's integration timeout: an API function working longer
   * would answer nobody.
   */
  timeoutSeconds?: number;
}

/** A stream record filter pattern of an event source mapping (literal values and `{ exists }`). */
export type StreamFilter = Readonly<Record<string, unknown>>;

/** A function behind an API route. */
export interface RouteDefinition extends LambdaBase {
  trigger: 'route';
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** API Gateway path, `{param}` for path parameters. */
  path: string;
  /**
   * `credentials` (default): behind the authorizer, which takes a key or a session (the handler then
   * says which it accepts); `none`: no authorizer (starting sign-in and its callback).
   */
  auth?: 'credentials' | 'none';
}

/** The API's REQUEST authorizer (one in the registry). */
export interface AuthorizerDefinition extends LambdaBase {
  trigger: 'authorizer';
}

/** A function run on a fixed rate (deployed: an EventBridge rule; locally: a timer). */
export interface ScheduleDefinition extends LambdaBase {
  trigger: 'schedule';
  /** Minutes between runs, deployed (the local stack runs it every `SWEEPER_INTERVAL_SECONDS`). */
  rateMinutes: number;
  /** What the schedule is for (the deployed rule's description). */
  description: string;
}

/** A function fed by the table's stream (deployed: an event source mapping; locally: a stream poller). */
export interface StreamDefinition extends LambdaBase {
  trigger: 'stream';
  /** The records it is invoked for: a record matching any of the patterns passes. */
  filters: readonly StreamFilter[];
  /** Retries of a failing record before it is parked in the function's dead-letter queue. */
  retryAttempts: number;
}

/**
 * A function that works through a queue kept in the table at an upstream's pace (the dispatcher,
 * docs/design/dispatching.md). Deployed (lib/constructs/dispatch.ts) it is woken by the table's stream
 * (records matching `filters`: something was queued) and by delayed messages on its own SQS wake-up
 * queue (capacity freed up); it never sleeps. Locally a loop calls it again after the wait it answers
 * (local/dispatch-loop.ts).
 */
export interface PacedDefinition extends LambdaBase {
  trigger: 'paced';
  /** The stream records that wake it: a record matching any of the patterns passes. */
  filters: readonly StreamFilter[];
  /** Retries of a failing stream batch (the queue stays in the table: the next wake-up retries anyway). */
  retryAttempts: number;
  /** Wake-up messages handled at once (SQS event source maximum concurrency, 2 at least). */
  wakeConcurrency: number;
}

/** Any Lambda of the registry; `trigger` says what invokes it. */
export type LambdaDefinition =
  | RouteDefinition
  | AuthorizerDefinition
  | ScheduleDefinition
  | StreamDefinition
  | PacedDefinition;
