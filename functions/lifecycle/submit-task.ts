/**
 * Submission: price, debit and record the task atomically, queued for the dispatcher. Nothing here
 * talks to the provider: a slow or failing upstream never slows a submit (README "Dispatching to the
 * provider").
 */
import { randomUUID } from 'node:crypto';
import type { Caller, SubmissionResponse, TaskType } from '../core/task';
import type { Logger } from '../observability/logger';
import { metrics } from '../observability/metrics';
import { acceptTask } from '../store/tasks';
import type { ProviderLifecycle } from './lifecycle';
import { type StoredProviderRequest, withoutTaskPrompt } from './send-to-provider';

export interface SubmitInput {
  caller: Caller;
  type: TaskType;
  /** The validated request body. */
  request: { model: string; prompt: string } & Record<string, unknown>;
  /** Credits to debit, from the catalog; the only figure clients ever see. */
  cost: number;
  providerRequest: StoredProviderRequest;
  /** Where to POST the signed event when the task ends (checked by the caller). */
  webhookUrl?: string;
  idempotency?: { key: string; requestHash: string };
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
 * Accepts the task (debit, task, ledger entry, queue entry, idempotency record: one transaction). The
 * task is queued (`status: 0`, `stage: queued`); the dispatcher sends it at the provider's pace.
 */
export async function submitTask(lc: ProviderLifecycle, input: SubmitInput, log: Logger): Promise<SubmitResult> {
  const accepted = await acceptTask(lc.store, {
    task: {
      userId: input.caller.userId,
      taskId: randomUUID(),
      type: input.type,
      model: input.request.model,
      prompt: input.request.prompt,
      // Only what a resend needs, and the prompt once: it is on the task already, so the stored provider
      // request leaves it out when it is the same text (a 20,000-character prompt stored twice doubled
      // the write units of every accept). createAtProvider puts it back. `outputs`: the number of results
      // paid for, so no provider answer stores more.
      request: {
        providerRequest: withoutTaskPrompt(input.providerRequest, input.request.prompt),
        outputs: paidOutputCount(input),
      },
      creditsUsed: input.cost,
      keyId: input.caller.keyId,
      webhookUrl: input.webhookUrl,
      now: lc.now(),
    },
    idempotency: input.idempotency,
  });
  const task = accepted.task;
  if (accepted.replayed) {
    log.info('Idempotent replay', { taskId: task.taskId });
    // The task's stored status, not a fixed 0: a submission the provider refused was answered with
    // status 2, and its replay must not claim the task is pending.
    return { response: { taskId: task.taskId, status: task.status, creditsUsed: task.creditsUsed }, replayed: true };
  }
  metrics.taskAccepted();
  log.info('Task accepted', { taskId: task.taskId, model: task.model, credits: task.creditsUsed });
  return { response: { taskId: task.taskId, status: task.status, creditsUsed: task.creditsUsed }, replayed: false };
}
