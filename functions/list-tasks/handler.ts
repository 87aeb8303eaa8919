/**
 * GET /api/ai/tasks?limit=&cursor=&status=&type=: the caller's own tasks, newest first, one Query per
 * page. A listing shows each task as stored (a summary); GET /api/ai/tasks/{id} reads and refreshes one.
 * A pending task's `stage` comes from the queue: one more Query, over the account's queue entries in the
 * time range of the page's pending tasks (the index does not hold the stage); a task with an entry waits
 * here (`queued`), one without is at the provider (`running`).
 */
import { TaskStatus, type TaskType } from '../core/task';
import { apiHandler } from '../http/api-handler';
import { parsePageQuery } from '../http/page-query';
import { queuedTaskIds } from '../store/dispatch';
import { storeFromEnv } from '../store/from-env';
import { decodeTaskCursor, listTasks } from '../store/task-list';

const STATUSES: Readonly<Record<string, TaskStatus>> = {
  '0': TaskStatus.PENDING,
  '1': TaskStatus.COMPLETED,
  '2': TaskStatus.FAILED,
};
const TYPES: readonly TaskType[] = ['image', 'video'];

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const fieldErrors: Record<string, string[]> = {};
  const status = req.query.status === undefined ? undefined : STATUSES[req.query.status];
  if (req.query.status !== undefined && status === undefined) fieldErrors.status = ['Must be 0, 1 or 2'];
  const type = TYPES.find((t) => t === req.query.type);
  if (req.query.type !== undefined && type === undefined) fieldErrors.type = ['Must be image or video'];
  const page = parsePageQuery(req.query, decodeTaskCursor, fieldErrors);
  // Keyed by the caller's own user id: nobody else's tasks are in the partition read.
  const { items, next } = await listTasks(storeFromEnv(), req.caller.userId, {
    ...page,
    ...(status === undefined ? {} : { status }),
    ...(type === undefined ? {} : { type }),
  });
  const pending = items.filter((task) => task.status === TaskStatus.PENDING);
  if (pending.length > 0) {
    const times = pending.map((task) => task.createdAt).sort();
    const queued = await queuedTaskIds(storeFromEnv(), {
      userId: req.caller.userId,
      from: times[0] ?? '',
      to: times[times.length - 1] ?? '',
    });
    for (const task of pending) task.stage = queued.has(task.taskId) ? 'queued' : 'running';
  }
  return { statusCode: 200, body: { tasks: items, next: next ?? null } };
});
