/**
 * The upstream provider port. There are two implementations (the HTTP adapter for the real provider
 * API and test doubles), and the lifecycle only ever sees this interface.
 */

/** Provider-side task states of the common task-queue protocol. */
export type ProviderState = 'waiting' | 'queuing' | 'generating' | 'success' | 'fail';

export interface ProviderCreateRequest {
  /** The provider's model name (from the catalog, not our model id). */
  model: string;
  /** Provider input: defaults built from the request, `providerInput` merged over them. */
  input: Record<string, unknown>;
  callBackUrl?: string;
}

export interface ProviderTaskStatus {
  state: ProviderState;
  /** Result file URLs when state is `success`. */
  resultUrls: string[];
  failCode?: string;
  failMessage?: string;
  /** When the provider finished the task (its epoch-millisecond `completeTime`/`updateTime`), if it said. */
  finishedAt?: Date;
}

export interface GenerationProvider {
  /**
   * Creates a task at the provider.
   * @throws ProviderRejectedError when the provider refuses the input (it will never accept it)
   * @throws ProviderUnavailableError when it cannot be reached or answers with a transient failure
   */
  createTask(request: ProviderCreateRequest): Promise<{ providerTaskId: string }>;
  /**
   * Reads a task's state at the provider.
   * @throws ProviderUnavailableError on any transport or protocol failure
   */
  getTask(providerTaskId: string): Promise<ProviderTaskStatus>;
}

/** The provider refused the input; retrying will not help. */
export class ProviderRejectedError extends Error {
  override readonly name = 'ProviderRejectedError';
  constructor(
    message: string,
    readonly providerCode?: string,
  ) {
    super(message);
  }
}

/** The provider could not be reached or answered with a transient or malformed response. */
export class ProviderUnavailableError extends Error {
  override readonly name = 'ProviderUnavailableError';
  /**
   * Whether the provider refused for capacity (HTTP 429: over the caller's rate; 503: it cannot take
   * this create now), and the seconds it asked us to wait (`Retry-After`, when it sent one, unbounded):
   * the dispatcher backs off that long, up to its bound (docs/design/dispatching.md).
   */
  throttled?: { status?: 429 | 503; retryAfterSeconds?: number };
  /**
   * A create whose request may have reached the upstream without its answer reaching us (a timeout, a
   * connection dropped after the request went out): the upstream may have created, and will bill, the
   * task. Such a create is never sent again blindly (docs/design/dispatching.md, "Outcome unknown").
   */
  outcomeUnknown?: boolean;
}
