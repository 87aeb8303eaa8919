import { formatCidr, isAllowed, normalizeCidr, parseCidr, parseIp } from '../../functions/core/cidr';

describe('parseIp', () => {
  it.each([
    ['0.0.0.0', 4, 0n],
    ['255.255.255.255', 4, 0xffffffffn],
    ['192.0.2.1', 4, 0xc0000201n],
    ['::', 6, 0n],
    ['::1', 6, 1n],
    ['2001:db8::1', 6, 0x20010db8000000000000000000000001n],
    ['2001:DB8:0:0:0:0:0:1', 6, 0x20010db8000000000000000000000001n],
    ['1:2:3:4:5:6:7:8', 6, 0x00010002000300040005000600070008n],
    ['1::', 6, 0x00010000000000000000000000000000n],
    ['64:ff9b::192.0.2.1', 6, 0x0064ff9b0000000000000000c0000201n],
  ])('parses %s', (text, family, value) => {
    // Act
    const parsed = parseIp(text);

    // Assert
    expect(parsed).toEqual({ family, value });
  });

  it.each([
    ['::ffff:192.0.2.1', 0xc0000201n],
    ['::FFFF:c000:0201', 0xc0000201n],
    ['0:0:0:0:0:ffff:192.0.2.1', 0xc0000201n],
  ])('reads the IPv4-mapped address %s as IPv4', (text, value) => {
    // Act
    const parsed = parseIp(text);

    // Assert
    expect(parsed).toEqual({ family: 4, value });
  });

  it.each([
    '',
    ' 192.0.2.1',
    '192.0.2.1 ',
    '192.0.2',
    '192.0.2.1.5',
    '192.0.2.256',
    '192.0.2.01',
    '192.0.2.-1',
    '192.0.2.1a',
    '0x7f.0.0.1',
    ':::',
    '1:::2',
    '1::2::3',
    ':1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7::8',
    '12345::',
    'g::1',
    'fe80::1%eth0',
    '::ffff:192.0.2',
    '::ffff:192.0.2.300',
    '1.2.3.4::',
    '::1/128',
    'localhost',
  ])('rejects %j', (text) => {
    // Act
    const parsed = parseIp(text);

    // Assert
    expect(parsed).toBeUndefined();
  });
});

describe('parseCidr and normalizeCidr', () => {
  it.each([
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['192.0.2.7', '192.0.2.7/32'],
    ['192.0.2.7/32', '192.0.2.7/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:DB8::/32', '2001:db8::/32'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1/128'],
    ['::/0', '::/0'],
    ['::1/128', '::1/128'],
    ['::ffff:192.0.2.0/120', '192.0.2.0/24'],
    ['::ffff:0:0/96', '0.0.0.0/0'],
    ['::ffff:192.0.2.9', '192.0.2.9/32'],
  ])('normalizes %s to %s', (text, canonical) => {
    // Act
    const normalized = normalizeCidr(text);

    // Assert
    expect(normalized).toBe(canonical);
  });

  it.each([
    '10.0.0.1/8',
    '10.0.0.0/33',
    '10.0.0.0/-1',
    '10.0.0.0/08',
    '10.0.0.0/',
    '10.0.0.0/8/8',
    '10.0.0.0/ 8',
    '/8',
    '2001:db8::/129',
    '2001:db8::1/64',
    'not-an-ip/8',
    '',
  ])('rejects %j', (text) => {
    // Act
    const parsed = parseCidr(text);

    // Assert
    expect(parsed).toBeUndefined();
  });

  it('formats a parsed block back to its canonical text', () => {
    // Prepare
    const parsed = parseCidr('2001:0db8:0000:0000:0000:0000:0000:0000/48');

    // Act
    const text = parsed && formatCidr(parsed);

    // Assert
    expect(text).toBe('2001:db8::/48');
  });
});

describe('isAllowed', () => {
  it('allows every address (and no address) when the list is empty', () => {
    // Act
    const results = [isAllowed('192.0.2.1', []), isAllowed('2001:db8::1', []), isAllowed(undefined, [])];

    // Assert
    expect(results).toEqual([true, true, true]);
  });

  it.each([
    ['198.51.100.7', ['198.51.100.0/24'], true],
    ['198.51.101.7', ['198.51.100.0/24'], false],
    ['198.51.100.7', ['198.51.100.7/32'], true],
    ['198.51.100.8', ['198.51.100.7/32'], false],
    ['198.51.100.7', ['198.51.100.7'], true],
    ['203.0.113.255', ['0.0.0.0/0'], true],
    ['10.1.2.3', ['192.0.2.0/24', '10.0.0.0/8'], true],
    ['2001:db8:abcd::1', ['2001:db8::/32'], true],
    ['2001:db9::1', ['2001:db8::/32'], false],
    ['2001:db8::1', ['2001:db8::1/128'], true],
    ['2001:db8::2', ['2001:db8::1/128'], false],
    ['2001:db8::2', ['::/0'], true],
  ])('%s against %j -> %s', (ip, cidrs, expected) => {
    // Act
    const allowed = isAllowed(ip, cidrs);

    // Assert
    expect(allowed).toBe(expected);
  });

  it('matches an IPv4-mapped IPv6 caller against its IPv4 rule', () => {
    // Act
    const results = [
      isAllowed('::ffff:198.51.100.7', ['198.51.100.0/24']),
      isAllowed('::ffff:c633:6407', ['198.51.100.7/32']),
      isAllowed('::ffff:198.51.101.7', ['198.51.100.0/24']),
    ];

    // Assert
    expect(results).toEqual([true, true, false]);
  });

  it('matches an IPv4 caller against a rule written in IPv4-mapped form', () => {
    // Act
    const allowed = isAllowed('198.51.100.7', ['::ffff:198.51.100.0/120']);

    // Assert
    expect(allowed).toBe(true);
  });

  it('keeps the families apart: ::/0 admits no IPv4 caller and 0.0.0.0/0 no IPv6 caller', () => {
    // Act
    const results = [isAllowed('192.0.2.1', ['::/0']), isAllowed('2001:db8::1', ['0.0.0.0/0'])];

    // Assert
    expect(results).toEqual([false, false]);
  });

  it('refuses a missing or malformed source address when a list is set', () => {
    // Act
    const results = [
      isAllowed(undefined, ['0.0.0.0/0']),
      isAllowed('', ['0.0.0.0/0']),
      isAllowed('192.0.2.1, 10.0.0.1', ['0.0.0.0/0']),
    ];

    // Assert
    expect(results).toEqual([false, false, false]);
  });

  it('ignores malformed entries instead of widening access', () => {
    // Act
    const results = [isAllowed('10.0.0.1', ['10.0.0.1/8']), isAllowed('10.0.0.1', ['garbage', '10.0.0.0/8'])];

    // Assert
    expect(results).toEqual([false, true]);
  });
});
