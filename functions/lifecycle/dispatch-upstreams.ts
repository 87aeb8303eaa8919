/**
 * Dispatch over an upstreams list (docs/guides/upstreams.md): each upstream keeps its own capacity item
 * (its rate, its cap on tasks in flight, its backoffs, its health and its round-robin cursor), and one
 * step offers the queue to the upstreams in priority order, each taking a task of a model it serves
 * when it has room. So capacity adds up (two upstreams at 20 per 10 s send 40 per 10 s), accounts keep
 * taking turns on each upstream, and an upstream out (cooling off, its window full, backing off) passes
 * its turn to the next one serving the model.
 */
import type { ProviderProfile } from '../core/profiles/profile';
import type { Logger } from '../observability/logger';
import type { GenerationProvider } from '../provider/port';
import { type DispatchObserver, type DispatchSettings, type DispatchStep, dispatchNext } from './dispatch';
import type { ProviderLifecycle } from './lifecycle';

/** One upstream as a dispatch step sees it. */
export interface DispatchUpstream {
  /** Its name: its capacity item is `CREATE#<name>`, and the tasks it takes record it. */
  readonly name: string;
  readonly provider: GenerationProvider;
  /** The profile its requests are built by (its model names and input keys). */
  readonly profile?: ProviderProfile;
  /**
   * Its capacity and bounds; `excludeModels` lists the models it does not serve, and
   * `withoutProviderInput` is set when its profile is another than the one submit checked `providerInput`
   * by (such a task is pinned to upstreams of that profile).
   */
  readonly settings: DispatchSettings;
}

/**
 * The lifecycle of one upstream's sends: its capacity item, its provider and profile. Everything else
 * (the store, the callbacks, the config) is the service's.
 */
export function upstreamLifecycle(lc: ProviderLifecycle, upstream: DispatchUpstream): ProviderLifecycle {
  return {
    ...lc,
    store: { ...lc.store, upstream: upstream.name },
    provider: upstream.provider,
    ...(upstream.profile ? { profile: upstream.profile } : {}),
  };
}

/**
 * One dispatch step over the upstreams, in priority order: the first that sends (or fails, refuses,
 * contends) ends the step; an upstream that must wait or has nothing it serves passes to the next.
 * Waits when every upstream waits (the shortest wait), idle when none found work.
 */
export async function dispatchAcross(
  lc: ProviderLifecycle,
  upstreams: readonly DispatchUpstream[],
  log: Logger,
  observe?: DispatchObserver,
): Promise<DispatchStep> {
  let waitMs: number | undefined;
  let refusedOnly = true;
  for (const upstream of upstreams) {
    const step = await dispatchNext(
      upstreamLifecycle(lc, upstream),
      { ...upstream.settings, upstream: upstream.name },
      log.child({ upstream: upstream.name }),
      observe,
    );
    if (step.kind === 'idle') continue;
    if (step.kind === 'wait') {
      waitMs = Math.min(waitMs ?? step.waitMs, step.waitMs);
      refusedOnly = refusedOnly && step.refusedModels === true;
      continue;
    }
    return step;
  }
  if (waitMs === undefined) return { kind: 'idle' };
  return { kind: 'wait', waitMs, ...(refusedOnly ? { refusedModels: true as const } : {}) };
}
