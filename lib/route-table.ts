/**
 * The route table: every endpoint and the function behind it, in the order the API documents them
 * (lib/routes.ts `ROUTES`, the registry's route entries).
 */
import {
  ACCOUNT_KEYS,
  getTaskNeeds,
  keyManagementTable,
  lifecycleNeeds,
  ownReadNeeds,
  SUBMIT_NEEDS,
  writeNeeds,
} from './function-needs';
import type { RouteDefinition } from './lambda-definitions';
import { WEBHOOK_ENDPOINT_ROUTES } from './route-table-webhook-endpoints';

/** The route entries of the registry, in the order the API documents them. */
export const ROUTE_TABLE: readonly RouteDefinition[] = [
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
    // Deletes an ended task (USER#<id>: the task item, its ledger entries stamped with the model) and
    // its files: results, checked upload copies, inline images (s3:DeleteObject, `removesMedia`).
    name: 'delete-task',
    trigger: 'route',
    method: 'DELETE',
    path: '/api/ai/tasks/{id}',
    entry: 'functions/delete-task/handler.ts',
    needs: {
      table: { access: 'RW', keys: ['USER#*'], deletes: ['USER#*'] },
      provider: false,
      media: 'none',
      removesMedia: true,
    },
  },
  {
    // Deletes an upload: its record (USER#<id>), its file and checked copy (ranged GET for its version).
    name: 'delete-upload',
    trigger: 'route',
    method: 'DELETE',
    path: '/api/ai/uploads/{id}',
    entry: 'functions/delete-upload/handler.ts',
    needs: {
      table: { access: 'RW', keys: ['USER#*'], deletes: ['USER#*'] },
      provider: false,
      media: 'none',
      uploads: 'read',
      removesMedia: true,
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
  {
    name: 'list-events',
    trigger: 'route',
    method: 'GET',
    path: '/api/events',
    entry: 'functions/list-events/handler.ts',
    // The account's event feed (USER#<id>/EVENT#...): one Query of its own partition.
    needs: ownReadNeeds,
  },
  {
    // The account's data as JSON, a page at a time (lifecycle/account-export.ts): its own items only.
    name: 'account-export',
    trigger: 'route',
    method: 'GET',
    path: '/api/account/export',
    entry: 'functions/account-export/handler.ts',
    needs: ownReadNeeds,
  },
  {
    // Closes the account (lifecycle/close-account.ts): ends its keys as a revocation does (key items,
    // guards, API Gateway keys given back) and its sessions, cancels its queued tasks (their queue entries
    // go), deletes its tasks and uploads with their files (s3:DeleteObject; a ranged GET for an upload's
    // version); a task still at the provider gets an entry on the retention schedule, for the sweeper to
    // delete it once it has ended.
    name: 'account-close',
    trigger: 'route',
    method: 'POST',
    path: '/api/account/close',
    entry: 'functions/account-close/handler.ts',
    needs: {
      table: { access: 'RW', keys: ACCOUNT_KEYS, deletes: ['USER#*', 'DISPATCH#QUEUE'] },
      provider: false,
      media: 'none',
      uploads: 'read',
      removesMedia: true,
      schedulesRetention: true,
      usagePlans: ['delete'],
    },
  },
  ...WEBHOOK_ENDPOINT_ROUTES,
];
