/**
 * The Task resource as its owner reads it: fresh result URLs while the results exist, none after the
 * storage expired them; a queued task with the number of the account's tasks queued before it.
 */
import { type LifecycleConfig, resultsExpireAt, toTaskResource } from '../core/lifecycle';
import { retentionEndsAt } from '../core/retention';
import { type TaskRecord, type TaskResource, TaskStatus } from '../core/task';
import { queuedAhead } from '../store/dispatch';
import type { Lifecycle } from './lifecycle';

/** What presenting a task needs: no provider (a submit that waited presents the task it accepted). */
export type PresentContext = Pick<Lifecycle, 'store' | 'media' | 'now'> & {
  config: Pick<LifecycleConfig, 'resultRetentionDays'>;
};

/**
 * Builds the resource; signed URLs never outlive the results they point at.
 * @param options.countAhead adds `queuedAhead` to a queued task (one counting Query on the account's
 *   queue entries): `GET /api/ai/tasks/{id}` only, never a listing or a webhook
 */
export async function presentTask(
  lc: PresentContext,
  task: TaskRecord,
  options: { countAhead?: boolean } = {},
): Promise<TaskResource> {
  if (task.status === TaskStatus.PENDING) {
    const resource = toTaskResource(task);
    if (options.countAhead && resource.stage === 'queued') {
      resource.queuedAhead = await queuedAhead(lc.store, task);
    }
    return resource;
  }
  if (task.status !== TaskStatus.COMPLETED) return toTaskResource(task);
  // The earlier of the bucket's expiry and the task's own retention (core/retention.ts).
  const bucketExpiry = resultsExpireAt(task, lc.config.resultRetentionDays);
  const retentionEnd = retentionEndsAt(task);
  const expiresAt =
    retentionEnd !== undefined && (bucketExpiry === undefined || retentionEnd < bucketExpiry.getTime())
      ? new Date(retentionEnd)
      : bucketExpiry;
  const live = expiresAt === undefined || lc.now() < expiresAt;
  const keys = live ? (task.resultKeys ?? []) : [];
  const urls = await Promise.all(keys.map((key) => lc.media.urlFor(key, expiresAt)));
  const resource = toTaskResource(task, urls, expiresAt);
  // Its own retention has ended, the sweeper may not have removed the files yet: it says so already.
  if (retentionEnd !== undefined && !live && !resource.resultsExpiredAt) {
    delete resource.resultsExpireAt;
    resource.resultsExpiredAt = new Date(retentionEnd).toISOString();
  }
  return resource;
}
