/**
 * A user's tasks, newest first, one Query per page on the task-listing index (`GSI2`). The index holds
 * a summary of each task (see `TABLE.taskIndex.projected`); the whole task is read by id.
 */
import type { PublicStage } from '../core/task';
import { TaskStatus, type TaskType } from '../core/task';
import type { RetryingStoreContext } from './errors';
import { decodeCursor, type Listing, type Page, queryPage } from './pages';
import { TABLE } from './table';
import * as keys from './task-keys';

/** What a listing shows of a task. */
export interface TaskSummary {
  taskId: string;
  type: TaskType;
  status: TaskStatus;
  model: string;
  creditsUsed: number;
  creditsRefunded: boolean;
  createdAt: string;
  updatedAt: string;
  /** PENDING only: `queued` while it waits here, `running` once the provider has it (set by the listing's reader). */
  stage?: PublicStage;
  errorCode?: string;
}

/** Listing sort keys: `<ISO time>#<task id>`. */
const TASK_SORT_KEY = /^\d{4}-\d{2}-\d{2}T[\d:.]+Z#[\x21-\x7e]{1,256}$/;

/** The sort key in a task-listing cursor, or undefined when it is not one. */
export function decodeTaskCursor(cursor: string): string | undefined {
  return decodeCursor(cursor, TASK_SORT_KEY);
}

function listing(userId: string): Listing {
  const { partitionKey, sortKey } = TABLE.taskIndex;
  return {
    indexName: TABLE.taskIndex.name,
    partitionKeyName: partitionKey,
    sortKeyName: sortKey,
    partitionKey: keys.taskListing(userId, '', '').GSI2PK,
    sortKeyPrefix: '',
    tableKeyOf: (listingKey) => {
      const { PK, SK } = keys.task(userId, listingKey.slice(listingKey.indexOf('#') + 1));
      return { PK, SK };
    },
  };
}

function toSummary(item: Record<string, unknown>): TaskSummary {
  const summary: TaskSummary = {
    taskId: String(item.taskId),
    type: item.type as TaskType,
    status: Number(item.status) as TaskStatus,
    model: String(item.model),
    creditsUsed: Number(item.creditsUsed),
    creditsRefunded: item.creditsRefunded === true,
    createdAt: String(item.createdAt),
    updatedAt: String(item.updatedAt),
  };
  if (typeof item.errorCode === 'string' && summary.status === TaskStatus.FAILED) summary.errorCode = item.errorCode;
  return summary;
}

/**
 * One page of `userId`'s tasks, newest first, optionally only those of one status and/or type (a filter
 * on the page DynamoDB read: a filtered page can be short, and `next` says whether more may follow).
 */
export async function listTasks(
  ctx: RetryingStoreContext,
  userId: string,
  options: { limit: number; afterSortKey?: string; status?: TaskStatus; type?: TaskType },
): Promise<Page<TaskSummary>> {
  const conditions: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  if (options.status !== undefined) {
    conditions.push('#status = :status');
    names['#status'] = 'status';
    values[':status'] = options.status;
  }
  if (options.type !== undefined) {
    conditions.push('#type = :type');
    names['#type'] = 'type';
    values[':type'] = options.type;
  }
  const filter =
    conditions.length === 0
      ? undefined
      : {
          FilterExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        };
  return queryPage(
    ctx,
    listing(userId),
    {
      limit: options.limit,
      ...(options.afterSortKey ? { afterSortKey: options.afterSortKey } : {}),
      ...(filter ? { filter } : {}),
    },
    toSummary,
  );
}
