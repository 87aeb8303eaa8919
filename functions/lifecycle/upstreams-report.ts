/**
 * What `upstreams show` prints (docs/guides/upstreams.md): each upstream's state, its counters and its
 * tasks in flight, from its capacity item and its counters item. The one implementation; the operator
 * CLI is a front door onto it.
 */
import { DEFAULT_UPSTREAM } from '../core/upstreams';
import type { StoreContext } from '../store/client';
import { readCapacity } from '../store/dispatch';
import { readUpstreamStats, upstreamsWithCapacity } from '../store/upstream-health';

/** One upstream as an operator sees it. */
export interface UpstreamReport {
  name: string;
  /** `in`; `out` (cooling off after failed sends) until `outUntil`; `probing` (one send decides). */
  state: 'in' | 'out' | 'probing';
  /** Since when it is out or probing (ISO 8601), else null. */
  outSince: string | null;
  /** Until when it cools off (ISO 8601), else null. */
  outUntil: string | null;
  /** Creates it answered with a task, refused (429, 503), failed (5xx, unreachable, timeouts): with a list. */
  sends: number;
  refusals: number;
  failures: number;
  /** The median latency of its last creates (ms), null before the first. */
  p50CreateMs: number | null;
  /** The slots its capacity item ever gave (every send, a list or not). */
  slotsTaken: number;
  /** Our tasks at the upstream under its cap on tasks in flight; null without a cap. */
  inFlight: number | null;
}

const iso = (at: number | undefined) => (at === undefined ? null : new Date(at).toISOString());

/** Every upstream that has sent (or been given a capacity item), the one upstream as `default`. */
export async function reportUpstreams(store: StoreContext, now: Date): Promise<UpstreamReport[]> {
  const names = await upstreamsWithCapacity(store);
  return Promise.all(
    names.map(async (name) => {
      const upstream = name === DEFAULT_UPSTREAM ? undefined : name;
      const [state, stats] = await Promise.all([readCapacity({ ...store, upstream }), readUpstreamStats(store, name)]);
      const out = state.unhealthySince !== undefined;
      const coolingOff = out && state.backoffUntil !== undefined && state.backoffUntil > now.getTime();
      return {
        name,
        state: !out ? 'in' : coolingOff ? 'out' : 'probing',
        outSince: iso(state.unhealthySince),
        outUntil: coolingOff ? iso(state.backoffUntil) : null,
        sends: stats.sends,
        refusals: stats.refusals,
        failures: stats.failures,
        p50CreateMs: stats.p50CreateMs ?? null,
        slotsTaken: state.n,
        inFlight: state.running === undefined ? null : Object.keys(state.running).length,
      } satisfies UpstreamReport;
    }),
  );
}
