/**
 * What outranks a 402, read without a transaction (docs/decisions/0019-thin-accept-in-one-request.md).
 * An accept whose balance read says the account cannot pay still answers an ended key (401), a key
 * limit changed since the authorizer read it (503) and an Idempotency-Key used before (a replay, or 409)
 * first, as the conditions of a try would have told them. Their items are read instead, consistently and
 * side by side (GetItem holds nothing, so a refusal never cancels a racing gathering), and judged by the
 * rules of the conditions that try would state: condition-fragments.ts `keyNotEnded`, `limitCurrent` and
 * `idempotencyKeyFree` (test/integration/store-thin-refusal.test.ts holds each judgement to DynamoDB's).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { KeyGuard } from './balance';
import { type RetryingStoreContext, withRetry } from './errors';
import type { ItemKey } from './keys';
import { TABLE } from './table';
import * as keys from './task-keys';

/** The items whose conditions would fail a try, as read (absent: that condition would hold). */
export interface OutrankingItems {
  /** The key-end guard, when the key has ended or its spend limit changed since the authorizer read it. */
  guard?: { endsAt?: unknown; limitVersion?: unknown };
  /** The Idempotency-Key's record, when the key is taken (used and not expired). */
  idempotency?: { taskId?: unknown; requestHash?: unknown };
}

/**
 * Reads the key-end guard of `shard` and, with an Idempotency-Key, its record (one or two consistent
 * GetItems at once) and keeps those whose conditions a try at `nowSeconds` would fail.
 */
export async function readOutranking(
  ctx: RetryingStoreContext,
  input: { userId: string; guard: KeyGuard; shard: number; idempotencyKey: string | undefined },
): Promise<OutrankingItems> {
  const { guard, idempotencyKey } = input;
  const [guardItem, record] = await Promise.all([
    getItem(ctx, keys.keyEndGuard(input.userId, guard.keyId, input.shard)),
    idempotencyKey === undefined ? undefined : getItem(ctx, keys.idempotency(input.userId, idempotencyKey)),
  ]);
  const now = guard.nowSeconds;
  // keyNotEnded: no end, or one after now; limitCurrent: no stamp, or one not newer than the accept's.
  const guardFails =
    guardItem !== undefined &&
    ((typeof guardItem.endsAt === 'number' && guardItem.endsAt <= now) ||
      (typeof guardItem.limitVersion === 'number' && guardItem.limitVersion > guard.limitVersion));
  // idempotencyKeyFree: no record, or one whose expiry is before now.
  const expiry = record?.[TABLE.ttlAttribute];
  const taken = record !== undefined && !(typeof expiry === 'number' && expiry < now);
  return { ...(guardFails ? { guard: guardItem } : {}), ...(taken ? { idempotency: record } : {}) };
}

async function getItem(ctx: RetryingStoreContext, key: ItemKey): Promise<Record<string, unknown> | undefined> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: true })),
    ctx.retry,
  );
  return out.Item;
}
