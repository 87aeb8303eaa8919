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
