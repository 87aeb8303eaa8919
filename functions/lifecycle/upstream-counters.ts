/**
 * Counting each upstream's sends (docs/guides/upstreams.md): its counters item (sends, refusals,
 * failures, recent create latencies, read by `upstreams show`) and the `UpstreamSends` metric. Only with
 * an upstreams list; a lost count is logged, never the send's failure.
 */
import type { Logger } from '../observability/logger';
import { metrics } from '../observability/metrics';
import { countSend, type SendOutcome } from '../store/upstream-health';
import type { ProviderLifecycle } from './lifecycle';

/** Counts one send of `upstream` (nothing without an upstreams list); `startedAt` is `performance.now()` before the create. */
export async function countUpstreamSend(
  lc: ProviderLifecycle,
  upstream: string | undefined,
  outcome: SendOutcome,
  startedAt: number,
  log: Logger,
): Promise<void> {
  if (upstream === undefined) return;
  metrics.upstreamSend(upstream, outcome);
  await countSend(lc.store, {
    upstream,
    outcome,
    latencyMs: performance.now() - startedAt,
    now: lc.now().getTime(),
  }).catch((error: unknown) => log.warn("An upstream's send was not counted", { upstream, error }));
}
