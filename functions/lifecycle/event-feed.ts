/**
 * What goes into the account's event feed (store/event-feed.ts) and when. A task's event is recorded by
 * the webhook worker when the table's stream shows the task ending (the record that also opens its
 * delivery), every ended task of a batch of one account in one transaction, in the order the tasks
 * ended; an account event by the dispatcher's look that sees its crossing (lifecycle/account-events.ts).
 * Both whether or not the account has an endpoint. The event's feed id is the `webhook-id` of its
 * delivery, and its feed number orders the deliveries that wait past the bound.
 */
import type { TaskRecord } from '../core/task';
import { type TaskEventType, WEBHOOK_CLAIM_SECONDS, webhookEventOf } from '../core/webhooks';
import type { RetryingStoreContext } from '../store/errors';
import { type FeedEventInput, type RecordedEvent, type RecordingStats, recordFeedEvents } from '../store/event-feed';

/** What a task's feed event carries: the task as a listing shows it (GET the task for its results). */
export type TaskEventSummary = Pick<
  TaskRecord,
  'taskId' | 'type' | 'status' | 'model' | 'creditsUsed' | 'creditsRefunded' | 'createdAt' | 'updatedAt'
> & { errorCode?: string };

/** An ended task, as much of it as its feed event needs. */
export type EndedTask = TaskEventSummary & { userId: string };

/** The feed event of an ended task, or undefined while it is pending. */
export function taskFeedEvent(task: EndedTask, openBy?: Date): (FeedEventInput & { type: TaskEventType }) | undefined {
  const type = webhookEventOf(task.status);
  if (!type) return undefined;
  const data: TaskEventSummary = {
    taskId: task.taskId,
    type: task.type,
    status: task.status,
    model: task.model,
    creditsUsed: task.creditsUsed,
    creditsRefunded: task.creditsRefunded,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
    ...(task.errorCode === undefined ? {} : { errorCode: task.errorCode }),
  };
  return {
    sourceId: task.taskId,
    type,
    timestamp: task.updatedAt,
    data,
    ...(openBy === undefined ? {} : { openBy: openBy.toISOString() }),
  };
}

/** The key of a task in the map `recordTaskEvents` answers. */
export function taskEventKey(userId: string, taskId: string): string {
  return `${userId}#${taskId}`;
}

/**
 * How long after an event is recorded its deliveries must be open: past it, the sweeper opens them
 * (the worker's record of the ending was lost). As long as a lost claim waits.
 */
export const OPEN_DELIVERIES_WITHIN_SECONDS = WEBHOOK_CLAIM_SECONDS;

/**
 * Records the feed events of `tasks` (ended), each once: per account one transaction per 40 events,
 * in the order they ended (then by id). Accounts side by side. `deliveries`: webhooks are on, so each
 * event waits in the due index until its deliveries are opened (`openDelivery`), and the sweeper opens
 * those a lost record left.
 * @returns each task's event id and number, by `taskEventKey`
 */
export async function recordTaskEvents(
  store: RetryingStoreContext,
  tasks: readonly EndedTask[],
  now: Date,
  stats?: RecordingStats,
  deliveries = true,
): Promise<Map<string, RecordedEvent>> {
  const openBy = deliveries ? new Date(now.getTime() + OPEN_DELIVERIES_WITHIN_SECONDS * 1000) : undefined;
  const byAccount = new Map<string, EndedTask[]>();
  for (const task of tasks) byAccount.set(task.userId, [...(byAccount.get(task.userId) ?? []), task]);
  const out = new Map<string, RecordedEvent>();
  await Promise.all(
    [...byAccount].map(async ([userId, ended]) => {
      const inputs = [...ended]
        .sort((a, b) => a.updatedAt.localeCompare(b.updatedAt) || a.taskId.localeCompare(b.taskId))
        .map((task) => taskFeedEvent(task, openBy))
        .filter((input) => input !== undefined);
      const recorded = await recordFeedEvents(store, userId, inputs, now, stats);
      for (const [taskId, event] of recorded) out.set(taskEventKey(userId, taskId), event);
    }),
  );
  return out;
}

/** The order of a delivery among its account's queued ones: its event's feed number, fixed width. */
export function queueOrderOf(event: RecordedEvent): string {
  return String(event.seq).padStart(12, '0');
}
