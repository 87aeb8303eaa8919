/**
 * The items of a key's spend limit change: the key's authorizer item and its listing take the new limit
 * (or lose it) under a new version, on named conditions. The change itself (which keys of the rotation
 * chain, in which order, what a failure means) is composed in money/key-limit.ts.
 */
import type { KeySpendLimit } from '../core/task';
import type { KeyRef } from './api-keys';
import type { StoreContext } from './client';
import { type Expr, update, updateParams } from './conditions';
import { accountKeys } from './keys';
import type { TransactItem } from './transaction';

/** The key whose limit changes: its id, owner and hash (store/api-keys.ts `getKeyRef`). */
export type LimitedKey = KeyRef;

/**
 * One key's limit change: the key, the limit it takes (undefined: none) as version `version`, and the
 * conditions of its authorizer item and its listing. The items' input here, and the input of the
 * contributor that brings them (money/key-contributors.ts `limitedKey`).
 */
export interface KeyLimitChange {
  key: LimitedKey;
  spendLimit: KeySpendLimit | undefined;
  version: number;
  keyCondition: Expr;
  listingCondition: Expr;
}

/**
 * The two updates of a key's limit: its authorizer item on `keyCondition`, its listing on
 * `listingCondition`, each taking `spendLimit` (undefined: removed) as version `version`.
 */
export function keyLimitUpdate(ctx: StoreContext, input: KeyLimitChange): [TransactItem, TransactItem] {
  const change = update({
    set: { spendLimitVersion: input.version, ...(input.spendLimit ? { spendLimit: input.spendLimit } : {}) },
    remove: input.spendLimit ? [] : ['spendLimit'],
  });
  const { key } = input;
  return [
    {
      Update: {
        TableName: ctx.tableName,
        Key: accountKeys.apiKey(key.keyHash),
        ...updateParams(change, input.keyCondition),
      },
    },
    {
      Update: {
        TableName: ctx.tableName,
        Key: accountKeys.keyListing(key.userId, key.keyId),
        ...updateParams(change, input.listingCondition),
      },
    },
  ];
}
