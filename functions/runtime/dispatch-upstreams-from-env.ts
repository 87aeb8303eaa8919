/**
 * The dispatcher's view of the upstreams list (`PROVIDER_UPSTREAMS`, docs/guides/upstreams.md): each
 * upstream with its provider, its profile, its capacity and what it does not serve. Undefined without a
 * list: the dispatcher then runs today's one upstream.
 */
import { MODELS } from '../core/catalog';
import { KIE_PROFILE } from '../core/profiles/kie';
import { MOCK_PROFILE } from '../core/profiles/mock';
import type { ProviderProfile } from '../core/profiles/profile';
import { servesModel } from '../core/upstreams';
import type { Env } from '../environment/environment';
import type { DispatchSettings } from '../lifecycle/dispatch';
import type { DispatchUpstream } from '../lifecycle/dispatch-upstreams';
import { upstreamsFromEnv } from './upstreams-from-env';

/** The profile an upstream names: the service's own (which may be a custom one), or a shipped one. */
function profileNamed(name: string, service: ProviderProfile): ProviderProfile {
  if (name === service.name) return service;
  if (name === KIE_PROFILE.name) return KIE_PROFILE;
  if (name === MOCK_PROFILE.name) return MOCK_PROFILE;
  throw new Error(`PROVIDER_UPSTREAMS names the profile "${name}", which is neither the service's nor a shipped one`);
}

/**
 * The upstreams as the dispatch steps take them, in priority order. `shared` carries the bounds every
 * upstream keeps (the longest Retry-After, refusals per task); each upstream's capacity is its own.
 */
export function dispatchUpstreamsFromEnv(
  service: ProviderProfile,
  shared: DispatchSettings,
  env?: Env,
): DispatchUpstream[] | undefined {
  const upstreams = upstreamsFromEnv(env);
  if (!upstreams) return undefined;
  const { createRateLimit: _rate, maxInFlight: _cap, ...bounds } = shared;
  return upstreams.map(({ config, provider }) => {
    const foreign = config.profile !== service.name;
    // A task may fail over to an upstream that serves its model (a task with providerInput only to one
    // of the service's profile; such a failover is then counted, as with one upstream).
    const others = upstreams.filter((other) => other.config.name !== config.name);
    return {
      name: config.name,
      provider,
      profile: profileNamed(config.profile, service),
      settings: {
        ...bounds,
        ...(config.createRateLimit ? { createRateLimit: config.createRateLimit } : {}),
        ...(config.maxInFlight === undefined ? {} : { maxInFlight: config.maxInFlight }),
        ...(config.models
          ? { excludeModels: MODELS.map((model) => model.id).filter((id) => !servesModel(config, id)) }
          : {}),
        ...(foreign ? { withoutProviderInput: true } : {}),
        failoverFor: (model: string) => others.some((other) => servesModel(other.config, model)),
      },
    };
  });
}
