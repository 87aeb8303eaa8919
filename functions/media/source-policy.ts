/**
 * Which result URLs the service may download. A result URL comes from the provider's answer, so it is
 * untrusted: without these rules a provider (or whoever controls its answers) could make the service
 * fetch its own metadata endpoints, the Lambda runtime API or anything else on a private network.
 *
 * Deployed, a source must be `https:` and every address its host resolves to must be public (see
 * `isPublicAddress`); an optional host allowlist narrows it further. The local stack's mock provider
 * speaks plain HTTP on 127.0.0.1, so it is let in by naming its origin in `insecureOrigins`
 * (`MEDIA_SOURCE_INSECURE_ORIGINS`, set by `local/stack.ts`): an exact origin, never a range.
 */
import { type Cidr, cidrContains, type IpAddress, parseCidr, parseIp } from '../core/cidr';

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
export function sourcePolicyFromEnv(env: NodeJS.ProcessEnv = process.env): SourcePolicy {
  const insecureOrigins = list(env.MEDIA_SOURCE_INSECURE_ORIGINS).map((text) => {
    const origin = originOf(text);
    if (!origin || origin !== text.replace(/\/+$/, '')) {
      throw new Error(`MEDIA_SOURCE_INSECURE_ORIGINS: "${text}" is not an origin (scheme://host[:port])`);
    }
    return origin;
  });
  const allowedHosts = list(env.MEDIA_SOURCE_HOSTS).map((host) => host.toLowerCase());
  const runtimeApi = env.AWS_LAMBDA_RUNTIME_API;
  return { insecureOrigins, allowedHosts, ...(runtimeApi ? { runtimeApi } : {}) };
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

/**
 * Address blocks no result may come from: this network, private (RFC 1918, unique local), shared
 * (CGNAT), loopback, link-local (cloud metadata lives at 169.254.169.254 and fd00:ec2::254),
 * documentation, benchmarking, multicast, reserved and broadcast, plus the IPv6 forms that embed or
 * tunnel an IPv4 address (IPv4-compatible, NAT64, 6to4, Teredo), which are refused outright rather
 * than decoded. IPv4-mapped IPv6 addresses are read as the IPv4 address they carry (`parseIp`).
 */
const BLOCKED = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/96',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/32',
  '2001:2::/48',
  '2001:10::/28',
  '2001:20::/28',
  '2001:db8::/32',
  '2002::/16',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
].map((text): Cidr => {
  const cidr = parseCidr(text);
  if (!cidr) throw new Error(`Bad blocked range ${text}`);
  return cidr;
});

/** Whether `address` (IPv4 or IPv6 text) is a public unicast address a result may come from. */
export function isPublicAddress(address: string): boolean {
  const parsed: IpAddress | undefined = parseIp(address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, ''));
  if (!parsed) return false;
  return !BLOCKED.some((cidr) => cidrContains(cidr, parsed));
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
