/**
 * API key records. Three items per key, always written together in one transaction:
 * - `APIKEY#<sha256>` / `APIKEY`: what the authorizer reads on every cache miss (one GetItem);
 * - `USER#<userId>` / `KEY#<keyId>`: the owner's listing (prefix for display, never the key or its hash);
 * - `KEYID#<keyId>` / `KEYID`: key id -> owner and hash, so operators revoke and rotate by key id.
 * The plaintext key exists only in the return value of `putApiKey` (money/key-issue.ts) / `rotateApiKey`
 * (money/key-end.ts), the transactions that write these items with the account's active-key count
 * (store/key-count.ts): the listing says `counted`.
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { epochSeconds } from '../core/api-key';
import { KeyNotFoundError, KeyStateError } from '../core/errors';
import {
  type ApiKeyListing,
  type ApiKeyRecord,
  LISTING_ATTRIBUTES,
  NAMES,
  names,
  RECORD_ATTRIBUTES,
  str,
  toListing,
  toRecord,
} from './api-key-records';
import type { AuditInput } from './audit';
import type { StoreContext } from './client';
import * as conditions from './condition-fragments';
import { and, conditionParams, type Expr, update, updateParams } from './conditions';
import { cancellationReasons } from './errors';
import { accountKeys } from './keys';
import { queryAllWithPrefix } from './pages';

export type { ApiKeyListing, ApiKeyRecord } from './api-key-records';

/** A key just issued: `apiKey` is the plaintext, returned this once and stored nowhere. */
export interface IssuedApiKey extends ApiKeyRecord {
  apiKey: string;
  prefix: string;
}

/** A step that must succeed before a new key is written; it gets the new key's id and owner. */
export type BeforeCommit = (newKey: { keyId: string; userId: string }) => Promise<void>;

/** Which key to act on; with `ownerId`, a key of anyone else is reported as not found. */
export interface KeyAction {
  keyId: string;
  /** The user who must own the key (the key management API passes the session's user). */
  ownerId?: string;
  now?: Date;
  /** Recorded in the same transaction as the change. */
  audit?: AuditInput;
}

/** No key has this id (or its records are gone). */
export class ApiKeyNotFoundError extends KeyNotFoundError {
  override readonly name: string = 'ApiKeyNotFoundError';
  constructor(readonly keyId: string) {
    super();
    // The operator sees which id; the HTTP answer is the fixed "Key not found" (error-handler.ts).
    this.message = `API key not found: ${keyId}`;
  }
}

/** The key exists but cannot undergo the operation (rotating a revoked, expired or replaced key). */
export class ApiKeyStateError extends KeyStateError {
  override readonly name: string = 'ApiKeyStateError';
}

export { epochSeconds };

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The three puts that create a key; every one must not exist yet. */
export function newKeyItems(ctx: StoreContext, record: ApiKeyRecord, keyHash: string, prefix: string): TransactItem[] {
  const notExists = conditionParams(conditions.itemIsNew());
  return [
    { Put: { TableName: ctx.tableName, Item: { ...accountKeys.apiKey(keyHash), ...record }, ...notExists } },
    {
      Put: {
        TableName: ctx.tableName,
        // In the account's active-key count from the start (store/key-count.ts).
        Item: {
          ...accountKeys.keyListing(record.userId, record.keyId),
          ...withoutUserId(record),
          prefix,
          counted: true,
        },
        ...notExists,
      },
    },
    {
      Put: {
        TableName: ctx.tableName,
        Item: { ...accountKeys.keyId(record.keyId), keyId: record.keyId, userId: record.userId, keyHash },
        ...notExists,
      },
    },
  ];
}

/** An update of the key's authorizer item (`APIKEY#<hash>`) on a named condition. */
export function keyItemUpdate(ctx: StoreContext, keyHash: string, change: Expr, condition: Expr): TransactItem {
  return { Update: { TableName: ctx.tableName, Key: accountKeys.apiKey(keyHash), ...updateParams(change, condition) } };
}

function withoutUserId(record: ApiKeyRecord): Omit<ApiKeyRecord, 'userId'> {
  const { userId: _userId, ...rest } = record;
  return rest;
}

export function cancellationCodes(error: unknown): string[] | undefined {
  return cancellationReasons(error)?.map((reason) => reason.Code ?? 'None');
}

/**
 * The key with this SHA-256, or `undefined`. The authorizer's hot path: exactly one GetItem. Strongly
 * consistent, so a revocation is seen by the very next lookup (the authorizer cache TTL is then the
 * only delay).
 */
export async function getApiKeyByHash(ctx: StoreContext, keyHash: string): Promise<ApiKeyRecord | undefined> {
  const result = await ctx.doc.send(
    new GetCommand({
      TableName: ctx.tableName,
      Key: accountKeys.apiKey(keyHash),
      ConsistentRead: true,
      ProjectionExpression: RECORD_ATTRIBUTES.join(', '),
      ExpressionAttributeNames: names(...RECORD_ATTRIBUTES),
    }),
  );
  return result.Item ? toRecord(result.Item) : undefined;
}

/** Every key of a user (active, expired and revoked), oldest first by key id order of the listing. */
export async function listApiKeys(ctx: StoreContext, userId: string): Promise<ApiKeyListing[]> {
  const projection = LISTING_ATTRIBUTES.map((placeholder) => NAMES[placeholder]);
  const items = await queryAllWithPrefix(ctx, accountKeys.keyListing(userId, ''), projection);
  const listings = items.map(toListing);
  return listings.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.keyId.localeCompare(b.keyId));
}

export interface KeyRef {
  keyId: string;
  userId: string;
  keyHash: string;
}

/** The audit entry names the key acted on. */
export function withKey(audit: AuditInput, keyId: string): AuditInput {
  return { ...audit, keyId };
}

export async function getKeyRef(ctx: StoreContext, keyId: string, ownerId?: string): Promise<KeyRef> {
  const result = await ctx.doc.send(
    new GetCommand({
      TableName: ctx.tableName,
      Key: accountKeys.keyId(keyId),
      ConsistentRead: true,
      ProjectionExpression: '#keyId, #userId, #keyHash',
      ExpressionAttributeNames: names('#keyId', '#userId', '#keyHash'),
    }),
  );
  if (!result.Item) throw new ApiKeyNotFoundError(keyId);
  const ref = {
    keyId: str(result.Item, 'keyId'),
    userId: str(result.Item, 'userId'),
    keyHash: str(result.Item, 'keyHash'),
  };
  // Someone else's key is indistinguishable from a missing one.
  if (ownerId !== undefined && ref.userId !== ownerId) throw new ApiKeyNotFoundError(keyId);
  return ref;
}

/** The key with this id (any state), or undefined when no key has it: what reconciling its API Gateway key reads. */
export async function getApiKeyById(ctx: StoreContext, keyId: string): Promise<ApiKeyRecord | undefined> {
  try {
    const ref = await getKeyRef(ctx, keyId);
    return await getApiKeyByHash(ctx, ref.keyHash);
  } catch (error) {
    if (error instanceof ApiKeyNotFoundError) return undefined;
    throw error;
  }
}

/** How often a key's `lastUsedAt` is written: a write per request would double the authorizer's cost. */
export const KEY_USE_RECORD_INTERVAL_SECONDS = 60;

/** Whether a use at `nowSeconds` should be recorded. */
export function keyUseDue(record: Pick<ApiKeyRecord, 'lastUsedAt'>, nowSeconds: number): boolean {
  return record.lastUsedAt === undefined || nowSeconds - record.lastUsedAt >= KEY_USE_RECORD_INTERVAL_SECONDS;
}

/**
 * Records that a key was used (on its authorizer item and its listing), at most once a minute: the
 * condition lets only one of several concurrent requests write. Returns whether it wrote.
 */
export async function recordKeyUse(
  ctx: StoreContext,
  input: { keyHash: string; userId: string; keyId: string; now: Date },
): Promise<boolean> {
  const nowSeconds = epochSeconds(input.now);
  const use = (key: { PK: string; SK: string }): TransactItem => ({
    Update: {
      TableName: ctx.tableName,
      Key: key,
      ...updateParams(
        update({ set: { lastUsedAt: nowSeconds } }),
        and(conditions.itemExists(), conditions.keyUseDue(nowSeconds - KEY_USE_RECORD_INTERVAL_SECONDS)),
      ),
    },
  });
  try {
    await ctx.doc.send(
      new TransactWriteCommand({
        TransactItems: [use(accountKeys.apiKey(input.keyHash)), use(accountKeys.keyListing(input.userId, input.keyId))],
      }),
    );
    return true;
  } catch (error) {
    if (cancellationCodes(error)?.includes('ConditionalCheckFailed')) return false;
    throw error;
  }
}
