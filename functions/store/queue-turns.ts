/**
 * The other accounts' queued tasks that take turns with one task (`estimatedStartAt`,
 * functions/core/start-estimate.ts), read from the dispatch queue's entries (`DISPATCH#QUEUE`,
 * `<account>#<createdAt>#<taskId>`, accounts in key order).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as conditions from './condition-fragments';
import { attr, namesOf, withKeyCondition } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { DISPATCH_QUEUE, queueAccount } from './keys';
import { TABLE } from './table';

/** Entries one Query returns (sort keys only: about 100 bytes each, some 2 read units a page). */
const PAGE = 100;
/** Queries at most: a read of a task waiting behind many accounts costs a bounded few read units. */
const PAGES = 3;

/**
 * For each other account with queued tasks: how many, counted no further than `upTo` (an account's
 * entries past that are skipped, the next Query starting after them). Eventually consistent, like
 * `queuedAhead`. At most {@link PAGES} Queries of {@link PAGE} entries: beyond them (hundreds of
 * accounts waiting) the accounts not reached are left out, and the estimate is early.
 */
export async function otherAccountsQueued(
  ctx: RetryingStoreContext,
  input: { userId: string; upTo: number },
): Promise<number[]> {
  const own = queueAccount(input.userId);
  const counts = new Map<string, number>();
  let after: string | undefined;
  for (let page = 0; page < PAGES; page++) {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            ...withKeyCondition(
              { ExpressionAttributeNames: namesOf(TABLE.sortKey) },
              conditions.partitionIs(DISPATCH_QUEUE),
              after === undefined ? undefined : conditions.sortKeyAfter(after),
            ),
            ProjectionExpression: attr(TABLE.sortKey),
            Limit: PAGE,
          }),
        ),
      ctx.retry,
    );
    for (const item of out.Items ?? []) {
      const account = String(item[TABLE.sortKey]).split('#')[0] ?? '';
      if (account !== own) counts.set(account, Math.min(input.upTo, (counts.get(account) ?? 0) + 1));
    }
    const last = out.LastEvaluatedKey?.[TABLE.sortKey];
    if (typeof last !== 'string') break;
    const lastAccount = last.split('#')[0] ?? '';
    // The own account's entries, and an account counted in full, are skipped in one step.
    const done = lastAccount === own || (counts.get(lastAccount) ?? 0) >= input.upTo;
    after = done ? `${lastAccount}#\uffff` : last;
  }
  return [...counts.values()];
}
