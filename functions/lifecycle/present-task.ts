/**
 * The Task resource as its owner reads it: fresh result URLs while the results exist, none after the
 * storage expired them.
 */
import { resultsExpireAt, toTaskResource } from '../core/lifecycle';
import { type TaskRecord, type TaskResource, TaskStatus } from '../core/task';
import type { Lifecycle } from './lifecycle';

/** Builds the resource; signed URLs never outlive the results they point at. */
export async function presentTask(lc: Lifecycle, task: TaskRecord): Promise<TaskResource> {
  if (task.status !== TaskStatus.COMPLETED) return toTaskResource(task);
  const expiresAt = resultsExpireAt(task, lc.config.resultRetentionDays);
  const live = expiresAt === undefined || lc.now() < expiresAt;
  const keys = live ? (task.resultKeys ?? []) : [];
  const urls = await Promise.all(keys.map((key) => lc.media.urlFor(key, expiresAt)));
  return toTaskResource(task, urls, expiresAt);
}
