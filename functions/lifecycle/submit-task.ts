/**
 * Submission: price, debit and record the task atomically, queued for the dispatcher. Nothing here
 * talks to the provider: a slow or failing upstream never slows a submit (docs/design/dispatching.md).
 */
import { randomUUID } from 'node:crypto';
import { QueueFullError } from '../core/errors';
import { retentionSeconds } from '../core/retention';
import type { Caller, SubmissionResponse, TaskRecord, TaskType } from '../core/task';
import { acceptTask } from '../money/accept';
import type { Logger } from '../observability/logger';
import { metrics } from '../observability/metrics';
import type { StoreContext } from '../store/client';
import { countQueued } from '../store/dispatch';
import { scheduleRetention } from '../store/retention';
import { findIdempotentReplay } from '../store/tasks';
import { storedRequestBody } from './send-to-provider';

export interface SubmitInput {
  caller: Caller;
  type: TaskType;
  /** The validated request body. */
  request: { model: string; prompt: string } & Record<string, unknown>;
  /** Credits to debit, from the catalog; the only figure clients ever see. */
  cost: number;
  /** Where to POST the signed event when the task ends (checked by the caller). */
  webhookUrl?: string;
  idempotency?: { key: string; requestHash: string };
  /** The most tasks the account may have queued (`MAX_QUEUED_TASKS_PER_ACCOUNT`); past it, `QueueFullError`. */
  maxQueued: number;
  /** The versions of its uploads the submit checked and kept (lifecycle/uploads.ts), by upload id. */
  uploadVersions?: Record<string, string>;
  /** The uploads made of the request's inline images: the task's own, deleted with it (delete-data.ts). */
  inlineUploads?: string[];
}

export interface SubmitResult {
  response: SubmissionResponse;
  /** The Idempotency-Key was seen before: this is the original task, nothing was debited now. */
  replayed: boolean;
}

function paidOutputCount(input: SubmitInput): number {
  const requested = input.request.numOutputs;
  return input.type === 'image' && typeof requested === 'number' && Number.isInteger(requested) && requested >= 1
    ? requested
    : 1;
}

/**
 * `Retry-After` of a full queue. The submit function does not know the upstream's pace nor how many
 * accounts share it, so no exact estimate is at hand; the account's queue shrinks by one each time its
 * turn comes (accounts take turns one send each, Kie's 20 per 10 s is a send every 0.5 s), which with a
 * few busy accounts is a matter of seconds. 10 s lets some room open up without inviting a retry loop.
 */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 10;

/**
 * What a submit needs: the table and the clock. Not the provider: the dispatcher sends (so the submit
 * functions hold no provider key, callback secret or HTTP client).
 */
export interface SubmitContext {
  store: StoreContext;
  now: () => Date;
}

function answer(task: TaskRecord, replayed: boolean): SubmitResult {
  // The task's stored status, not a fixed 0: a replay of a task that has since ended says so.
  return { response: { taskId: task.taskId, status: task.status, creditsUsed: task.creditsUsed }, replayed };
}

/**
 * Accepts the task (debit, task, ledger entry, queue entry, idempotency record: one transaction). The
 * task is queued (`status: 0`, `stage: queued`); the dispatcher sends it at the provider's pace.
 */
export async function submitTask(lc: SubmitContext, input: SubmitInput, log: Logger): Promise<SubmitResult> {
  // The queue bound, before anything is written: a count of the account's queue entries, outside the
  // accept transaction, so a burst of accepts never conflicts on a per-account item. A soft bound: submits
  // counting at the same moment can together pass it by their number (store/dispatch.ts `countQueued`).
  const queued = await countQueued(lc.store, { userId: input.caller.userId, limit: input.maxQueued });
  if (queued >= input.maxQueued) {
    // A replay of a task accepted earlier still answers that task: it asks for nothing new.
    const original = input.idempotency
      ? await findIdempotentReplay(lc.store, {
          userId: input.caller.userId,
          idempotency: input.idempotency,
          now: lc.now(),
        })
      : undefined;
    if (original) {
      log.info('Idempotent replay', { taskId: original.taskId });
      return answer(original, true);
    }
    log.info('Queue full', { queued, limit: input.maxQueued });
    throw new QueueFullError(input.maxQueued, QUEUE_FULL_RETRY_AFTER_SECONDS);
  }
  const taskId = randomUUID();
  const now = lc.now();
  const retention =
    typeof input.request.resultRetention === 'string' ? retentionSeconds(input.request.resultRetention) : undefined;
  // Before the accept, so an accepted task always has its removal scheduled (store/retention.ts).
  if (retention !== undefined) {
    await scheduleRetention(lc.store, { userId: input.caller.userId, taskId, dueAt: now.getTime() + retention * 1000 });
  }
  const accepted = await acceptTask(lc.store, {
    task: {
      userId: input.caller.userId,
      taskId,
      type: input.type,
      model: input.request.model,
      prompt: input.request.prompt,
      // The validated request, each field once (the prompt and model are on the task): the dispatcher
      // builds the provider request from it at the send (send-to-provider.ts). `outputs`: the number of
      // results paid for, so no provider answer stores more.
      request: {
        body: storedRequestBody(input.request),
        outputs: paidOutputCount(input),
        // The reference images as the caller gave them, for the Task resource (the provider request
        // holds them under the provider's own field name).
        ...(Array.isArray(input.request.inputImageUrls) ? { inputImageUrls: input.request.inputImageUrls } : {}),
        // Which version of each upload the provider reads: the one checked (send-to-provider.ts).
        ...(input.uploadVersions && Object.keys(input.uploadVersions).length > 0
          ? { uploadVersions: input.uploadVersions }
          : {}),
        ...(input.inlineUploads?.length ? { inlineUploads: input.inlineUploads } : {}),
        ...(retention === undefined ? {} : { resultRetentionSeconds: retention }),
      },
      creditsUsed: input.cost,
      keyId: input.caller.keyId,
      spendLimit: input.caller.spendLimit,
      spendLimitVersion: input.caller.spendLimitVersion,
      webhookUrl: input.webhookUrl,
      now,
    },
    idempotency: input.idempotency,
  });
  const task = accepted.task;
  if (accepted.replayed) {
    log.info('Idempotent replay', { taskId: task.taskId });
    return answer(task, true);
  }
  metrics.taskAccepted();
  log.info('Task accepted', { taskId: task.taskId, model: task.model, credits: task.creditsUsed });
  return answer(task, false);
}
