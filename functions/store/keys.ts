/**
 * Key builders: the only place that knows how items are addressed. Every store module builds its keys
 * here, so the layout in docs/design/data-model.md is written down once.
 */
import { TABLE } from './table';

export interface ItemKey {
  PK: string;
  SK: string;
}

export const USER = 'USER#';
export const BALANCE_PREFIX = 'ACCOUNT';
const WEBHOOK = 'WEBHOOK#';
/** The sort-key prefix of the usage counters (`keys.usageCounter`). */
export const USAGE = 'USAGE#';
/** The partition of the dispatch queue's entries (`keys.queueEntry`). */
export const DISPATCH_QUEUE = 'DISPATCH#QUEUE';
/** The due-index partition of API Gateway keys to reconcile (few: one per key event, so one partition). */
export const GATEWAY_KEY_DUE = 'GATEWAYKEYDUE';

/**
 * The keys of credentials, sessions, invitations, audit entries and rate plans. An object of their own
 * (as `webhookKeys`): `keys` is one object, so everything in it is in every bundle that addresses any
 * item, and the submit functions, whose bundles are held to a size budget (bench/bundles.ts), address
 * none of these.
 */
export const accountKeys = {
  /** Looked up by the authorizer on every cache miss: one GetItem by the key's SHA-256. */
  apiKey: (keyHash: string): ItemKey => ({ PK: `APIKEY#${keyHash}`, SK: 'APIKEY' }),
  /** A user's keys, for listing (never holds the key or its full hash). */
  keyListing: (userId: string, keyId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: `KEY#${keyId}` }),
  /** keyId -> key hash and owner, so operators can revoke/rotate by key id alone. */
  keyId: (keyId: string): ItemKey => ({ PK: `KEYID#${keyId}`, SK: 'KEYID' }),
  /** A browser session, by the SHA-256 of its id: what the authorizer reads (one GetItem). */
  session: (sessionHash: string): ItemKey => ({ PK: `SESSION#${sessionHash}`, SK: 'SESSION' }),
  /** A user's sessions, so "sign out everywhere" can find them all. */
  userSession: (userId: string, sessionHash: string): ItemKey => ({
    PK: `${USER}${userId}`,
    SK: `SESSION#${sessionHash}`,
  }),
  userSessionPrefix: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'SESSION#' }),
  /**
   * How many of the account's keys are active (not revoked, not retired after their expiry): updated in
   * the same transaction as every key that is issued, rotated or revoked (store/key-count.ts).
   */
  keyCount: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'KEYCOUNT' }),
  /**
   * A key whose API Gateway key still needs attention (store/gateway-keys.ts): enrolled before the key was
   * written, or to be deleted when the key ends. Due in `GSI1` (`gatewayKeyDue`) for the sweeper.
   */
  gatewayKey: (userId: string, keyId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: `GATEWAYKEY#${keyId}` }),
  /** A gateway-key item's entry in the due index: time first, so one Query finds everything due. */
  gatewayKeyDue: (keyId: string, dueIso: string): { GSI1PK: string; GSI1SK: string } => ({
    GSI1PK: GATEWAY_KEY_DUE,
    GSI1SK: `${dueIso}#${keyId}`,
  }),
  /** The account's own request limits, when the operator gave it some (else the stack's default plan). */
  ratePlan: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'RATEPLAN' }),
  /** The account's monthly spend limit as set (store/account-limit.ts); the shards carry its stamp. */
  accountSpendLimit: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'SPENDLIMIT' }),
  /** An invitation to the closed beta, by normalised e-mail address. */
  invite: (email: string): ItemKey => ({ PK: `INVITE#${email}`, SK: 'INVITE' }),
  /** One audit entry of a user's account; time first so the log reads in order. */
  audit: (userId: string, isoTime: string, entryId: string): ItemKey => ({
    PK: `${USER}${userId}`,
    SK: `AUDIT#${isoTime}#${entryId}`,
  }),
  auditPrefix: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'AUDIT#' }),
} as const;

/** The webhook items' keys (an object of their own, for the reason given at `accountKeys`). */
export const webhookKeys = {
  /** An account's webhook settings: its default endpoint and its sealed signing secret. */
  settings: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'WEBHOOKS' }),
  /**
   * How many of the account's deliveries are open (`sending` or `waiting`): the counter the bound on
   * open deliveries is enforced on (`deliveryConditions.openBelow`).
   */
  openDeliveries: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'WEBHOOKS#OPEN' }),
  /**
   * The one webhook delivery of a task (its event when it ended), or of an account event: `taskId` is
   * then the event's id (`evt_...`, core/account-events.ts), which no task id can be.
   */
  delivery: (userId: string, taskId: string): ItemKey => ({
    PK: `${USER}${userId}`,
    SK: `${WEBHOOK}${taskId}`,
  }),
  /** Attempt `attempt` (1-based) of a task's delivery; zero-padded so the attempts read in order. */
  attempt: (userId: string, taskId: string, attempt: number): ItemKey => ({
    PK: `${USER}${userId}`,
    SK: `${WEBHOOK}${taskId}#ATTEMPT#${String(attempt).padStart(3, '0')}`,
  }),
  /** A delivery and its attempts: one `begins_with` Query. */
  deliveryPrefix: (userId: string, taskId: string): ItemKey => ({
    PK: `${USER}${userId}`,
    SK: `${WEBHOOK}${taskId}`,
  }),
  /**
   * The account's alert settings (`lowBalanceThreshold`): when `credits.low` is sent
   * (store/account-events.ts).
   */
  alerts: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'ALERTS' }),
  /**
   * The marker of a `credits.low` sent for the current crossing: put in the transaction that opens the
   * event's delivery (only when missing), deleted when the balance is seen at or above the threshold
   * again. Beside `alerts` (`ALERTS` is its prefix), so one Query reads both.
   */
  lowBalanceMarker: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'ALERTS#LOWBALANCE' }),
  /**
   * The marker of a key budget's threshold (80 or 100 percent) sent in one period: put in the transaction
   * that opens the event's delivery, only when missing. Beside the period's spend counter
   * (`KEYSPEND#<budgetKeyId>#<period>` is its prefix), so one Query reads the counter and its markers.
   */
  spendMarker: (userId: string, budgetKeyId: string, periodName: string, threshold: number): ItemKey => ({
    PK: `${USER}${userId}`,
    SK: `KEYSPEND#${budgetKeyId}#${periodName}#ALERT${threshold}`,
  }),
  /**
   * A delivery's entry in the due index (`GSI1`, sparse, beside the pending tasks): when it is next to
   * be tried, or when the claim of its running attempt runs out. Time first, so one Query per shard
   * finds everything due.
   */
  due: (taskId: string, dueIso: string): { GSI1PK: string; GSI1SK: string } => ({
    GSI1PK: webhookDueShardKey(shardOf(taskId) % TABLE.webhookDueShards),
    GSI1SK: `${dueIso}#${taskId}`,
  }),
} as const;

export type LedgerKind = 'grant' | 'debit' | 'refund';

/** The due-index partition of webhook deliveries (`WEBHOOKDUE#<shard>`). */
export function webhookDueShardKey(shard: number): string {
  return `WEBHOOKDUE#${shard}`;
}

export function pendingShardKey(shard: number): string {
  return `PENDING#${shard}`;
}

/** Stable shard for a task id (FNV-1a), so the same task always lands in the same index partition. */
export function shardOf(taskId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) {
    hash ^= taskId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % TABLE.pendingShards;
}

/** The shard number of a balance item's sort key (`ACCOUNT` or `ACCOUNT#<n>`, as Queries on the prefix return). */
export function balanceShardOf(sk: string): number {
  return Number(sk.slice(BALANCE_PREFIX.length + 1)) || 0;
}

/**
 * A user id as the queue's sort keys hold it: without `#` (and `%`), so each account's entries form one
 * range `<id>#...` that no other account's range overlaps, and a cursor `<id>#\uffff` passes exactly
 * that account.
 */
export function queueAccount(userId: string): string {
  return userId.replaceAll('%', '%25').replaceAll('#', '%23');
}

/** Recovers the user id from a `USER#<id>` partition key (user ids are opaque; only the prefix is ours). */
export function userIdFromPk(pk: string): string {
  return pk.startsWith(USER) ? pk.slice(USER.length) : pk;
}

/**
 * The keys of an account's webhook endpoints (store/webhook-endpoints.ts). Their deliveries are keyed by
 * `webhookKeys.delivery` with the delivery's id (`dlv_<endpoint>_<time>_<event>`), beside the tasks'.
 */
export const webhookEndpointKeys = {
  /** One endpoint: its URL, event types and sealed secrets. */
  endpoint: (userId: string, endpointId: string): ItemKey => ({
    PK: `${USER}${userId}`,
    SK: `WEBHOOKEP#${endpointId}`,
  }),
  /** Every endpoint of the account: one `begins_with` Query. */
  endpointPrefix: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'WEBHOOKEP#' }),
  /** How many endpoints the account has: the counter the bound is enforced on, in the same transactions. */
  endpointCount: (userId: string): ItemKey => ({ PK: `${USER}${userId}`, SK: 'WEBHOOKEP' }),
} as const;
