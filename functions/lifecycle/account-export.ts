/**
 * An account's data as JSON (GET /api/account/export, docs/design/accounts.md#exporting-an-account):
 * its tasks (deleted ones are gone from the table, so never in it), ledger, keys, webhook settings and
 * uploads, and its self-serve webhook endpoints, each as the owner sees it and never with a secret: no
 * key, key hash or key prefix, no webhook signing secret (an endpoint's current or previous), no session. One answer holds at most `EXPORT_PAGE_BYTES` of JSON; a larger account is
 * exported in several answers, each naming the next with `next` (an opaque cursor). Lambda's response is
 * bounded (6 MB through API Gateway REST's proxy integration, which streams no body), and so is the
 * function's memory: a page reads at most one Query past its budget.
 */

import { ValidationError } from '../core/errors';
import { toTaskResource } from '../core/lifecycle';
import type { TaskRecord } from '../core/task';
import { accountItemsAfter } from '../store/account-export';
import { getBalance } from '../store/accounts';
import type { StoreContext } from '../store/client';

/**
 * The JSON one answer may hold. API Gateway REST answers at most 6 MB from a Lambda proxy integration
 * (Lambda's own synchronous limit is 6 MB too); 4 MiB leaves room for the envelope and for an item read
 * past the budget (one item is at most DynamoDB's 400 KB).
 */
export const EXPORT_PAGE_BYTES = 4 * 1024 * 1024;

/** Items per Query: small enough that one Query past the budget stays far from the 6 MB bound. */
const ITEMS_PER_READ = 100;

type Item = Record<string, unknown>;

/** One section of the export: where its items live and what of each the owner gets. */
interface Section {
  name: 'tasks' | 'ledger' | 'keys' | 'webhooks' | 'uploads' | 'webhookEndpoints';
  prefix: string;
  /** The item as exported, or undefined to leave it out (another item under the same prefix, an expired upload). */
  present: (item: Item, now: Date) => Item | undefined;
}

/** Copies the named attributes that are set: an allowlist, so nothing secret can slip in with a new attribute. */
function pick(item: Item, names: readonly string[]): Item {
  const out: Item = {};
  for (const name of names) if (item[name] !== undefined) out[name] = item[name];
  return out;
}

function isoOf(epochSeconds: unknown): string | null {
  return typeof epochSeconds === 'number' ? new Date(epochSeconds * 1000).toISOString() : null;
}

const SECTIONS: readonly Section[] = [
  {
    name: 'tasks',
    prefix: 'TASK#',
    // The Task resource without result URLs: an export hands out no download links (GET the task for them).
    present: (item) => ({ ...toTaskResource(item as unknown as TaskRecord) }),
  },
  {
    name: 'ledger',
    prefix: 'LEDGER#',
    present: (item) => pick(item, ['kind', 'delta', 'at', 'taskId', 'grantId', 'model']),
  },
  {
    name: 'keys',
    prefix: 'KEY#',
    present: (item) => ({
      ...pick(item, ['keyId', 'name', 'allowedCidrs', 'createdAt', 'replacedBy', 'rotatedFrom', 'spendLimit']),
      expiresAt: isoOf(item.expiresAt),
      revokedAt: isoOf(item.revokedAt),
      lastUsedAt: isoOf(item.lastUsedAt),
    }),
  },
  {
    name: 'webhooks',
    prefix: 'WEBHOOKS',
    // `WEBHOOKS#OPEN` (a counter) shares the prefix; the settings are the item `WEBHOOKS` itself.
    present: (item) =>
      item.SK === 'WEBHOOKS'
        ? {
            url: item.url ?? null,
            hasSecret: item.sealedSecret !== undefined,
            ...pick(item, ['secretCreatedAt', 'updatedAt']),
          }
        : undefined,
  },
  {
    name: 'uploads',
    prefix: 'UPLOAD#',
    // DynamoDB's TTL removes an expired upload's record late; it is gone for the owner already.
    present: (item, now) =>
      typeof item.expiresAt === 'string' && Date.parse(item.expiresAt) > now.getTime()
        ? pick(item, ['uploadId', 'contentType', 'declaredBytes', 'createdAt', 'expiresAt'])
        : undefined,
  },
  {
    // Last, so the cursors of the sections before keep their numbers.
    name: 'webhookEndpoints',
    // `WEBHOOKEP#<id>` (store/keys.ts webhookKeys.endpoint); the counter `WEBHOOKEP` has no `#`. Named as
    // the endpoint API shows them (lifecycle/webhook-endpoints.ts describeEndpoint), without the secrets.
    prefix: 'WEBHOOKEP#',
    present: (item) => ({
      id: item.endpointId,
      ...pick(item, ['url']),
      events: item.events ?? null,
      ...pick(item, ['enabled']),
      description: item.description ?? null,
      ...pick(item, ['createdAt', 'updatedAt', 'secretCreatedAt']),
    }),
  },
];

/** One answer of the export. Each section is a list; the pages of one export concatenate section by section. */
export interface AccountExportPage {
  userId: string;
  exportedAt: string;
  /** The balance now (on the first page only: the ledger's sum, as the audit checks). */
  balance?: number;
  tasks: Item[];
  ledger: Item[];
  keys: Item[];
  webhooks: Item[];
  uploads: Item[];
  /** The self-serve webhook endpoints (POST /api/webhook-endpoints): url, events, enabled, description, times. */
  webhookEndpoints: Item[];
  /** The cursor of the next page (`?cursor=`), or null on the last. */
  next: string | null;
}

interface Position {
  section: number;
  afterSortKey?: string;
}

/** Sort keys are printable ASCII here; a cursor longer than this never came from us. */
const MAX_CURSOR_CHARS = 800;

function encodePosition(position: Position): string {
  return Buffer.from(`${position.section}:${position.afterSortKey ?? ''}`, 'utf8').toString('base64url');
}

/** The position in a cursor; 400 for anything this code did not make (it can only move within the caller's partition). */
export function decodeExportCursor(cursor: string): Position {
  const refuse = () =>
    new ValidationError({
      fieldErrors: { cursor: ['not a cursor of this export: pass `next` as the previous page gave it'] },
      formErrors: [],
    });
  if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw refuse();
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(\d):([\x21-\x7e]*)$/.exec(decoded);
  const section = SECTIONS[Number(match?.[1])];
  const afterSortKey = match?.[2] ?? '';
  if (!match || !section || (afterSortKey !== '' && !afterSortKey.startsWith(section.prefix))) throw refuse();
  return { section: Number(match[1]), ...(afterSortKey ? { afterSortKey } : {}) };
}

/**
 * One page of the account's export, from `cursor` (none: the first). Reads section after section, one
 * Query at a time, until the page holds `pageBytes` of JSON or the account has no more.
 */
export async function exportAccountPage(
  ctx: { store: StoreContext; now: () => Date },
  input: { userId: string; cursor?: string; pageBytes?: number },
): Promise<AccountExportPage> {
  const now = ctx.now();
  const budget = input.pageBytes ?? EXPORT_PAGE_BYTES;
  let position: Position = input.cursor === undefined ? { section: 0 } : decodeExportCursor(input.cursor);
  const page: AccountExportPage = {
    userId: input.userId,
    exportedAt: now.toISOString(),
    ...(input.cursor === undefined ? { balance: await getBalance(ctx.store, input.userId) } : {}),
    tasks: [],
    ledger: [],
    keys: [],
    webhooks: [],
    uploads: [],
    webhookEndpoints: [],
    next: null,
  };
  let bytes = 0;
  for (;;) {
    const section = SECTIONS[position.section];
    if (!section) return page;
    if (bytes >= budget) return { ...page, next: encodePosition(position) };
    const read = await accountItemsAfter(ctx.store, {
      userId: input.userId,
      prefix: section.prefix,
      limit: ITEMS_PER_READ,
      ...(position.afterSortKey ? { afterSortKey: position.afterSortKey } : {}),
    });
    let taken = 0;
    for (const item of read.items) {
      if (bytes >= budget) break;
      const presented = section.present(item, now);
      if (presented) {
        page[section.name].push(presented);
        bytes += Buffer.byteLength(JSON.stringify(presented));
      }
      position = { section: position.section, afterSortKey: String(item.SK) };
      taken++;
    }
    // Every item read taken and none left under the prefix: the next section (else this one goes on).
    if (taken === read.items.length && !read.more) position = { section: position.section + 1 };
  }
}
