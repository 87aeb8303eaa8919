/**
 * Which result URLs and addresses the service may download from, and how a file's first bytes name
 * its format.
 */
import { isPublicAddress } from '../../functions/media/public-address';
import { sniffType } from '../../functions/media/source';
import { refuseUrl, STRICT_SOURCE_POLICY, sourcePolicyFromEnv } from '../../functions/media/source-policy';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '198.18.0.1',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    'fd00:ec2::254',
    'fc00::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '2001:db8::1',
    'not an address',
  ])('refuses %s', (address) => {
    // Act
    const allowed = isPublicAddress(address);

    // Assert
    expect(allowed).toBe(false);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])('allows %s', (address) => {
    // Act
    const allowed = isPublicAddress(address);

    // Assert
    expect(allowed).toBe(true);
  });
});

describe('refuseUrl', () => {
  const policy = { insecureOrigins: ['http://127.0.0.1:3001'], allowedHosts: ['cdn.example', '*.media.example'] };

  it.each([
    ['http://cdn.example/a.png', /https only/],
    ['ftp://cdn.example/a.png', /https only/],
    ['https://user:pw@cdn.example/a.png', /credentials/],
    ['https://evil.example/a.png', /outside the allowlist/],
    ['https://media.example/a.png', /outside the allowlist/],
    ['https://cdn.example.evil/a.png', /outside the allowlist/],
    ['http://127.0.0.1:3002/a.png', /https only/],
  ])('refuses %s', (url, reason) => {
    // Act
    const refused = refuseUrl(new URL(url), policy);

    // Assert
    expect(refused).toMatch(reason);
  });

  it.each(['https://cdn.example/a.png', 'https://a.b.media.example/a.png', 'http://127.0.0.1:3001/files/x.png'])(
    'allows %s',
    (url) => {
      // Act
      const refused = refuseUrl(new URL(url), policy);

      // Assert
      expect(refused).toBeUndefined();
    },
  );

  it('refuses the Lambda runtime API by its host and port', () => {
    // Act
    const refused = refuseUrl(new URL('https://127.0.0.1:9001/2018-06-01/runtime/invocation/next'), {
      ...STRICT_SOURCE_POLICY,
      runtimeApi: '127.0.0.1:9001',
    });

    // Assert
    expect(refused).toBe('the Lambda runtime API');
  });
});

describe('sourcePolicyFromEnv', () => {
  it('reads the lists and the runtime API', () => {
    // Act
    const policy = sourcePolicyFromEnv({
      MEDIA_SOURCE_INSECURE_ORIGINS: 'http://127.0.0.1:3001, http://localhost:4000',
      MEDIA_SOURCE_HOSTS: 'CDN.example,*.media.example',
      AWS_LAMBDA_RUNTIME_API: '127.0.0.1:9001',
    });

    // Assert
    expect(policy).toEqual({
      insecureOrigins: ['http://127.0.0.1:3001', 'http://localhost:4000'],
      allowedHosts: ['cdn.example', '*.media.example'],
      runtimeApi: '127.0.0.1:9001',
    });
  });

  it.each(['http://127.0.0.0/8', 'http://127.0.0.1:3001/files', '127.0.0.1'])(
    'refuses an insecure origin that is not an exact origin: %s',
    (value) => {
      // Act
      const act = () => sourcePolicyFromEnv({ MEDIA_SOURCE_INSECURE_ORIGINS: value });

      // Assert
      expect(act).toThrow(/is not an origin/);
    },
  );
});

describe('sniffType', () => {
  const bytes = (...parts: (number[] | string)[]) =>
    Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part))));

  it.each([
    ['image', bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), 'image/png'],
    ['image', bytes([0xff, 0xd8, 0xff, 0xe0]), 'image/jpeg'],
    ['image', bytes('RIFF', [0, 0, 0, 0], 'WEBP'), 'image/webp'],
    ['image', bytes('<svg xmlns="http://www.w3.org/2000/svg">'), undefined],
    ['image', bytes('<!doctype html>'), undefined],
    ['image', bytes('GIF89a'), undefined],
    ['video', bytes([0, 0, 0, 0x18], 'ftypisom'), 'video/mp4'],
    ['video', bytes([0, 0, 0, 0x14], 'ftypqt  '), 'video/quicktime'],
    ['video', bytes([0, 0, 0, 0x08], 'wide'), 'video/quicktime'],
    ['video', bytes([0x1a, 0x45, 0xdf, 0xa3]), 'video/webm'],
    ['video', bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), undefined],
  ] as const)('%s %#: %s', (kind, prefix, expected) => {
    // Act
    const type = sniffType(prefix, kind);

    // Assert
    expect(type).toBe(expected);
  });
});
