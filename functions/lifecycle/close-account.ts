/**
 * Closing an account (docs/design/accounts.md#closing-an-account), one implementation for every front
 * door (POST /api/account/close, and the operator CLI's `accounts close`, bin/admin/commands.ts):
 *
 * 1. the closure is recorded (sign-in refuses the account from then on) with its audit entry;
 * 2. every credential ends (`endCredentials`, auth/end-account-credentials.ts): after it, no accept
 *    can debit the account, so the tasks listed next are all the tasks there will be;
 * 3. each task still queued here is cancelled and refunded by the cancel's own path (cancel-task.ts:
 *    the refund and its ledger entry in one transaction, exactly once against a dispatcher's claim);
 * 4. each ended task is deleted as DELETE /api/ai/tasks/{id} deletes it (delete-data.ts: results,
 *    checked copies and inline images, then the task; its ledger entries stay, stamped with its model);
 * 5. each upload is deleted as DELETE /api/ai/uploads/{id} deletes it.
 *
 * A task already at the provider runs to its end (its charge stands, or a failure is refunded as usual);
 * it is counted in `tasksStillRunning`, and an entry due at once on the retention schedule
 * (store/retention.ts, `closed`) has the sweeper delete it whole, as step 4 does, once it has ended
 * (lifecycle/expire-results.ts); closing again once it has ended removes it too. The balance, its
 * shards and the ledger stay (accounting); so do the audit log and the closure record.
 */
import { TaskNotFoundError, UploadNotFoundError } from '../core/errors';
import { isCancellable, type TaskRecord, TaskStatus } from '../core/task';
import type { Logger } from '../observability/logger';
import { recordClosure } from '../store/account-closure';
import { accountItemsAfter } from '../store/account-export';
import { getBalance } from '../store/accounts';
import type { AuditActor } from '../store/audit';
import { scheduleRetention } from '../store/retention';
import { cancelQueuedTask } from './cancel-task';
import { deleteEndedTask, deleteUpload, type RemovalContext } from './delete-data';

/** What closing needs: deleting's context, reading an upload's version, and ending the credentials. */
export interface ClosingContext extends RemovalContext {
  versionOf: (key: string) => Promise<string | undefined>;
  endCredentials: (input: { userId: string; now: Date }) => Promise<{ keysRevoked: number; sessionsEnded: number }>;
}

/** What a closure did (this run; an earlier run's work is not counted again). */
export interface ClosureReport {
  userId: string;
  closedAt: string;
  /** False when the account was closed before (this run finished what was left). */
  firstClosure: boolean;
  keysRevoked: number;
  sessionsEnded: number;
  tasksCancelled: number;
  creditsRefunded: number;
  tasksDeleted: number;
  /** Tasks at the provider: they end as usual, then the sweeper deletes them (closing again would too). */
  tasksStillRunning: number;
  uploadsDeleted: number;
  /** The balance kept after the refunds (docs/design/accounts.md#closing-an-account). */
  balance: number;
}

/** Items per Query while walking the account's tasks and uploads. */
const PAGE = 100;

/** Every item of the account under `prefix`, a page at a time (the walk survives the deletes it makes). */
async function* accountItems(ctx: ClosingContext, userId: string, prefix: string) {
  let afterSortKey: string | undefined;
  for (;;) {
    const read = await accountItemsAfter(ctx.store, {
      userId,
      prefix,
      limit: PAGE,
      ...(afterSortKey ? { afterSortKey } : {}),
    });
    for (const item of read.items) yield item;
    if (!read.more || read.items.length === 0) return;
    afterSortKey = String(read.items.at(-1)?.SK);
  }
}

/**
 * Tasks closed side by side: each cancel refunds onto a balance shard of its own choosing (32), so a few
 * at once rarely meet, and a closing account with many tasks is not one round trip after another
 * (after a close racing 40 submits, 16 at once cancelled and deleted its ~100 tasks in 4.1 s where 8
 * took 5 s, on the conflict layer of a loaded 2-core machine).
 */
const TASKS_AT_ONCE = 16;

/** What closing did to one task. */
interface TaskOutcome {
  /** Credits given back by its cancel (absent: not cancelled here). */
  refunded?: number;
  deleted: boolean;
  /** At the provider: it ends as usual. */
  running: boolean;
}

/**
 * Cancels the task when still queued, then deletes it when ended: from the record the listing read (a
 * consistent read made after the credentials ended), by the cancel's and the delete's own paths, so
 * each task costs its refund, its queue entry and its removal, not two more reads of it.
 */
async function closeTask(ctx: ClosingContext, listed: TaskRecord, log: Logger): Promise<TaskOutcome> {
  let task: TaskRecord | undefined = listed;
  let refunded: number | undefined;
  if (task.status === TaskStatus.PENDING && isCancellable(task)) {
    const cancelled = await cancelQueuedTask({ store: ctx.store, now: ctx.now }, task, log);
    if (cancelled?.refunded) refunded = cancelled.task.creditsUsed;
    // Otherwise a dispatcher claimed it first (now at the provider), or it ended or went meanwhile.
    task = cancelled?.task;
  }
  const outcome = { ...(refunded === undefined ? {} : { refunded }), deleted: false, running: false };
  if (!task) return outcome;
  if (task.status === TaskStatus.PENDING) {
    // At the provider: the sweeper deletes it once it has ended (its charge or refund settled first).
    await scheduleRetention(ctx.store, {
      userId: task.userId,
      taskId: task.taskId,
      dueAt: ctx.now().getTime(),
      closed: true,
    });
    return { ...outcome, running: true };
  }
  try {
    await deleteEndedTask(ctx, task, log);
    return { ...outcome, deleted: true };
  } catch (error) {
    // Deleted meanwhile (a DELETE of the owner's in flight): nothing to remove here.
    if (error instanceof TaskNotFoundError) return outcome;
    throw error;
  }
}

/** Closes the account (see the module comment). Idempotent: run again, it does what is left. */
export async function closeAccount(
  ctx: ClosingContext,
  input: { userId: string; actor: AuditActor; sourceIp?: string },
  log: Logger,
): Promise<ClosureReport> {
  const now = ctx.now();
  const { userId } = input;
  const closure = await recordClosure(ctx.store, {
    userId,
    now,
    audit: { action: 'account.close', actor: input.actor, ...(input.sourceIp ? { sourceIp: input.sourceIp } : {}) },
  });
  const ended = await ctx.endCredentials({ userId, now });
  const report: ClosureReport = {
    userId,
    closedAt: closure.closedAt,
    firstClosure: closure.first,
    ...ended,
    tasksCancelled: 0,
    creditsRefunded: 0,
    tasksDeleted: 0,
    tasksStillRunning: 0,
    uploadsDeleted: 0,
    balance: 0,
  };
  const tasks: TaskRecord[] = [];
  const settle = async () => {
    const outcomes = await Promise.all(tasks.splice(0).map((task) => closeTask(ctx, task, log)));
    for (const outcome of outcomes) {
      if (outcome.refunded !== undefined) {
        report.tasksCancelled++;
        report.creditsRefunded += outcome.refunded;
      }
      if (outcome.deleted) report.tasksDeleted++;
      if (outcome.running) report.tasksStillRunning++;
    }
  };
  for await (const item of accountItems(ctx, userId, 'TASK#')) {
    tasks.push(item as unknown as TaskRecord);
    if (tasks.length >= TASKS_AT_ONCE) await settle();
  }
  await settle();
  for await (const item of accountItems(ctx, userId, 'UPLOAD#')) {
    try {
      await deleteUpload(ctx, { userId, uploadId: String(item.uploadId) }, log);
      report.uploadsDeleted++;
    } catch (error) {
      // Expired (its record waits for DynamoDB's TTL, its file for the bucket's expiry) or deleted meanwhile.
      if (!(error instanceof UploadNotFoundError)) throw error;
    }
  }
  report.balance = await getBalance(ctx.store, userId);
  log.info('Account closed', { ...report });
  return report;
}
