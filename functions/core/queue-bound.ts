/**
 * The bound on an account's queued tasks (docs/design/dispatching.md): past it a submit
 * answers 429 `Queue full` and debits nothing. Set per deployment (`-c maxQueuedTasksPerAccount=N`) and
 * locally (`MAX_QUEUED_TASKS_PER_ACCOUNT=N`); the submit functions read `MAX_QUEUED_TASKS_PER_ACCOUNT`.
 */

/** The bound when none is configured. */
export const DEFAULT_MAX_QUEUED_TASKS_PER_ACCOUNT = 1000;

/**
 * The largest bound a deployment may set (the environment contract's parser says the same): each submit
 * counts the account's queue entries up to the bound, so it is also what that count may cost to read.
 */
export const MAX_QUEUED_TASKS_PER_ACCOUNT_LIMIT = 10_000;
