/**
 * The blocked address list, range by range, against IANA's IPv4 and IPv6 Special-Purpose Address
 * Registries: an address inside each range is refused, and public neighbours just outside are allowed.
 */
import { isPublicAddress } from '../../functions/media/public-address';

describe('isPublicAddress, per special-purpose range', () => {
  it.each([
    ['0.0.0.0/8', '0.1.2.3'],
    ['10.0.0.0/8', '10.255.255.254'],
    ['100.64.0.0/10', '100.127.255.254'],
    ['127.0.0.0/8', '127.0.0.1'],
    ['169.254.0.0/16', '169.254.169.254'],
    ['172.16.0.0/12', '172.20.0.1'],
    ['192.0.0.0/24 (IETF protocol assignments)', '192.0.0.9'],
    ['192.0.2.0/24 (TEST-NET-1)', '192.0.2.1'],
    ['192.31.196.0/24 (AS112-v4)', '192.31.196.1'],
    ['192.52.193.0/24 (AMT)', '192.52.193.1'],
    ['192.88.99.0/24 (6to4 relay anycast)', '192.88.99.2'],
    ['192.175.48.0/24 (AS112 direct delegation)', '192.175.48.1'],
    ['192.168.0.0/16', '192.168.0.1'],
    ['198.18.0.0/15 (benchmarking)', '198.19.255.1'],
    ['198.51.100.0/24 (TEST-NET-2)', '198.51.100.7'],
    ['203.0.113.0/24 (TEST-NET-3)', '203.0.113.7'],
    ['224.0.0.0/4 (multicast)', '239.255.255.250'],
    ['240.0.0.0/4 (reserved)', '240.0.0.1'],
    ['255.255.255.255/32 (broadcast)', '255.255.255.255'],
    ['::/128 (unspecified)', '::'],
    ['::1/128 (loopback)', '::1'],
    ['::/96 (IPv4-compatible)', '::8.8.8.8'],
    ['::ffff:0:0/96 (IPv4-mapped, judged as the IPv4 it carries)', '::ffff:10.0.0.1'],
    ['::ffff:0:0:0/96 (IPv4-translated)', '::ffff:0:8.8.8.8'],
    ['::ffff:0:0:0/96 (IPv4-translated, hex)', '::ffff:0:7f00:1'],
    ['64:ff9b::/96 (NAT64)', '64:ff9b::808:808'],
    ['64:ff9b:1::/48 (local-use translation)', '64:ff9b:1::1'],
    ['100::/64 (discard-only)', '100::1'],
    ['100:0:0:1::/64 (dummy prefix)', '100:0:0:1::1'],
    ['2001::/32 (Teredo)', '2001:0:4136:e378::1'],
    ['2001:1::1/128 (PCP anycast)', '2001:1::1'],
    ['2001:1::2/128 (TURN anycast)', '2001:1::2'],
    ['2001:2::/48 (benchmarking)', '2001:2::1'],
    ['2001:3::/32 (AMT)', '2001:3::1'],
    ['2001:4:112::/48 (AS112-v6)', '2001:4:112::1'],
    ['2001:10::/28 (ORCHID)', '2001:10::1'],
    ['2001:20::/28 (ORCHIDv2)', '2001:20::1'],
    ['2001:30::/28 (drone remote ID tags)', '2001:30::1'],
    ['2001:db8::/32 (documentation)', '2001:db8::1'],
    ['2002::/16 (6to4)', '2002:808:808::1'],
    ['2620:4f:8000::/48 (AS112 direct delegation)', '2620:4f:8000::1'],
    ['3fff::/20 (documentation)', '3fff:fff::1'],
    ['5f00::/16 (segment routing SIDs)', '5f00::1'],
    ['fc00::/7 (unique local)', 'fd00:ec2::254'],
    ['fe80::/10 (link-local)', 'fe80::1'],
    ['fec0::/10 (site-local)', 'fec0::1'],
    ['ff00::/8 (multicast)', 'ff02::1'],
    ['outside 2000::/3 (reserved by IETF)', '4000::1'],
    ['outside 2000::/3 (reserved by IETF, low)', '1::1'],
  ])('refuses %s: %s', (_range, address) => {
    // Act
    const allowed = isPublicAddress(address);

    // Assert
    expect(allowed).toBe(false);
  });

  it.each([
    ['just below 100.64.0.0/10', '100.63.255.254'],
    ['just above 100.64.0.0/10', '100.128.0.1'],
    ['just above 172.16.0.0/12', '172.32.0.1'],
    ['between 192.0.0.0/24 and 192.0.2.0/24', '192.0.1.1'],
    ['just above 198.18.0.0/15', '198.20.0.1'],
    ['a public resolver', '8.8.8.8'],
    ['a public address, IPv4-mapped', '::ffff:8.8.8.8'],
    ['just above 2001::/23', '2001:200::1'],
    ['just above 3fff::/20', '3fff:1000::1'],
    ['global unicast', '2606:4700::1111'],
    ['global unicast', '2a00:1450:4001::1'],
  ])('allows %s: %s', (_where, address) => {
    // Act
    const allowed = isPublicAddress(address);

    // Assert
    expect(allowed).toBe(true);
  });
});
