/**
 * The SDK's SigV4 signer as the service uses it, against known-good signatures: AWS's own documented
 * examples and test-suite vectors, and a Secrets Manager request whose signature was computed
 * independently (by the hand-written signer this module replaced, itself checked against AWS's vectors).
 */
import { presignUrl, signRequest } from '../../functions/aws/signer';
import { mediaUrlTtlSecondsFromEnv } from '../../functions/runtime/lifecycle-from-env';

const S3_EXAMPLE_CREDENTIALS = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const SUITE_CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};

describe('presignUrl', () => {
  it('reproduces the S3 documentation example (presigned GET of examplebucket/test.txt)', async () => {
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
    const url = await presignUrl(input);

    // Assert
    expect(url).toBe(
      'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256' +
        '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
        '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
        '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404',
    );
  });

  it('signs a PUT with its headers and the session token, with an encoded key, as before', async () => {
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
    const url = new URL(await presignUrl(input));

    // Assert
    expect(url.pathname).toBe('/bucket/results/a%2540b/t/0.png');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host');
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('token/with+chars=');
    expect(url.searchParams.get('X-Amz-Signature')).toBe(
      'aa3cc97cf9e321c5bfdadceb6fa89cde092b7643bac725b62b1ff849c32843d1',
    );
  });

  it.each([0, 604801, 1.5])('refuses a lifetime of %s seconds', async (expiresInSeconds) => {
    // Prepare
    const input = {
      method: 'GET',
      url: 'https://examplebucket.s3.amazonaws.com/test.txt',
      service: 's3',
      region: 'us-east-1',
      credentials: S3_EXAMPLE_CREDENTIALS,
      expiresInSeconds,
    };

    // Act
    const result = presignUrl(input);

    // Assert
    await expect(result).rejects.toThrow(RangeError);
  });
});

describe('signRequest', () => {
  it.each([
    [
      'get-vanilla',
      'https://example.amazonaws.com/',
      '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    ],
    [
      'get-vanilla-query-order-key-case',
      'https://example.amazonaws.com/?Param2=value2&Param1=value1',
      'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500',
    ],
  ])('reproduces the SigV4 test-suite vector %s', async (_name, url, signature) => {
    // Prepare
    const input = {
      method: 'GET',
      url,
      service: 'service',
      region: 'us-east-1',
      credentials: SUITE_CREDENTIALS,
      date: new Date('2015-08-30T12:36:00Z'),
    };

    // Act
    const headers = await signRequest(input);

    // Assert
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ' +
        `SignedHeaders=host;x-amz-date, Signature=${signature}`,
    );
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
  });

  it('signs the Secrets Manager GetSecretValue call with body, target and session token', async () => {
    // Prepare
    const input = {
      method: 'POST',
      url: 'https://secretsmanager.us-east-1.amazonaws.com/',
      headers: { 'X-Amz-Target': 'secretsmanager.GetSecretValue', 'Content-Type': 'application/x-amz-json-1.1' },
      body: '{"SecretId":"s"}',
      service: 'secretsmanager',
      region: 'us-east-1',
      credentials: { ...SUITE_CREDENTIALS, sessionToken: 'session' },
      date: new Date('2015-08-30T12:36:00Z'),
    };

    // Act
    const headers = await signRequest(input);

    // Assert
    expect(headers['x-amz-security-token']).toBe('session');
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/secretsmanager/aws4_request, ' +
        'SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, ' +
        'Signature=b225c48fead369baa03287c62f4b8526941820464a5b6159e00b0ab2471c65c4',
    );
  });
});

describe('signed URL lifetime (MEDIA_URL_TTL_SECONDS)', () => {
  it.each([
    [{}, 3600],
    [{ MEDIA_URL_TTL_SECONDS: '900', AWS_SESSION_TOKEN: 't' }, 900],
    [{ MEDIA_URL_TTL_SECONDS: '86400' }, 86400],
  ])('accepts %o as %i s', (env, expected) => {
    // Act
    const ttl = mediaUrlTtlSecondsFromEnv(env);

    // Assert
    expect(ttl).toBe(expected);
  });

  it.each([
    [{ MEDIA_URL_TTL_SECONDS: '7200', AWS_SESSION_TOKEN: 't' }, /1 to 3600 \(URLs signed with temporary credentials/],
    [{ MEDIA_URL_TTL_SECONDS: '604801' }, /1 to 604800/],
    [{ MEDIA_URL_TTL_SECONDS: 'soon' }, /MEDIA_URL_TTL_SECONDS must be a whole number/],
  ])('refuses %o at start', (env, message) => {
    // Act
    const act = () => mediaUrlTtlSecondsFromEnv(env);

    // Assert
    expect(act).toThrow(message);
  });
});
