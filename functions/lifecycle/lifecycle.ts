/**
 * What the lifecycle operations need, passed in explicitly so the handlers, the sweeper, the local
 * stack and the tests can each supply their own (real) parts.
 */

import type { LifecycleConfig } from '../core/lifecycle';
import type { ProviderProfile } from '../core/profiles/profile';
import type { MediaStore, MediaUrls } from '../media/port';
import type { UploadReader } from '../media/uploads';
import type { Logger } from '../observability/logger';
import { metrics } from '../observability/metrics';
import type { ProviderCallbacks } from '../provider/callback-secret';
import type { GenerationProvider } from '../provider/port';
import type { Upstream } from '../provider/upstream-set';
import type { StoreContext } from '../store/client';

/** What submitting and failing a task need: no media (so the submit functions do not bundle it). */
export interface ProviderLifecycle {
  store: StoreContext;
  provider: GenerationProvider;
  config: LifecycleConfig;
  /** The clock; tests move it instead of sleeping. */
  now: () => Date;
  /** Signed callback URLs for the provider; absent when callbacks are off (polling only). */
  callbacks?: ProviderCallbacks;
  /** Callers' uploads (reference images): checked at submission, signed for the provider at each send. */
  uploads?: UploadReader;
  /**
   * The provider profile, for the dispatcher: it builds each task's provider request at the send, from
   * the request stored at acceptance (send-to-provider.ts), so the submit functions carry no builder.
   */
  profile?: ProviderProfile;
  /**
   * The upstreams list (docs/guides/upstreams.md); absent: one upstream, `provider`. A task's polls go to
   * the upstream that took it (`task.upstream`).
   */
  upstreams?: readonly Upstream[];
}

/** Everything for reading and refreshing tasks, which sign result URLs but copy nothing. */
export interface Lifecycle extends ProviderLifecycle {
  media: MediaUrls;
}

/** The media worker's and the sweeper's lifecycle: they copy results into storage too. */
export interface CopyingLifecycle extends Lifecycle {
  media: MediaStore;
}

/** Calls the provider, recording latency and errors as metrics whatever the outcome. */
export async function timedProviderCall<T>(
  operation: 'createTask' | 'getTask',
  call: () => Promise<T>,
  log: Logger,
): Promise<T> {
  const started = performance.now();
  try {
    const result = await call();
    metrics.providerCall(operation, performance.now() - started, true);
    return result;
  } catch (error) {
    metrics.providerCall(operation, performance.now() - started, false);
    log.warn('Provider call failed', { operation, error });
    throw error;
  }
}
