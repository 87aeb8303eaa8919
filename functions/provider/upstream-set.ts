/**
 * The upstreams of this process at run time (docs/guides/upstreams.md): each configured upstream with
 * its own provider adapter (its base URL, its key). The lifecycle asks here which provider a task's
 * polls and callbacks go to: the one that took it.
 */
import type { UpstreamConfig } from '../core/upstreams';
import type { GenerationProvider } from './port';

/** One upstream, ready to call. */
export interface Upstream {
  readonly config: UpstreamConfig;
  readonly provider: GenerationProvider;
}

/** The provider of the upstream named `name`, or `fallback` (the one upstream of a deployment without a list). */
export function providerNamed(
  upstreams: readonly Upstream[] | undefined,
  name: string | undefined,
  fallback: GenerationProvider,
): GenerationProvider {
  if (name === undefined || upstreams === undefined) return fallback;
  const upstream = upstreams.find((candidate) => candidate.config.name === name);
  if (!upstream) throw new Error(`The task's upstream "${name}" is not configured any more`);
  return upstream.provider;
}
