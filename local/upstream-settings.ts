/**
 * The upstreams of `npm start` (docs/guides/upstreams.md): `MOCK_UPSTREAMS=N` runs N mock providers on
 * consecutive ports from `MOCK_PROVIDER_PORT`, named `mock-1` ... `mock-N`, each enforcing
 * `MOCK_PROVIDER_CREATE_RATE_LIMIT` / `MOCK_PROVIDER_MAX_IN_FLIGHT` on its own and declared to the
 * service with `PROVIDER_CREATE_RATE_LIMIT` / `PROVIDER_MAX_IN_FLIGHT` each; `PROVIDER_UPSTREAMS=<json>`
 * names the upstreams outright (keys inline). Checked at start, with the same parser as at synth.
 */
import { MODELS } from '../functions/core/catalog';
import { KIE_PROFILE } from '../functions/core/profiles/kie';
import { MOCK_PROFILE } from '../functions/core/profiles/mock';
import { type CreateRateLimit, parseCreateRateLimit } from '../functions/core/provider-capacity';
import { formatUpstreams, MAX_UPSTREAMS, parseUpstreams, type UpstreamConfig } from '../functions/core/upstreams';

/** The upstream settings of `npm start`. */
export interface LocalUpstreamSettings {
  /** `MOCK_UPSTREAMS`: how many mock providers (1, the default, is today's one). */
  mockUpstreams: number;
  /** `PROVIDER_UPSTREAMS`, checked: the list as given. */
  providerUpstreams?: string;
}

/**
 * Reads `MOCK_UPSTREAMS` and `PROVIDER_UPSTREAMS`.
 * @throws Error naming the variable (and, for the list, each upstream and field at fault)
 */
export function localUpstreamSettings(env: NodeJS.ProcessEnv, serviceProfile: string): LocalUpstreamSettings {
  const raw = env.MOCK_UPSTREAMS;
  const mockUpstreams = raw === undefined || raw === '' ? 1 : Number(raw);
  if (!/^\d+$/.test(raw ?? '1') || mockUpstreams < 1 || mockUpstreams > MAX_UPSTREAMS) {
    throw new Error(`MOCK_UPSTREAMS must be a whole number from 1 to ${MAX_UPSTREAMS}, got "${raw}"`);
  }
  const list = env.PROVIDER_UPSTREAMS;
  if (list) parseUpstreams(list, 'PROVIDER_UPSTREAMS', upstreamRules(serviceProfile));
  return { mockUpstreams, ...(list ? { providerUpstreams: list } : {}) };
}

function upstreamRules(serviceProfile: string) {
  return {
    profiles: [...new Set([MOCK_PROFILE.name, KIE_PROFILE.name, serviceProfile])],
    models: MODELS.map((model) => model.id),
    keysInline: true,
  };
}

/**
 * The list the handlers get (`PROVIDER_UPSTREAMS`): the one given, else, with more than one mock, the
 * mocks `mock-1` ... `mock-N` in order, each declared with the service's capacity settings; undefined
 * for one mock (today's single upstream).
 */
export function localUpstreamsList(input: {
  settings: LocalUpstreamSettings;
  mockUrls: readonly string[];
  apiKey: string;
  profile: string;
  createRateLimit?: string | undefined;
  maxInFlight?: number | undefined;
}): string | undefined {
  if (input.settings.providerUpstreams) return input.settings.providerUpstreams;
  if (input.mockUrls.length < 2) return undefined;
  const rate: CreateRateLimit | undefined = input.createRateLimit
    ? parseCreateRateLimit(input.createRateLimit, 'PROVIDER_CREATE_RATE_LIMIT')
    : undefined;
  const upstreams: UpstreamConfig[] = input.mockUrls.map((baseUrl, index) => ({
    name: `mock-${index + 1}`,
    profile: input.profile,
    baseUrl,
    apiKey: input.apiKey,
    priority: index,
    ...(rate ? { createRateLimit: rate } : {}),
    ...(input.maxInFlight === undefined ? {} : { maxInFlight: input.maxInFlight }),
  }));
  return formatUpstreams(upstreams);
}
