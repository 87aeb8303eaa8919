/**
 * Deleting what an owner asks to delete (docs/design/accounts.md#deleting-data): an ended task with
 * its results and its references in storage, and an upload. Storage first, then the table: a removal
 * that fails half way leaves the task readable (its URLs then fail to download) and the same DELETE
 * finishes it, while the other order could leave files nobody can name any more.
 */
import { TaskNotFoundError, TaskStateError, UploadNotFoundError } from '../core/errors';
import { paidOutputs, type TaskRecord, TaskStatus } from '../core/task';
import { checkedUploadKey, uploadKey } from '../core/uploads';
import { MEDIA_TYPES } from '../media/media-types';
import { mediaKey } from '../media/port';
import type { ObjectRemover } from '../media/remove-objects';
import type { Logger } from '../observability/logger';
import type { StoreContext } from '../store/client';
import { removeEndedTask, removeUploadRecord } from '../store/task-removal';
import { getTask } from '../store/tasks';
import { getUpload } from '../store/uploads';

/** The 409 of a DELETE on a task that has not ended. */
export const TASK_STILL_PENDING =
  'Task has not ended: cancel it first (POST /api/ai/tasks/{id}/cancel), or wait for it to end';

/** What deleting needs: the table, the two storages and the clock. */
export interface RemovalContext {
  store: StoreContext;
  /** Result files (the media bucket's `results/`, MEDIA_DIR locally). */
  results: ObjectRemover;
  /** Uploads (the media bucket's `uploads/`, the local S3 stand-in). */
  uploads: ObjectRemover;
  now: () => Date;
}

/** The storage a task holds: its result files, and the upload objects and records that are its own. */
export interface TaskObjects {
  results: string[];
  uploads: string[];
  /** Inline images of its request: uploads made for it alone, record and file. */
  inlineUploadIds: string[];
}

/**
 * Every object an ended task may hold. A completed task names its results; a task whose results were
 * being copied when it failed (STORAGE_ERROR) may hold some of them under any allowed extension, so each
 * possible key goes (a DeleteObject of a missing key is harmless). The checked copy of each upload
 * version it was sent (lifecycle/uploads.ts); its inline images.
 */
export function taskObjects(task: TaskRecord): TaskObjects {
  const results = [...(task.resultKeys ?? [])];
  if (task.resultsToCopy !== undefined && task.status !== TaskStatus.COMPLETED) {
    const extensions = Object.values(MEDIA_TYPES[task.type]);
    for (let index = 0; index < paidOutputs(task); index++) {
      for (const extension of extensions) results.push(`${mediaKey(task.userId, task.taskId, index)}.${extension}`);
    }
  }
  const versions = (task.request.uploadVersions ?? {}) as Record<string, unknown>;
  const inline = Array.isArray(task.request.inlineUploads)
    ? task.request.inlineUploads.filter((id): id is string => typeof id === 'string')
    : [];
  const uploads = Object.entries(versions)
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
    .map(([uploadId, etag]) => checkedUploadKey(task.userId, uploadId, etag));
  for (const uploadId of inline) uploads.push(uploadKey(task.userId, uploadId));
  return { results, uploads, inlineUploadIds: inline };
}

/**
 * Removes a task's objects and its inline uploads' records. The checked copy of an upload the caller
 * still has (not expired, not deleted) stays: another task may have been checked against the same
 * version and still need it; it goes with the upload (DELETE /api/ai/uploads/{id}) or the bucket's
 * expiry of uploads.
 */
export async function removeTaskObjects(ctx: RemovalContext, task: TaskRecord): Promise<void> {
  const objects = taskObjects(task);
  const live = new Set<string>();
  const versions = (task.request.uploadVersions ?? {}) as Record<string, unknown>;
  await Promise.all(
    Object.keys(versions)
      .filter((uploadId) => !objects.inlineUploadIds.includes(uploadId))
      .map(async (uploadId) => {
        if (await getUpload(ctx.store, task.userId, uploadId, ctx.now())) live.add(uploadId);
      }),
  );
  const uploads = objects.uploads.filter(
    (key) => ![...live].some((uploadId) => key.startsWith(`${uploadKey(task.userId, uploadId)}.checked-`)),
  );
  await Promise.all([ctx.results.remove(objects.results), ctx.uploads.remove(uploads)]);
  await Promise.all(objects.inlineUploadIds.map((uploadId) => removeUploadRecord(ctx.store, task.userId, uploadId)));
}

/**
 * DELETE /api/ai/tasks/{id}: removes an ended task of the caller's, its files and references; the
 * ledger keeps its entries. Deleting again is a 404, as for any id the caller does not own.
 * @throws TaskNotFoundError (not the caller's, or deleted), TaskStateError (still pending)
 */
export async function deleteTask(
  ctx: RemovalContext,
  ref: { userId: string; taskId: string },
  log: Logger,
): Promise<void> {
  // Keyed by the caller's own user id: someone else's task is simply not there.
  const task = await getTask(ctx.store, ref.userId, ref.taskId);
  if (!task) throw new TaskNotFoundError();
  await deleteEndedTask(ctx, task, log);
}

/**
 * The delete of a task already read (`deleteTask` reads it; closing an account has it from its listing
 * or its cancel): an ended task's record no longer changes, so the record read is what is removed.
 * @throws TaskNotFoundError (deleted meanwhile), TaskStateError (still pending)
 */
export async function deleteEndedTask(ctx: RemovalContext, task: TaskRecord, log: Logger): Promise<void> {
  if (task.status === TaskStatus.PENDING) throw new TaskStateError(TASK_STILL_PENDING);
  await removeTaskObjects(ctx, task);
  const outcome = await removeEndedTask(ctx.store, task);
  // Another DELETE of the same task won the race: its files are gone either way.
  if (outcome === 'missing') throw new TaskNotFoundError();
  log.info('Task deleted', { taskId: task.taskId });
}

/**
 * DELETE /api/ai/uploads/{id}: removes the caller's upload (file and record) and the checked copy of its
 * current version. A task already sent has given its provider a signed URL, which then fails.
 * @throws UploadNotFoundError (unknown, expired, another owner's, or deleted)
 */
export async function deleteUpload(
  ctx: RemovalContext & { versionOf: (key: string) => Promise<string | undefined> },
  ref: { userId: string; uploadId: string },
  log: Logger,
): Promise<void> {
  // Upload ids are UUIDs; anything else names no upload (and never reaches a key).
  if (!/^[0-9a-f-]{36}$/.test(ref.uploadId)) throw new UploadNotFoundError();
  const record = await getUpload(ctx.store, ref.userId, ref.uploadId, ctx.now());
  if (!record) throw new UploadNotFoundError();
  const etag = await ctx.versionOf(record.key);
  const keys = [record.key, ...(etag ? [checkedUploadKey(ref.userId, ref.uploadId, etag)] : [])];
  await ctx.uploads.remove(keys);
  if (!(await removeUploadRecord(ctx.store, ref.userId, ref.uploadId))) throw new UploadNotFoundError();
  log.info('Upload deleted', { uploadId: ref.uploadId });
}
