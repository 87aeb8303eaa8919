/**
 * Cursor pages over one user's items, newest first: the one way the API pages a listing (tasks, the
 * ledger, the audit log). A cursor is the last sort key of a page, base64url-encoded; it is checked to
 * be a sort key of the listing it came from, and the Query's partition is always the caller's own, so a
 * forged cursor can only move within the caller's data.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import * as conditions from './condition-fragments';
import { withKeyCondition } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import type { ItemKey } from './keys';

/** Sort keys are printable ASCII in this table; a cursor longer than this never came from us. */
const MAX_CURSOR_CHARS = 700;

/** An opaque cursor for the sort key `sortKey`. */
export function encodeCursor(sortKey: string): string {
  return Buffer.from(sortKey, 'utf8').toString('base64url');
}

/** The sort key in `cursor` when it matches `shape` (the listing's sort keys), else undefined. */
export function decodeCursor(cursor: string, shape: RegExp): string | undefined {
  if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const sortKey = Buffer.from(cursor, 'base64url').toString('utf8');
  return shape.test(sortKey) ? sortKey : undefined;
}

/** One listing: where its items live and how their sort keys look. */
export interface Listing {
  /** The index to query, or undefined for the table. */
  indexName?: string;
  partitionKeyName: string;
  sortKeyName: string;
  partitionKey: string;
  /** Items of the listing have sort keys starting with this (may be empty: every item of the partition). */
  sortKeyPrefix: string;
  /** For an index: the table key of the item with this index sort key (part of a start key). */
  tableKeyOf?: (sortKey: string) => Record<string, string>;
}

/** A page of items and the cursor of the next page (none on the last page). */
export interface Page<T> {
  items: T[];
  next?: string;
}

/**
 * One Query: up to `limit` items of `listing` after the cursor's sort key, newest (highest sort key)
 * first. `filter` narrows the page after DynamoDB read it, so a filtered page may hold fewer items than
 * `limit` while `next` still says that more may follow.
 */
export async function queryPage<T>(
  ctx: RetryingStoreContext,
  listing: Listing,
  options: {
    limit: number;
    afterSortKey?: string;
    filter?: Pick<QueryCommandInput, 'FilterExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'>;
    consistent?: boolean;
  },
  toItem: (item: Record<string, unknown>) => T,
): Promise<Page<T>> {
  const prefixed = listing.sortKeyPrefix !== '';
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          ...(listing.indexName ? { IndexName: listing.indexName } : {}),
          FilterExpression: options.filter?.FilterExpression,
          ...withKeyCondition(
            {
              ExpressionAttributeNames: { ...options.filter?.ExpressionAttributeNames },
              ExpressionAttributeValues: { ...options.filter?.ExpressionAttributeValues },
            },
            conditions.partitionIs(listing.partitionKey, listing.partitionKeyName),
            prefixed ? conditions.sortKeyBeginsWith(listing.sortKeyPrefix, listing.sortKeyName) : undefined,
          ),
          ScanIndexForward: false,
          Limit: options.limit,
          ...(options.consistent ? { ConsistentRead: true } : {}),
          ...(options.afterSortKey ? { ExclusiveStartKey: startKey(listing, options.afterSortKey) } : {}),
        }),
      ),
    ctx.retry,
  );
  const items = (out.Items ?? []).map(toItem);
  const last = out.LastEvaluatedKey?.[listing.sortKeyName];
  return typeof last === 'string' ? { items, next: encodeCursor(last) } : { items };
}

/** The ExclusiveStartKey for a sort key; an index's start key also holds the item's table key. */
function startKey(listing: Listing, sortKey: string): Record<string, string> {
  const key: Record<string, string> = {
    [listing.partitionKeyName]: listing.partitionKey,
    [listing.sortKeyName]: sortKey,
  };
  return listing.indexName ? { ...key, ...(listing.tableKeyOf?.(sortKey) ?? {}) } : key;
}

/**
 * Every item of one partition whose sort key starts with `prefix.SK`, all pages, in sort-key order,
 * read consistently: for the few listings that need them all (a user's ledger for the audit, balance
 * shards, a user's keys). `projection` names the attributes to read, when not all.
 */
export async function queryAllWithPrefix(
  ctx: RetryingStoreContext,
  prefix: ItemKey,
  projection?: readonly string[],
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  const projected = Object.fromEntries((projection ?? []).map((name, index) => [`#p${index}`, name]));
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            ...withKeyCondition(
              { ExpressionAttributeNames: projected },
              conditions.partitionIs(prefix.PK),
              conditions.sortKeyBeginsWith(prefix.SK),
            ),
            ...(projection ? { ProjectionExpression: Object.keys(projected).join(', ') } : {}),
            ConsistentRead: true,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        ),
      ctx.retry,
    );
    items.push(...(out.Items ?? []));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items;
}
