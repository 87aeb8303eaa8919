/**
 * The task as the service stores it and as the API shows it. Plain data, no AWS.
 */

/** 0 PENDING, 1 COMPLETED, 2 FAILED (the spec's integers; 1 and 2 are terminal). */
export const TaskStatus = { PENDING: 0, COMPLETED: 1, FAILED: 2 } as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

export type TaskType = 'image' | 'video';

/**
 * The authenticated caller: the account that pays and owns, and the credential it used: an API key
 * (`keyId`) or a browser session (`sessionHash`, the stored hash of the session id).
 */
export interface Caller {
  userId: string;
  keyId?: string;
  sessionHash?: string;
}

/** Every machine-readable failure code a task can end with. */
export const ERROR_CODES = [
  'PROVIDER_ERROR',
  'PROVIDER_REJECTED',
  'PROVIDER_UNAVAILABLE',
  'TIMEOUT',
  'STORAGE_ERROR',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The stored task: the spec's Task resource plus the internals the lifecycle needs.
 * Result locations are media keys; URLs are made from them on read (signed URLs expire).
 */
export interface TaskRecord {
  userId: string;
  taskId: string;
  type: TaskType;
  status: TaskStatus;
  model: string;
  prompt: string;
  /** The validated request as submitted, kept to (re)send it to the provider. */
  request: Record<string, unknown>;
  creditsUsed: number;
  creditsRefunded: boolean;
  /** ISO 8601 */
  createdAt: string;
  /** ISO 8601 */
  updatedAt: string;
  /** Set once the provider accepted the task. */
  providerTaskId?: string;
  /** Epoch milliseconds of the last claimed provider query (or send retry). */
  lastCheckedAt?: number;
  /** How many times the lifecycle has claimed this task (send retries and queries). */
  attempts: number;
  /** Media keys of the results, set when status is COMPLETED. */
  resultKeys?: string[];
  errorCode?: ErrorCode;
  errorMessage?: string;
  /** API key that created the task (for audit; never the key itself). */
  keyId?: string;
}

/** The Task resource of the spec, as GET /api/ai/tasks/{id} returns it. */
export interface TaskResource {
  taskId: string;
  type: TaskType;
  status: TaskStatus;
  model: string;
  prompt: string;
  imageUrls?: string[];
  videoUrl?: string;
  errorCode?: ErrorCode;
  errorMessage?: string;
  creditsUsed: number;
  creditsRefunded: boolean;
  createdAt: string;
  updatedAt: string;
}

/** The submission response of both generate endpoints. */
export interface SubmissionResponse {
  taskId: string;
  status: TaskStatus;
  creditsUsed: number;
}
