/**
 * The SigV4 signer against AWS's published vectors. A signer that only agrees with itself proves
 * nothing; these strings come from AWS documentation and the AWS SigV4 test suite.
 */
import { amzDate, presignUrl, sha256Hex, signRequest, uriEncode } from '../../functions/aws/sigv4';

const S3_EXAMPLE_CREDENTIALS = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const SUITE_CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describe('presignUrl', () => {
  it('reproduces the S3 documentation example (presigned GET of examplebucket/test.txt)', () => {
    // Prepare
    const input = {
      method: 'GET',
      url: 'https://examplebucket.s3.amazonaws.com/test.txt',
      service: 's3',
      region: 'us-east-1',
      credentials: S3_EXAMPLE_CREDENTIALS,
      date: new Date('2013-05-24T00:00:00Z'),
      expiresInSeconds: 86400,
    };

    // Act
    const url = presignUrl(input);

    // Assert
    expect(url).toBe(
      'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256' +
        '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
        '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
        '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404',
    );
  });

  it('signs extra headers and the session token into the query', () => {
    // Prepare
    const input = {
      method: 'PUT',
      url: 'http://127.0.0.1:9000/bucket/results/a%2540b/t/0.png',
      service: 's3',
      region: 'eu-west-1',
      credentials: { ...S3_EXAMPLE_CREDENTIALS, sessionToken: 'token/with+chars=' },
      date: new Date('2026-01-02T03:04:05Z'),
      expiresInSeconds: 900,
      signedHeaders: { 'Content-Type': 'image/png' },
    };

    // Act
    const url = new URL(presignUrl(input));

    // Assert
    expect(url.pathname).toBe('/bucket/results/a%2540b/t/0.png');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host');
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('token/with+chars=');
    expect(url.searchParams.get('X-Amz-Credential')).toBe('AKIAIOSFODNN7EXAMPLE/20260102/eu-west-1/s3/aws4_request');
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a lifetime outside what S3 accepts', () => {
    // Prepare
    const input = {
      method: 'GET',
      url: 'https://examplebucket.s3.amazonaws.com/test.txt',
      service: 's3',
      region: 'us-east-1',
      credentials: S3_EXAMPLE_CREDENTIALS,
      expiresInSeconds: 604801,
    };

    // Act
    const act = () => presignUrl(input);

    // Assert
    expect(act).toThrow(RangeError);
  });
});

describe('signRequest', () => {
  it('reproduces the S3 documentation example (GET Object with a Range header)', () => {
    // Prepare
    const input = {
      method: 'GET',
      url: 'https://examplebucket.s3.amazonaws.com/test.txt',
      headers: { Range: 'bytes=0-9', 'x-amz-content-sha256': EMPTY_SHA256 },
      payloadHash: EMPTY_SHA256,
      service: 's3',
      region: 'us-east-1',
      credentials: S3_EXAMPLE_CREDENTIALS,
      date: new Date('2013-05-24T00:00:00Z'),
    };

    // Act
    const headers = signRequest(input);

    // Assert
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, ' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('reproduces the test-suite vector get-vanilla', () => {
    // Prepare
    const input = {
      method: 'GET',
      url: 'https://example.amazonaws.com/',
      service: 'service',
      region: 'us-east-1',
      credentials: SUITE_CREDENTIALS,
      date: new Date('2015-08-30T12:36:00Z'),
    };

    // Act
    const headers = signRequest(input);

    // Assert
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ' +
        'SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
    expect(headers.host).toBe('example.amazonaws.com');
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
  });

  it('reproduces the test-suite vector get-vanilla-query-order-key-case (query sorted)', () => {
    // Prepare
    const input = {
      method: 'GET',
      url: 'https://example.amazonaws.com/?Param2=value2&Param1=value1',
      service: 'service',
      region: 'us-east-1',
      credentials: SUITE_CREDENTIALS,
      date: new Date('2015-08-30T12:36:00Z'),
    };

    // Act
    const headers = signRequest(input);

    // Assert
    expect(headers.authorization).toMatch(
      /Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500$/,
    );
  });

  it('adds and signs the session token of temporary credentials', () => {
    // Prepare
    const input = {
      method: 'POST',
      url: 'https://secretsmanager.us-east-1.amazonaws.com/',
      headers: { 'X-Amz-Target': 'secretsmanager.GetSecretValue' },
      body: '{"SecretId":"s"}',
      service: 'secretsmanager',
      region: 'us-east-1',
      credentials: { ...SUITE_CREDENTIALS, sessionToken: 'session' },
      date: new Date('2015-08-30T12:36:00Z'),
    };

    // Act
    const headers = signRequest(input);

    // Assert
    expect(headers['x-amz-security-token']).toBe('session');
    expect(headers.authorization).toContain('SignedHeaders=host;x-amz-date;x-amz-security-token;x-amz-target,');
  });
});

describe('helpers', () => {
  it('formats the signing time and encodes as SigV4 requires', () => {
    // Prepare
    const date = new Date('2013-05-24T00:00:00.123Z');

    // Act
    const formatted = amzDate(date);
    const encoded = uriEncode("a b/c*!'()~");

    // Assert
    expect(formatted).toBe('20130524T000000Z');
    expect(encoded).toBe('a%20b%2Fc%2A%21%27%28%29~');
    expect(sha256Hex('')).toBe(EMPTY_SHA256);
  });
});
