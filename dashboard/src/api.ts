/**
 * The dashboard's one way to the API: same-origin `fetch` with the session cookie, and on every
 * state-changing request the CSRF token from `GET /api/session` (the browser adds `Origin` itself).
 * Task, listing, ledger and usage shapes are the typed client's (generated from the OpenAPI document); the
 * session, key and model shapes the document leaves open are written out here.
 */
import type { AccountAlerts, AccountSpendLimit, Credits, Task, TaskList, Usage } from '../../client/src/index';

export type { AccountAlerts, AccountSpendLimit, Credits, Task, TaskList, Usage };
export type TaskSummary = TaskList['tasks'][number];
export type LedgerEntry = Credits['entries'][number];
/** How `GET /api/ai/usage` groups its rows. */
export type UsageGroupBy = Usage['groupBy'];
/**
 * One row of a usage answer: `group` is a UTC day (`2026-11-25`), a key id (or `session` for tasks
 * submitted from the dashboard) or a model id; `name` is the key's name while the key exists.
 */
export type UsageRow = Usage['rows'][number];
/** The account-wide monthly spend limit with what it spent this month (`resetsAt`: the next month's start). */
export type AccountLimit = NonNullable<AccountSpendLimit['spendLimit']>;

/** `GET /api/session`. */
export interface Session {
  userId: string;
  email: string;
  balance: number;
  csrfToken: string;
  signedInAt: string;
  idleExpiresAt: string;
  expiresAt: string;
}

/** A key as `GET /api/keys` lists it (never the key itself). */
export interface KeyListing {
  keyId: string;
  name: string;
  prefix: string;
  status: 'active' | 'revoked' | 'expired';
  allowedCidrs: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  replacedBy: string | null;
  rotatedFrom: string | null;
  /** The key's budget and what it spent this period (`resetsAt` null: a total budget). */
  spendLimit: SpendLimit | null;
}

export type SpendPeriod = 'day' | 'month' | 'total';

export interface SpendLimit {
  credits: number;
  period: SpendPeriod;
  spent: number;
  resetsAt: string | null;
}

/** `POST /api/keys` and `/rotate`: the only answers that carry `apiKey`. */
export interface IssuedKey {
  keyId: string;
  apiKey: string;
  prefix: string;
  name: string;
  expiresAt: string | null;
  previous?: { keyId: string; expiresAt: string | null; revokedAt: string | null };
}

/** An image model of `GET /api/ai/models`. */
export interface ImageModel {
  id: string;
  type: 'image';
  inputModes: string[];
  maxPromptLength: number;
  maxReferenceImages: number;
  aspectRatios: string[];
  prices: { resolution: string; creditsPerImage: number }[];
  flatRate: boolean;
}

/** A video model of `GET /api/ai/models`. */
export interface VideoModel {
  id: string;
  type: 'video';
  family: string;
  inputModes: string[];
  maxPromptLength: number;
  maxReferenceImages: number;
  aspectRatios: string[];
  durations: number[];
  defaultDuration: number;
  resolutions: string[];
  prices: { duration: number; resolution: string; credits: number }[];
}

export type Model = ImageModel | VideoModel;

/** An answer other than 2xx, with the API's `{ error, ... }` body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: { error?: string; [extra: string]: unknown },
  ) {
    super(body.error ?? `HTTP ${status}`);
    this.name = 'ApiError';
  }

  /** `details.fieldErrors` of a 400, by dotted path (`allowedCidrs.1`, `prompt`). */
  get fieldErrors(): Record<string, string[]> {
    const details = this.body.details as { fieldErrors?: Record<string, string[]> } | undefined;
    return details?.fieldErrors ?? {};
  }

  /** `details.formErrors` of a 400. */
  get formErrors(): string[] {
    const details = this.body.details as { formErrors?: string[] } | undefined;
    return details?.formErrors ?? [];
  }
}

let csrfToken: string | undefined;

/** Called with every 401: the session has ended (signed out, expired, or revoked elsewhere). */
let onSignedOut: () => void = () => {};
export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

async function request<T>(method: string, path: string, json?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (method !== 'GET') {
    if (csrfToken === undefined) await session();
    if (csrfToken !== undefined) headers['X-CSRF-Token'] = csrfToken;
  }
  if (json !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = { error: `Unexpected answer (HTTP ${response.status})` };
  }
  if (!response.ok) {
    if (response.status === 401) {
      csrfToken = undefined;
      if (path !== '/api/session') onSignedOut();
    }
    throw new ApiError(response.status, (typeof body === 'object' && body !== null ? body : {}) as ApiError['body']);
  }
  return body as T;
}

/** The signed-in session (and a fresh CSRF token and balance); rejects with a 401 `ApiError` when signed out. */
export async function session(): Promise<Session> {
  const current = await request<Session>('GET', '/api/session');
  csrfToken = current.csrfToken;
  return current;
}

/** Ends this session; the cookie is cleared by the answer. */
export async function signOut(): Promise<void> {
  await request('POST', '/api/auth/sign-out');
  csrfToken = undefined;
}

export const listKeys = () => request<{ keys: KeyListing[] }>('GET', '/api/keys');
export const createKey = (body: {
  name: string;
  allowedCidrs?: string[];
  expiresAt?: string;
  spendLimit?: { credits: number; period: SpendPeriod };
}) => request<IssuedKey>('POST', '/api/keys', body);
export const rotateKey = (keyId: string, graceSeconds: number) =>
  request<IssuedKey>('POST', `/api/keys/${encodeURIComponent(keyId)}/rotate`, { graceSeconds });
/** Sets (or, with null, removes) a key's spend limit; answers the key as the list shows it. */
export const setKeyLimit = (keyId: string, spendLimit: { credits: number; period: SpendPeriod } | null) =>
  request<KeyListing>('PATCH', `/api/keys/${encodeURIComponent(keyId)}`, { spendLimit });
export const revokeKey = (keyId: string) =>
  request<{ keyId: string; revokedAt: string; alreadyRevoked: boolean }>(
    'POST',
    `/api/keys/${encodeURIComponent(keyId)}/revoke`,
  );

/** A query string from the parameters that are set. */
function query(parameters: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value) search.set(name, value);
  const text = search.toString();
  return text ? `?${text}` : '';
}

export const listTasks = (filter: { status?: string; type?: string; cursor?: string; limit?: string }) =>
  request<TaskList>('GET', `/api/ai/tasks${query(filter)}`);
/** With `waitSeconds`, the service holds the answer until the task ends or that many seconds pass (`?wait=`). */
export const getTask = (taskId: string, waitSeconds?: number) =>
  request<Task>('GET', `/api/ai/tasks/${encodeURIComponent(taskId)}${query({ wait: waitSeconds?.toString() })}`);
/** Cancels a queued task: it comes back failed (`CANCELLED`) and refunded; 409 once it has started or ended. */
export const cancelTask = (taskId: string) =>
  request<Task>('POST', `/api/ai/tasks/${encodeURIComponent(taskId)}/cancel`);
export const getCredits = (cursor?: string) =>
  request<Credits>('GET', `/api/ai/credits${query({ cursor, limit: '20' })}`);
/** The account's low-balance threshold for `credits.low` (session only). */
export const getAccountAlerts = () => request<AccountAlerts>('GET', '/api/account/alerts');
/** Sets (or, with null, removes) the low-balance threshold; answers the settings as stored. */
export const setAccountAlerts = (lowBalanceThreshold: number | null) =>
  request<AccountAlerts>('PUT', '/api/account/alerts', { lowBalanceThreshold });
/** The account-wide monthly spend limit and what it spent this month, or null (session only). */
export const getAccountLimit = () => request<AccountSpendLimit>('GET', '/api/account/spend-limit');
/** Sets (or, with null, removes) the account-wide monthly limit; answers it as `getAccountLimit` does. */
export const setAccountLimit = (credits: number | null) =>
  request<AccountSpendLimit>('PUT', '/api/account/spend-limit', {
    spendLimit: credits === null ? null : { credits, period: 'month' },
  });
export const listModels = () => request<{ models: Model[] }>('GET', '/api/ai/models');
export const submitTask = (type: 'image' | 'video', body: Record<string, unknown>) =>
  request<{ taskId: string; status: number; creditsUsed: number }>('POST', `/api/ai/${type}/generate`, body);
/** `POST /api/ai/uploads`: a presigned POST for one reference image (docs/api/uploads.md). */
export const createUpload = (body: { contentType: string; size: number }) =>
  request<{
    uploadId: string;
    uploadUrl: string;
    uploadFields?: Record<string, string>;
    expiresAt: string;
    url: string;
  }>('POST', '/api/ai/uploads', body);
/** Credits and tasks per UTC day, key or model; `from`/`to` (inclusive UTC days) default to the last 30 days. */
export const getUsage = (filter: { from?: string; to?: string; groupBy: UsageGroupBy }) =>
  request<Usage>('GET', `/api/ai/usage${query(filter)}`);

/** Deletes an ended task (204); a pending one answers 409 (cancel it first). */
export const deleteTask = (taskId: string) => request<unknown>('DELETE', `/api/ai/tasks/${encodeURIComponent(taskId)}`);

/** One page of the account's export (`GET /api/account/export`): sections to concatenate, and `next`. */
export interface AccountExportPage {
  userId: string;
  exportedAt: string;
  balance?: number;
  tasks: unknown[];
  ledger: unknown[];
  keys: unknown[];
  webhooks: unknown[];
  uploads: unknown[];
  webhookEndpoints: unknown[];
  next: string | null;
}
export const exportAccountPage = (cursor?: string) =>
  request<AccountExportPage>('GET', `/api/account/export${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`);

/** What closing the account did (`POST /api/account/close`). */
export interface AccountClosure {
  closedAt: string;
  keysRevoked: number;
  tasksCancelled: number;
  creditsRefunded: number;
  tasksDeleted: number;
  tasksStillRunning: number;
  uploadsDeleted: number;
  balance: number;
}
export const closeAccount = (confirm: string) => request<AccountClosure>('POST', '/api/account/close', { confirm });
/** A webhook endpoint of the account (never its secret), as `GET /api/webhooks` lists it. */
export type WebhookEndpoint = import('../../client/src/index').WebhookEndpoint;
/** An event type an endpoint may take (`events`; null there: all, those to come included). */
export type WebhookEventType = NonNullable<WebhookEndpoint['events']>[number];
/** One delivery of an endpoint's log with its attempts; `eventId` is its `webhook-id`. */
export type WebhookDelivery = import('../../client/src/index').WebhookDeliveryPage['deliveries'][number];
/** A delivery's state in the log. */
export type WebhookDeliveryState = WebhookDelivery['state'];
/** `POST /api/webhooks` and `/rotate-secret`: the only answers that carry `secret`. */
export type WebhookEndpointWithSecret = WebhookEndpoint & { secret: string };

const webhookPath = (endpointId: string) => `/api/webhooks/${encodeURIComponent(endpointId)}`;

export const listWebhookEndpoints = () => request<{ endpoints: WebhookEndpoint[] }>('GET', '/api/webhooks');
export const getWebhookEndpoint = (endpointId: string) => request<WebhookEndpoint>('GET', webhookPath(endpointId));
/** Creates an endpoint (session only); the answer's `secret` is shown then and never again. */
export const createWebhookEndpoint = (body: { url: string; events?: WebhookEventType[]; description?: string }) =>
  request<WebhookEndpointWithSecret>('POST', '/api/webhooks', body);
/** Changes an endpoint (session only); `events: null` takes every event type again. */
export const updateWebhookEndpoint = (
  endpointId: string,
  body: { url?: string; events?: WebhookEventType[] | null; enabled?: boolean; description?: string },
) => request<WebhookEndpoint>('PATCH', webhookPath(endpointId), body);
export const deleteWebhookEndpoint = (endpointId: string) =>
  request<{ id: string; deleted: boolean }>('DELETE', webhookPath(endpointId));
/** A new signing secret, shown once; the previous one still signs for `graceSeconds`. */
export const rotateWebhookSecret = (endpointId: string, graceSeconds: number) =>
  request<WebhookEndpointWithSecret>('POST', `${webhookPath(endpointId)}/rotate-secret`, { graceSeconds });
/** Sends a `webhook.test` event to this endpoint only. */
export const testWebhookEndpoint = (endpointId: string) =>
  request<{ deliveryId: string; eventId: string }>('POST', `${webhookPath(endpointId)}/test`);
/** A page of the endpoint's delivery log, newest first. */
export const listWebhookDeliveries = (
  endpointId: string,
  filter: { state?: string; eventType?: string; cursor?: string; limit?: string },
) =>
  request<{ deliveries: WebhookDelivery[]; next: string | null }>(
    'GET',
    `${webhookPath(endpointId)}/deliveries${query(filter)}`,
  );
/** A new attempt of a delivery now, with the same `webhook-id`. */
export const redeliverWebhook = (endpointId: string, deliveryId: string) =>
  request<WebhookDelivery>('POST', `${webhookPath(endpointId)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`);
