/**
 * Removing an owner's data from the table: an ended task (its item, and with it its listing and index
 * entries), an upload's record. The money stays: a task's ledger entries (debit, refund) are kept, and
 * the removal writes the task's model onto them in the same transaction, so the ledger still says what
 * was paid for, when and for which task id, without the prompt or any media (docs/design/accounts.md).
 */
import { DeleteCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type TaskRecord, TaskStatus } from '../core/task';
import * as conditions from './condition-fragments';
import { and, conditionParams, update, updateParams, withKeyCondition } from './conditions';
import { busy, lostCondition, type RetryingStoreContext, withRetry } from './errors';
import { USER } from './keys';
import * as keys from './task-keys';

/** Why a removal wrote nothing: the task is gone already, or it is (again) pending. */
export type RemovalOutcome = 'removed' | 'missing' | 'pending';

/** Tries of the removal transaction before it answers busy (it conflicts only with a write on the same task). */
const REMOVE_ATTEMPTS = 3;

/**
 * Deletes an ended task in ONE `TransactWriteItems`: the task item (on condition that it is still
 * there and ended, so a pending task is never removed), and its ledger entries stamped with the
 * task's model (each on condition that it exists: a task accepted for 0 credits has its debit all the
 * same, a task never refunded no refund). Balances are not touched.
 */
export async function removeEndedTask(ctx: RetryingStoreContext, task: TaskRecord): Promise<RemovalOutcome> {
  if (task.status === TaskStatus.PENDING) return 'pending';
  const ledgerStamp = (kind: 'debit' | 'refund') => ({
    Update: {
      TableName: ctx.tableName,
      Key: keys.ledger(task.userId, task.createdAt, task.taskId, kind),
      ...updateParams(update({ set: { model: task.model } }), conditions.itemExists()),
    },
  });
  const items = [
    {
      Delete: {
        TableName: ctx.tableName,
        Key: keys.task(task.userId, task.taskId),
        ...conditionParams(and(conditions.itemExists(), conditions.taskHasEnded())),
      },
    },
    ledgerStamp('debit'),
    ...(task.creditsRefunded ? [ledgerStamp('refund')] : []),
  ];
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return 'removed';
    } catch (error) {
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
      if (reasons?.[0]?.Code === 'ConditionalCheckFailed') return 'missing';
      // A ledger entry the task names is not there: a record from before the ledger; remove the task alone.
      if (reasons?.some((reason) => reason.Code === 'ConditionalCheckFailed')) {
        items.splice(1);
        continue;
      }
      const retryable = reasons?.some((reason) => reason.Code === 'TransactionConflict') ?? false;
      if (!retryable || attempt >= REMOVE_ATTEMPTS) throw retryable ? busy(error) : error;
    }
  }
}

/** Deletes an upload's record; `false` when there was none (unknown, expired and removed, or another owner's). */
export async function removeUploadRecord(
  ctx: RetryingStoreContext,
  userId: string,
  uploadId: string,
): Promise<boolean> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new DeleteCommand({
          TableName: ctx.tableName,
          Key: { PK: `${USER}${userId}`, SK: `UPLOAD#${uploadId}` },
          ReturnValues: 'ALL_OLD',
        }),
      ),
    ctx.retry,
  );
  return out.Attributes !== undefined;
}

/** One page of the account's items whose sort key starts with `prefix`, with the cursor of the next. */
export async function accountItemsPage(
  ctx: RetryingStoreContext,
  input: { userId: string; prefix: string; cursor?: Record<string, unknown>; limit?: number },
): Promise<{ items: Record<string, unknown>[]; cursor?: Record<string, unknown> }> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          ...withKeyCondition(
            {},
            conditions.partitionIs(`${USER}${input.userId}`),
            conditions.sortKeyBeginsWith(input.prefix),
          ),
          ...(input.cursor ? { ExclusiveStartKey: input.cursor } : {}),
          Limit: input.limit ?? 100,
        }),
      ),
    ctx.retry,
  );
  return { items: out.Items ?? [], ...(out.LastEvaluatedKey ? { cursor: out.LastEvaluatedKey } : {}) };
}

/**
 * Records that an ended task's results were removed by its retention: `resultsExpiredAt`, and its
 * result keys gone (on condition that it is still there and ended). `false` when it is not.
 */
export async function markResultsExpired(ctx: RetryingStoreContext, task: TaskRecord, at: Date): Promise<boolean> {
  try {
    await withRetry(
      () =>
        ctx.doc.send(
          new UpdateCommand({
            TableName: ctx.tableName,
            Key: keys.task(task.userId, task.taskId),
            ...updateParams(
              update({ set: { resultsExpiredAt: at.toISOString() }, remove: ['resultKeys'] }),
              and(conditions.itemExists(), conditions.taskHasEnded()),
            ),
          }),
        ),
      ctx.retry,
    );
    return true;
  } catch (error) {
    lostCondition(error);
    return false;
  }
}
