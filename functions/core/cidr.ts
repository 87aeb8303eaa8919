/**
 * IPv4 / IPv6 addresses and CIDR blocks for key allowlists, with no dependency.
 *
 * An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is the IPv4 address it carries, and a rule inside
 * `::ffff:0:0/96` is the IPv4 rule it describes, so a dual-stack gateway that reports a v4 caller in v6
 * form still matches that caller's v4 rule. Otherwise the families never match each other: `::/0` does
 * not admit IPv4 callers and `0.0.0.0/0` does not admit IPv6 callers.
 *
 * Parsing is strict: no leading zeros in IPv4 octets (`010` is octal to some tools), no zone ids, no
 * host bits set below the prefix (`10.0.0.1/8` is refused: it is usually a typo for `/32`, and reading
 * it as `/8` would silently widen access).
 */

export type IpFamily = 4 | 6;

/** A parsed address: the family and its value as an unsigned integer (32 or 128 bits). */
export interface IpAddress {
  family: IpFamily;
  value: bigint;
}

/** A parsed CIDR block; a single address is a block of /32 or /128. */
export interface Cidr {
  family: IpFamily;
  /** The network address (host bits are zero). */
  network: bigint;
  prefixLength: number;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };
const MAPPED_V4_PREFIX = 0xffffn << 32n; // ::ffff:0:0/96
const V4_MASK = 0xffffffffn;

const IPV4_OCTET = /^(0|[1-9][0-9]{0,2})$/;
const IPV6_GROUP = /^[0-9a-fA-F]{1,4}$/;
const PREFIX_LENGTH = /^(0|[1-9][0-9]{0,2})$/;

function parseIpv4Value(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    if (!IPV4_OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

function parseGroups(text: string): number[] | undefined {
  if (text === '') return [];
  const groups: number[] = [];
  for (const part of text.split(':')) {
    if (!IPV6_GROUP.test(part)) return undefined;
    groups.push(Number.parseInt(part, 16));
  }
  return groups;
}

function parseIpv6Value(text: string): bigint | undefined {
  let body = text;
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) stands for the last two groups.
  let tail: number[] = [];
  const lastColon = body.lastIndexOf(':');
  if (lastColon >= 0 && body.includes('.', lastColon)) {
    const v4 = parseIpv4Value(body.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [Number(v4 >> 16n), Number(v4 & 0xffffn)];
    // Keep the colon when it belongs to a `::` so the split below still sees the elision.
    body = body.slice(0, body[lastColon - 1] === ':' ? lastColon + 1 : lastColon);
    if (body === '') return undefined;
  }

  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  let groups: number[];
  if (halves.length === 2) {
    const head = parseGroups(halves[0] ?? '');
    const rest = parseGroups(halves[1] ?? '');
    if (!head || !rest) return undefined;
    const missing = 8 - head.length - rest.length - tail.length;
    // `::` stands for at least one zero group.
    if (missing < 1) return undefined;
    groups = [...head, ...new Array<number>(missing).fill(0), ...rest, ...tail];
  } else {
    const all = parseGroups(body);
    if (!all) return undefined;
    groups = [...all, ...tail];
    if (groups.length !== 8) return undefined;
  }
  if (groups.length !== 8) return undefined;
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

/** An IPv4-mapped IPv6 value becomes the IPv4 address it carries; anything else is unchanged. */
function unmap(address: IpAddress): IpAddress {
  if (address.family === 6 && address.value >> 32n === 0xffffn) {
    return { family: 4, value: address.value & V4_MASK };
  }
  return address;
}

/**
 * Parses an IPv4 or IPv6 address (no prefix, no zone id). An IPv4-mapped IPv6 address comes back as
 * IPv4. Returns `undefined` for anything malformed.
 */
export function parseIp(text: string): IpAddress | undefined {
  if (text.includes(':')) {
    const value = parseIpv6Value(text);
    return value === undefined ? undefined : unmap({ family: 6, value });
  }
  const value = parseIpv4Value(text);
  return value === undefined ? undefined : { family: 4, value };
}

function mask(family: IpFamily, prefixLength: number): bigint {
  const bits = BigInt(BITS[family]);
  const all = (1n << bits) - 1n;
  return (all >> BigInt(prefixLength)) ^ all;
}

/**
 * Parses `address/prefix` or a single address (taken as /32 or /128). A block inside `::ffff:0:0/96`
 * comes back as the IPv4 block it describes. Returns `undefined` for anything malformed, including a
 * prefix out of range or host bits set below the prefix.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? undefined : text.slice(slash + 1);

  const isV6 = addressText.includes(':');
  const raw = isV6 ? parseIpv6Value(addressText) : parseIpv4Value(addressText);
  if (raw === undefined) return undefined;
  let family: IpFamily = isV6 ? 6 : 4;

  let prefixLength = BITS[family];
  if (prefixText !== undefined) {
    if (!PREFIX_LENGTH.test(prefixText)) return undefined;
    prefixLength = Number(prefixText);
    if (prefixLength > BITS[family]) return undefined;
  }
  if ((raw & ~mask(family, prefixLength)) !== 0n) return undefined;

  let network = raw;
  if (family === 6 && prefixLength >= 96 && raw >> 32n === MAPPED_V4_PREFIX >> 32n) {
    family = 4;
    network = raw & V4_MASK;
    prefixLength -= 96;
  }
  return { family, network, prefixLength };
}

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

function formatIpv6(value: bigint): string {
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => Number((value >> shift) & 0xffffn));
  // RFC 5952: elide the longest run (of two or more) of zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** The canonical text of a block: `10.0.0.0/8`, `2001:db8::/32`, a single address as `/32` or `/128`. */
export function formatCidr(cidr: Cidr): string {
  const address = cidr.family === 4 ? formatIpv4(cidr.network) : formatIpv6(cidr.network);
  return `${address}/${cidr.prefixLength}`;
}

/** The canonical form of a CIDR or address text, or `undefined` when it is malformed. */
export function normalizeCidr(text: string): string | undefined {
  const cidr = parseCidr(text);
  return cidr ? formatCidr(cidr) : undefined;
}

/** Whether `address` lies inside `cidr` (same family only; mapped addresses are already IPv4). */
export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  if (cidr.family !== address.family) return false;
  return (address.value & mask(cidr.family, cidr.prefixLength)) === cidr.network;
}

/**
 * Whether a caller at `sourceIp` may use a key with allowlist `cidrs`. An empty list allows every
 * address. With a non-empty list, a missing or malformed source address is refused, and a malformed
 * entry matches nothing (fail closed: a bad rule never widens access).
 */
export function isAllowed(sourceIp: string | undefined, cidrs: readonly string[]): boolean {
  if (cidrs.length === 0) return true;
  const address = sourceIp === undefined ? undefined : parseIp(sourceIp);
  if (!address) return false;
  return cidrs.some((text) => {
    const cidr = parseCidr(text);
    return cidr !== undefined && cidrContains(cidr, address);
  });
}
