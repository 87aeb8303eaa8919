/**
 * Usage counters (core/usage.ts says what is counted): items `USER#<id>` / `USAGE#<day>#<shard>`, one
 * number attribute per counter (`debited`, `debited|k|<keyId>`, `debited|m|<model>`, ...).
 *
 * They are written inside the transactions that move credits or end a task, never after them, so a
 * counter can neither miss nor double an event: the accept (store/tasks.ts `acceptTask`), the refund
 * (`failAndRefund`) and the completion (`completeTask`). Each of those writes the counter shard with
 * the number of the balance shard it touches (or a random one), so counters add no hot item: two
 * accepts that meet on a counter shard met on the balance shard already.
 *
 * A read is ONE Query over the range's sort keys (DynamoDB pages at 1 MB): at most `balanceShards`
 * items per day with activity, whatever the number of tasks. Counters are kept `USAGE_KEEP_DAYS`
 * (TTL), beyond the longest range a read covers.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type UsageCounterItem, type UsageMetric, usageAttributes, usageDay } from '../core/usage';
import type { TransactItem } from './balance';
import * as conditions from './condition-fragments';
import { withKeyCondition } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { USAGE } from './keys';
import { TABLE } from './table';
import * as keys from './task-keys';

/** Days a counter item is kept after its day: more than a year, the longest range a read covers. */
export const USAGE_KEEP_DAYS = 400;

/** What one event adds to the counters of a day. */
export type UsageChange = Partial<Record<UsageMetric, number>>;

/** The task an event is about: its API key (none: submitted with a session) and model. */
export interface UsageSubject {
  keyId: string | undefined;
  model: string;
}

/**
 * The transaction item that adds `change` to counter shard `shard` of `day`: to the day's totals and to
 * the key's and the model's shares (one `ADD` per attribute; a missing item or attribute counts as 0).
 */
export function usageCounterChange(
  ctx: RetryingStoreContext,
  input: { userId: string; day: string; shard: number; subject: UsageSubject; change: UsageChange },
): TransactItem {
  const names: Record<string, string> = { '#usageUser': 'userId', '#usageTtl': TABLE.ttlAttribute };
  const values: Record<string, unknown> = {
    ':usageUser': input.userId,
    ':usageTtl': Math.floor(Date.parse(`${input.day}T00:00:00Z`) / 1000) + USAGE_KEEP_DAYS * 86_400,
  };
  const adds: string[] = [];
  for (const [metric, value] of Object.entries(input.change) as [UsageMetric, number][]) {
    values[`:usage${metric}`] = value;
    for (const name of usageAttributes(metric, input.subject.keyId, input.subject.model)) {
      const placeholder = `#usage${adds.length}`;
      names[placeholder] = name;
      adds.push(`${placeholder} :usage${metric}`);
    }
  }
  return {
    Update: {
      TableName: ctx.tableName,
      Key: keys.usageCounter(input.userId, input.day, input.shard),
      UpdateExpression: `SET #usageUser = :usageUser, #usageTtl = if_not_exists(#usageTtl, :usageTtl) ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * The counter items of a refund: the credits on the refund's day, the failed task on its accept's day
 * (one item when both are the same day: a transaction may not name an item twice).
 */
export function usageRefundChanges(
  ctx: RetryingStoreContext,
  input: { userId: string; shard: number; subject: UsageSubject; credits: number; acceptedAt: string; at: string },
): TransactItem[] {
  const refundDay = usageDay(input.at);
  const acceptDay = usageDay(input.acceptedAt);
  const base = { userId: input.userId, shard: input.shard, subject: input.subject };
  if (refundDay === acceptDay) {
    return [usageCounterChange(ctx, { ...base, day: refundDay, change: { refunded: input.credits, failed: 1 } })];
  }
  return [
    usageCounterChange(ctx, { ...base, day: acceptDay, change: { failed: 1 } }),
    usageCounterChange(ctx, { ...base, day: refundDay, change: { refunded: input.credits } }),
  ];
}

/**
 * Every counter item of `userId` from day `from` to day `to` (both included): one Query, paged by
 * DynamoDB at 1 MB. Eventually consistent (half the read units): a report may lag a write by a moment.
 * `requests` is how many Query requests it took.
 */
export async function readUsageCounters(
  ctx: RetryingStoreContext,
  input: { userId: string; from: string; to: string },
): Promise<{ items: UsageCounterItem[]; requests: number }> {
  const items: UsageCounterItem[] = [];
  let requests = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            ...withKeyCondition(
              {},
              conditions.partitionIs(keys.usageCounter(input.userId, input.from, 0).PK),
              // `~` sorts after every shard number.
              conditions.sortKeyBetween(`${USAGE}${input.from}#`, `${USAGE}${input.to}#~`),
            ),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    requests++;
    for (const item of page.Items ?? []) {
      const counters: Record<string, number> = {};
      for (const [name, value] of Object.entries(item)) if (typeof value === 'number') counters[name] = value;
      // The day is in the sort key: `USAGE#<day>#<shard>`.
      items.push({ day: String(item[TABLE.sortKey]).slice(USAGE.length, USAGE.length + 10), counters });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return { items, requests };
}
