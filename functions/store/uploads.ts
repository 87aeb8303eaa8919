/**
 * Upload records (`USER#<id>` / `UPLOAD#<uploadId>`): what an account was allowed to upload, written
 * when the presigned POST is made and removed by DynamoDB's TTL when the upload expires. Reading one
 * needs the owner's id, so another account's upload is simply not found.
 */
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { UploadContentType } from '../core/uploads';
import * as conditions from './condition-fragments';
import { conditionParams } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { TABLE } from './table';
import * as keys from './task-keys';

export interface UploadRecord {
  userId: string;
  uploadId: string;
  /** Where the bytes live (`uploads/<user>/<uploadId>`). */
  key: string;
  contentType: UploadContentType;
  /** The size the caller declared; the POST policy allows up to `maxBytes`. */
  declaredBytes: number;
  maxBytes: number;
  createdAt: string;
  expiresAt: string;
}

function uploadItemKey(userId: string, uploadId: string) {
  return { [TABLE.partitionKey]: `USER#${userId}`, [TABLE.sortKey]: `UPLOAD#${uploadId}` };
}

/** The stored item of an upload record: its keys, the record, and the TTL at its expiry. */
export function uploadItem(record: UploadRecord): Record<string, unknown> {
  return {
    ...uploadItemKey(record.userId, record.uploadId),
    ...record,
    [TABLE.ttlAttribute]: Math.ceil(new Date(record.expiresAt).getTime() / 1000),
  };
}

/** Records a new upload (the id is fresh, so the write is conditional on nothing being there). */
export async function putUpload(ctx: RetryingStoreContext, record: UploadRecord): Promise<void> {
  await withRetry(
    () =>
      ctx.doc.send(
        new PutCommand({
          TableName: ctx.tableName,
          Item: uploadItem(record),
          ...conditionParams(conditions.itemIsNew()),
        }),
      ),
    ctx.retry,
  );
}

/** Removes an upload record (nothing there is no error): an inline image of a refused submit. */
export async function deleteUpload(ctx: RetryingStoreContext, userId: string, uploadId: string): Promise<void> {
  await withRetry(
    () => ctx.doc.send(new DeleteCommand({ TableName: ctx.tableName, Key: uploadItemKey(userId, uploadId) })),
    ctx.retry,
  );
}

/**
 * The caller's upload, or undefined when it does not exist, belongs to someone else (the key holds the
 * owner) or has expired (TTL deletes lazily, so the time is checked here too).
 */
export async function getUpload(
  ctx: RetryingStoreContext,
  userId: string,
  uploadId: string,
  now: Date,
): Promise<UploadRecord | undefined> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: uploadItemKey(userId, uploadId) })),
    ctx.retry,
  );
  const item = out.Item;
  if (!item || typeof item.expiresAt !== 'string' || new Date(item.expiresAt).getTime() <= now.getTime()) {
    return undefined;
  }
  // Written only by putUpload, so the item has the record's shape (plus its keys and TTL).
  return item as UploadRecord;
}

/**
 * True when `idempotencyKey` already holds this very request (same hash, not expired): its submit is a
 * replay, answered with the original task even after the uploads it names have expired.
 */
export async function isRecordedRequest(
  ctx: RetryingStoreContext,
  userId: string,
  idempotency: { key: string; requestHash: string },
  now: Date,
): Promise<boolean> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: keys.idempotency(userId, idempotency.key) })),
    ctx.retry,
  );
  const item = out.Item;
  return (
    item?.requestHash === idempotency.requestHash &&
    Number(item[TABLE.ttlAttribute]) >= Math.floor(now.getTime() / 1000)
  );
}
