/**
 * Which addresses the service may connect to when it follows a URL it did not choose (a provider's
 * result URL, a customer's webhook endpoint), and how a connection is held to the address that was
 * checked. `source-policy.ts` decides which URLs are allowed at all; this module checks where their
 * host names lead. It is a module of its own so that code judging only URLs (the submit functions,
 * which check a `webhookUrl`) does not carry the address table in its bundle.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { type Cidr, cidrContains, type IpAddress, parseCidr, parseIp } from '../core/cidr';
import { bareHost } from './source-policy';

/**
 * Address blocks no result may come from: every block of IANA's IPv4 and IPv6 Special-Purpose Address
 * Registries (read 2026-11-25), the globally reachable ones included (anycast DNS and relay services
 * such as AS112 and AMT: no file server or webhook receiver lives there), and multicast. That is:
 * this network, private (RFC 1918, unique local), shared (CGNAT), loopback, link-local (cloud metadata
 * lives at 169.254.169.254 and fd00:ec2::254), documentation, benchmarking, multicast, reserved and
 * broadcast, segment-routing SIDs, the discard and dummy prefixes, plus the IPv6 forms that embed or
 * tunnel an IPv4 address (IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo), which are refused
 * outright rather than decoded. IPv4-mapped IPv6 addresses are read as the IPv4 address they carry
 * (`parseIp`). Beyond the list, an IPv6 address outside 2000::/3 is refused: IANA's IPv6 address space
 * registry allocates global unicast from that block only, so anything else is reserved or special.
 */
function range(text: string): Cidr {
  const cidr = parseCidr(text);
  if (!cidr) throw new Error(`Bad address range ${text}`);
  return cidr;
}

const BLOCKED = [
  '0.0.0.0/8', // "this network" (RFC 791)
  '10.0.0.0/8', // private (RFC 1918)
  '100.64.0.0/10', // shared address space, CGNAT (RFC 6598)
  '127.0.0.0/8', // loopback (RFC 1122)
  '169.254.0.0/16', // link-local (RFC 3927), cloud metadata
  '172.16.0.0/12', // private (RFC 1918)
  '192.0.0.0/24', // IETF protocol assignments (RFC 6890): DS-Lite, NAT64 discovery, PCP and TURN anycast
  '192.0.2.0/24', // documentation, TEST-NET-1 (RFC 5737)
  '192.31.196.0/24', // AS112-v4 anycast DNS (RFC 7535)
  '192.52.193.0/24', // AMT relay anycast (RFC 7450)
  '192.88.99.0/24', // deprecated 6to4 relay anycast (RFC 7526)
  '192.168.0.0/16', // private (RFC 1918)
  '192.175.48.0/24', // AS112 direct delegation (RFC 7534)
  '198.18.0.0/15', // benchmarking (RFC 2544)
  '198.51.100.0/24', // documentation, TEST-NET-2 (RFC 5737)
  '203.0.113.0/24', // documentation, TEST-NET-3 (RFC 5737)
  '224.0.0.0/4', // multicast (RFC 5771)
  '240.0.0.0/4', // reserved (RFC 1112), with the limited broadcast 255.255.255.255 (RFC 919)
  '::/96', // unspecified, loopback, IPv4-compatible (RFC 4291)
  '::ffff:0:0:0/96', // IPv4-translated (RFC 2765, SIIT)
  '64:ff9b::/96', // NAT64 well-known prefix (RFC 6052)
  '64:ff9b:1::/48', // local-use IPv4/IPv6 translation (RFC 8215)
  '100::/64', // discard-only (RFC 6666)
  '100:0:0:1::/64', // dummy prefix (RFC 9780)
  '2001::/23', // IETF protocol assignments (RFC 2928): Teredo, benchmarking, ORCHID, anycast services
  '2001:db8::/32', // documentation (RFC 3849)
  '2002::/16', // 6to4 (RFC 3056)
  '2620:4f:8000::/48', // AS112 direct delegation (RFC 7534)
  '3fff::/20', // documentation (RFC 9637)
  '5f00::/16', // segment routing SIDs (RFC 9602)
  'fc00::/7', // unique local (RFC 4193)
  'fe80::/10', // link-local (RFC 4291)
  'fec0::/10', // deprecated site-local (RFC 3879)
  'ff00::/8', // multicast (RFC 4291)
].map(range);

/** IPv6 global unicast as IANA allocates it (RFC 4291 section 2.4, the IPv6 address space registry). */
const GLOBAL_UNICAST_V6 = range('2000::/3');

/** Whether `address` (IPv4 or IPv6 text) is a public unicast address a result may come from. */
export function isPublicAddress(address: string): boolean {
  const parsed: IpAddress | undefined = parseIp(address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, ''));
  if (!parsed) return false;
  if (parsed.family === 6 && !cidrContains(GLOBAL_UNICAST_V6, parsed)) return false;
  return !BLOCKED.some((cidr) => cidrContains(cidr, parsed));
}

/** Resolves a host name to all of its addresses (injected by tests to simulate DNS answers). */
export type ResolveHost = (hostname: string) => Promise<{ address: string; family: number }[]>;

/** The address a connection is pinned to, once checked. */
export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

const systemResolve: ResolveHost = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Resolves the URL's host and returns the address to connect to, or why there is none: every address
 * it resolves to must be public (one private answer among public ones refuses the host: a rebinding
 * setup often mixes). The reasons read as the end of a sentence ("... unreachable: its host has no
 * address"), for the callers' messages.
 */
export async function resolvePublicAddress(
  url: URL,
  resolve: ResolveHost = systemResolve,
): Promise<{ pinned: PinnedAddress } | { unreachable: string; cause?: unknown } | { refused: string }> {
  const host = bareHost(url);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      return { unreachable: 'its host does not resolve', cause: error };
    }
  }
  const first = addresses[0];
  if (!first) return { unreachable: 'its host has no address' };
  if (!addresses.every(({ address }) => isPublicAddress(address))) {
    return { refused: 'it resolves to a non-public address' };
  }
  return { pinned: { address: first.address, family: first.family === 6 ? 6 : 4 } };
}

/** A `lookup` that answers with the already-checked address, in either callback form Node asks for. */
export function pinnedLookup(pinned: PinnedAddress): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  }) as unknown as LookupFunction;
}
