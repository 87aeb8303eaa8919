/**
 * The upstreams list of this process (`PROVIDER_UPSTREAMS`, docs/guides/upstreams.md), built once:
 * each upstream with its own HTTP adapter and key (`apiKey` locally, its own secret deployed). Checked
 * at synth and at start; here the list is only parsed (names and fields), not checked against the
 * catalog again.
 */
import { parseUpstreams } from '../core/upstreams';
import { type Env, PROVIDER_TIMEOUT_MS, PROVIDER_UPSTREAMS, readEnv } from '../environment/environment';
import { providerApiKeyFromEnv } from '../provider/api-key-source';
import { createHttpProvider } from '../provider/http-provider';
import type { Upstream } from '../provider/upstream-set';

let cached: { text: string; upstreams: Upstream[] } | undefined;

/** The upstreams `PROVIDER_UPSTREAMS` lists; undefined without one (one upstream, today's settings). */
export function upstreamsFromEnv(env?: Env): Upstream[] | undefined {
  const text = readEnv(PROVIDER_UPSTREAMS, env);
  if (text === undefined) return undefined;
  if (cached?.text === text) return cached.upstreams;
  const configs = parseUpstreams(text, PROVIDER_UPSTREAMS.name, { keysInline: true });
  const timeoutMs = readEnv(PROVIDER_TIMEOUT_MS, env) ?? 5000;
  const upstreams = configs.map((config) => ({
    config,
    provider: createHttpProvider({
      baseUrl: config.baseUrl,
      // Its own key: the key itself (locally), or its own secret (deployed).
      apiKey: providerApiKeyFromEnv(env, {
        source: {
          ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
          ...(config.secretArn === undefined ? {} : { secretId: config.secretArn }),
        },
      }),
      timeoutMs,
    }),
  }));
  cached = { text, upstreams };
  return upstreams;
}
