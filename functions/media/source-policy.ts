/**
 * Which result URLs the service may download. A result URL comes from the provider's answer, so it is
 * untrusted: without these rules a provider (or whoever controls its answers) could make the service
 * fetch its own metadata endpoints, the Lambda runtime API or anything else on a private network.
 *
 * Deployed, a source must be `https:` and every address its host resolves to must be public (see
 * `isPublicAddress` in `public-address.ts`); an optional host allowlist narrows it further. The local stack's mock provider
 * speaks plain HTTP on 127.0.0.1, so it is let in by naming its origin in `insecureOrigins`
 * (`MEDIA_SOURCE_INSECURE_ORIGINS`, set by `local/stack.ts`): an exact origin, never a range.
 */

import {
  AWS_LAMBDA_RUNTIME_API,
  type Env,
  MEDIA_SOURCE_HOSTS,
  MEDIA_SOURCE_INSECURE_ORIGINS,
  readEnv,
} from '../environment/environment';

export interface SourcePolicy {
  /**
   * Exact origins (`http://127.0.0.1:3001`) allowed over plain HTTP and to any address: the local mock
   * provider. Empty when deployed.
   */
  insecureOrigins: readonly string[];
  /**
   * When non-empty, the only host names results may come from: `cdn.example.com` (exactly) or
   * `*.example.com` (any subdomain, not the apex). Checked on every redirect hop too.
   */
  allowedHosts: readonly string[];
  /** `host:port` of the Lambda runtime API (`AWS_LAMBDA_RUNTIME_API`), refused whatever it resolves to. */
  runtimeApi?: string;
}

/** The strict policy: https, public addresses, any host. */
export const STRICT_SOURCE_POLICY: SourcePolicy = { insecureOrigins: [], allowedHosts: [] };

/**
 * Reads the policy from `MEDIA_SOURCE_INSECURE_ORIGINS` and `MEDIA_SOURCE_HOSTS` (comma-separated) and
 * `AWS_LAMBDA_RUNTIME_API`.
 * @throws Error when an insecure origin is not a bare `http(s)://host[:port]` origin
 */
export function sourcePolicyFromEnv(env?: Env): SourcePolicy {
  const insecureOrigins = insecureOriginsFrom(
    readEnv(MEDIA_SOURCE_INSECURE_ORIGINS, env),
    MEDIA_SOURCE_INSECURE_ORIGINS.name,
  );
  const allowedHosts = (readEnv(MEDIA_SOURCE_HOSTS, env) ?? []).map((host) => host.toLowerCase());
  const runtimeApi = readEnv(AWS_LAMBDA_RUNTIME_API, env);
  return { insecureOrigins, allowedHosts, ...(runtimeApi ? { runtimeApi } : {}) };
}

/**
 * Exact origins from a comma-separated setting (`http://127.0.0.1:3001,...`).
 * @throws Error naming `setting` when an entry is not a bare `http(s)://host[:port]` origin
 */
export function insecureOriginsFrom(value: string | undefined, setting: string): string[] {
  return list(value).map((text) => {
    const origin = originOf(text);
    if (!origin || origin !== text.replace(/\/+$/, '')) {
      throw new Error(`${setting}: "${text}" is not an origin (scheme://host[:port])`);
    }
    return origin;
  });
}

/** Why a URL may not be fetched; `undefined` when it may (its addresses are checked separately). */
export function refuseUrl(url: URL, policy: SourcePolicy): string | undefined {
  if (url.username || url.password) return 'credentials in the URL';
  if (policy.insecureOrigins.includes(url.origin)) return undefined;
  if (url.protocol !== 'https:') return `scheme ${url.protocol} (https only)`;
  if (policy.runtimeApi && url.host.toLowerCase() === policy.runtimeApi.toLowerCase()) return 'the Lambda runtime API';
  const host = bareHost(url);
  if (policy.allowedHosts.length > 0 && !policy.allowedHosts.some((rule) => hostMatches(rule, host))) {
    return 'a host outside the allowlist';
  }
  return undefined;
}

/** Whether the policy lets `url` skip the address checks (an explicitly configured local origin). */
export function isTrustedOrigin(url: URL, policy: SourcePolicy): boolean {
  return policy.insecureOrigins.includes(url.origin);
}

/** The host name without IPv6 brackets, lowercased. */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

/** `rule` is `host` (exact) or `*.domain` (any subdomain of it). */
function hostMatches(rule: string, host: string): boolean {
  if (rule.startsWith('*.')) return host.endsWith(rule.slice(1)) && host.length > rule.length - 1;
  return host === rule;
}

function originOf(text: string): string | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}
