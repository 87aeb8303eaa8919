/**
 * What the registry's Lambdas may touch, shared by the route table (lib/route-table.ts) and the
 * Lambdas no route invokes (lib/event-lambdas.ts): table partitions, provider, media.
 */
import type { FunctionNeeds, TableKeyPattern, TableNeeds } from './lambda-definitions';

/**
 * Submit and GET touch the caller's own items (USER#<id>): balance shards, task, ledger, idempotency;
 * beyond them only the dispatch queue (submit puts and counts entries, GET deletes one it ended).
 * No request copies media (the media worker does): GET and the callback only sign URLs to results.
 */
export const lifecycleNeeds: FunctionNeeds = {
  table: { access: 'RW', keys: ['USER#*'] },
  provider: true,
  media: 'read',
  // GET, the provider's callback and the sweeper refresh tasks, which completes or fails them.
  finishesTasks: true,
};
/** What the authorizer touches: keys and sessions by hash, their listings under the account. */
export const AUTHORIZER_KEYS: readonly TableKeyPattern[] = ['APIKEY#*', 'SESSION#*', 'USER#*'];
/** Sign-in, sessions and key management: the account's items, sessions, keys (by hash and id), invites. */
export const ACCOUNT_KEYS: readonly TableKeyPattern[] = ['USER#*', 'SESSION#*', 'APIKEY#*', 'KEYID#*', 'INVITE#*'];
/**
 * Submission queues provider tasks (the dispatcher creates them) and never asks the provider their
 * state; with `Prefer: wait` it watches the task's record and signs the result URLs of a task that ended.
 */
export const SUBMIT_NEEDS: FunctionNeeds = {
  // No provider: the dispatcher sends, so the submit functions hold no provider key or callback secret.
  provider: false,
  // The accept transaction also puts the task's entry in the dispatch queue, and the queue bound counts
  // the account's entries first: PutItem and Query there only (`queuesTasks`), not read/write.
  table: { access: 'RW', keys: ['USER#*'] },
  queuesTasks: true,
  // A `resultRetention` puts its removal's entry first (RETENTION#<n>, PutItem only).
  schedulesRetention: true,
  // `Prefer: wait`: a task that ends within the wait is answered with its signed result URLs.
  media: 'read',
  providerReads: false,
};
/**
 * A poll ends a task that waited too long, a queued one too (`TIMEOUT`), and removes that task's queue
 * entry (finish-task.ts): DeleteItem on the dispatch queue. It also counts the tasks queued ahead of a
 * queued one (`queuedAhead`): a Query there. (Read/write is one grant for all its partitions, so it may
 * also write queue entries, which it never does.)
 */
export const getTaskNeeds: FunctionNeeds = {
  ...lifecycleNeeds,
  table: { access: 'RW', keys: ['USER#*', 'DISPATCH#QUEUE'], deletes: ['DISPATCH#QUEUE'] },
  estimatesStart: true,
};
/** The listings read the caller's own items only (tasks by the task index, ledger, balance shards). */
export const ownReadNeeds: FunctionNeeds = {
  table: { access: 'RO', keys: ['USER#*'] },
  provider: false,
  media: 'none',
};
/** Sign-in, sessions and key management write the account's items (`ACCOUNT_KEYS`). */
export const writeNeeds: FunctionNeeds = {
  table: { access: 'RW', keys: ACCOUNT_KEYS },
  provider: false,
  media: 'none',
};
/**
 * Key management that settles a key's API Gateway key deletes its GATEWAYKEY item under the account
 * (store/gateway-keys.ts `clearGatewayKey`): DeleteItem there, and nowhere else.
 */
export const keyManagementTable: TableNeeds = { access: 'RW', keys: ACCOUNT_KEYS, deletes: ['USER#*'] };

/**
 * The table needs of a request function that checks credentials itself (LocalStack mode, where no
 * Lambda authorizer runs): its own needs plus what the authorizer touches.
 */
export function withInlineKeyReads(needs: TableNeeds): TableNeeds {
  return { ...needs, keys: [...new Set([...needs.keys, ...AUTHORIZER_KEYS])] };
}
