/**
 * The one transaction runner of the store: every `TransactWriteItems` goes through `transact`, so the
 * retry of transient cancellations (store/errors.ts `withRetry`) and the fresh command per try are in
 * one place rather than copied into each module.
 */
import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { StoreContext } from './client';
import { type RetryOptions, withRetry } from './errors';

/** One write or check of a transaction (as `TransactWriteCommand` takes it). */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * Sends one transaction of `items`, tried again on transient cancellations (conflicts, throttling) as
 * `withRetry` does with `retry`. `items` may be a function, called per try, for a transaction whose items
 * change between tries (a shard picked afresh). A new command per try: the SDK gives each one a fresh
 * ClientRequestToken, so a retried (cancelled) transaction is evaluated again rather than answered from
 * the token cache. Failed conditions propagate for the caller to map.
 */
export async function transact(
  ctx: StoreContext,
  items: readonly TransactItem[] | (() => readonly TransactItem[]),
  retry?: RetryOptions,
): Promise<void> {
  await withRetry(
    () =>
      ctx.doc.send(new TransactWriteCommand({ TransactItems: [...(typeof items === 'function' ? items() : items)] })),
    retry,
  );
}

/** Sends one transaction of `items` once: the caller reads its failure (and decides on a retry itself). */
export async function transactOnce(ctx: StoreContext, items: readonly TransactItem[]): Promise<void> {
  await ctx.doc.send(new TransactWriteCommand({ TransactItems: [...items] }));
}
