/**
 * The dispatcher's moves of a task's `stage` (docs/design/dispatching.md): a queued task is claimed for
 * sending by exactly one caller, or cancelled instead (the `stage` condition), and put back when its send
 * did not reach the provider. The capacity item is in `dispatch-capacity.ts`, the queue's reads in
 * `dispatch-queue.ts`; both are re-exported here for the callers that use all three.
 */
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { type TaskRecord, TaskStatus } from '../core/task';
import * as conditions from './condition-fragments';
import { and, attr, type Expr, update, updateParams } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import * as keys from './task-keys';
import { conditionalUpdate } from './tasks';

export * from './dispatch-capacity';
export * from './dispatch-queue';

const STAGE = { [attr('stage')]: 'stage' };
const stageIs = (stage: string, placeholder: string): Expr => ({
  expression: `${attr('stage')} = ${placeholder}`,
  names: STAGE,
  values: { [placeholder]: stage },
});

/** One conditional update of a task returning the new item; undefined when the condition failed. */
function updateTask(
  ctx: RetryingStoreContext,
  ref: { userId: string; taskId: string },
  params: ReturnType<typeof updateParams>,
): Promise<TaskRecord | undefined> {
  return conditionalUpdate(ctx, ref.userId, ref.taskId, params);
}

/**
 * Claims a queued task for sending (`queued` -> `sending`): exactly one caller wins, and a cancel (which
 * needs `queued` too) can no longer win. Undefined when the task is not pending and queued.
 */
export function claimSend(
  ctx: RetryingStoreContext,
  input: {
    userId: string;
    taskId: string;
    now: number;
    inFlightSlot?: boolean;
    excludeModels?: readonly string[];
    /** The upstream taking it (recorded on the task: its callbacks and polls go there). */
    upstream?: string;
    /** Only a task without `providerInput` (an upstream of another profile than the one it was checked by). */
    withoutProviderInput?: boolean;
  },
): Promise<TaskRecord | undefined> {
  const excluded = input.excludeModels ?? [];
  // The models in backoff: a queue entry written before entries kept the model is checked here.
  const notExcluded: Expr | undefined =
    excluded.length === 0
      ? undefined
      : {
          expression: `NOT (${attr('model')} IN (${excluded.map((_, index) => `:claimModel${index}`).join(', ')}))`,
          names: { [attr('model')]: 'model' },
          values: Object.fromEntries(excluded.map((model, index) => [`:claimModel${index}`, model])),
        };
  const pending = and(conditions.taskIsPending(), stageIs('queued', ':queuedStage'));
  const queued = input.withoutProviderInput
    ? and(pending, {
        expression: `attribute_not_exists(${attr('request')}.${attr('body')}.${attr('providerInput')})`,
        names: { [attr('request')]: 'request', [attr('body')]: 'body', [attr('providerInput')]: 'providerInput' },
        values: {},
      })
    : pending;
  return updateTask(
    ctx,
    input,
    updateParams(
      update({
        set: {
          stage: 'sending',
          sendClaimedAt: input.now,
          ...(input.inFlightSlot ? { inFlightSlot: true } : {}),
          ...(input.upstream === undefined ? {} : { upstream: input.upstream }),
        },
      }),
      notExcluded ? and(queued, notExcluded) : queued,
    ),
  );
}

/**
 * Puts a task whose send did not reach the provider back in the queue (`sending` -> `queued`), in its
 * place; `failed` counts the attempt as a provider failure (`sendFailures`), `refused` as a refusal of
 * its model (`sendRefusals`), and a refusal for the service's rate (429) counts as neither.
 */
export function releaseSend(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; failed: boolean; refused?: boolean },
): Promise<TaskRecord | undefined> {
  const add: Record<string, number> | undefined = input.failed
    ? { sendFailures: 1 }
    : input.refused
      ? { sendRefusals: 1 }
      : undefined;
  return updateTask(
    ctx,
    input,
    updateParams(
      update({
        set: { stage: 'queued' },
        remove: ['sendClaimedAt'],
        ...(add ? { add } : {}),
      }),
      and(conditions.taskIsPending(), stageIs('sending', ':sendingStage'), conditions.providerTaskNotRecorded()),
    ),
  );
}

/**
 * Marks a task whose create's outcome is unknown (`sending` -> `unknown`): the request went out and its
 * answer was lost (a timeout, a dropped connection, a store error after the create, or, with
 * `claimedBefore`, a send whose dispatcher was lost past its lease). It is never put back in the queue:
 * it waits for the upstream's callback, up to its limit (docs/design/dispatching.md). Undefined when the
 * task is no longer pending and being sent without a provider id (or, with `claimedBefore`, was claimed
 * since then).
 */
export function markOutcomeUnknown(
  ctx: RetryingStoreContext,
  input: { userId: string; taskId: string; now: number; claimedBefore?: number },
): Promise<TaskRecord | undefined> {
  const sending = and(
    conditions.taskIsPending(),
    stageIs('sending', ':sendingStage'),
    conditions.providerTaskNotRecorded(),
  );
  return updateTask(
    ctx,
    input,
    updateParams(
      update({ set: { stage: 'unknown', unknownOutcomeSince: input.now }, remove: ['sendClaimedAt'] }),
      input.claimedBefore === undefined
        ? sending
        : and(sending, {
            expression: `${attr('sendClaimedAt')} < :claimedBefore`,
            names: { [attr('sendClaimedAt')]: 'sendClaimedAt' },
            values: { ':claimedBefore': input.claimedBefore },
          }),
    ),
  );
}

/**
 * Removes a task's queue entry: after the send reached the provider, or once the task ended while still
 * queued (failTask, the dispatcher's refusals, a cancel). Idempotent: nothing happens when it is gone.
 */
export async function deleteQueueEntry(
  ctx: RetryingStoreContext,
  input: { userId: string; createdAt: string; taskId: string },
): Promise<void> {
  await withRetry(
    () =>
      ctx.doc.send(
        new DeleteCommand({
          TableName: ctx.tableName,
          Key: keys.queueEntry(input.userId, input.createdAt, input.taskId),
        }),
      ),
    ctx.retry,
  );
}

/** Whether a task may still be sent: pending, without a provider id, queued or being sent. */
export function awaitsSend(task: TaskRecord): boolean {
  return (
    task.status === TaskStatus.PENDING &&
    task.providerTaskId === undefined &&
    (task.stage === 'queued' || task.stage === 'sending')
  );
}
