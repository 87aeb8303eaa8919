/**
 * Issue 27, the pure parts of uploads: references, keys, the magic-number check, the request rules,
 * the SigV4 POST policy (checked against the signature S3's documentation gives for its example), and
 * the settings as the environment contract reads them.
 */

import { postPolicySignature, presignPost } from '../../functions/aws/signer';
import { ValidationError } from '../../functions/core/errors';
import {
  checkedUploadKey,
  DEFAULT_MAX_OPEN_UPLOADS,
  DEFAULT_UPLOAD_MAX_BYTES,
  DEFAULT_UPLOAD_TTL_SECONDS,
  isUploadReference,
  sniffUploadType,
  uploadIdOf,
  uploadKey,
  uploadReference,
  validateUploadRequest,
} from '../../functions/core/uploads';
import {
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_S3,
  AWS_REGION,
  environmentOf,
  MAX_OPEN_UPLOADS,
  setting,
  UPLOAD_MAX_BYTES,
  UPLOAD_TTL_SECONDS,
  UPLOADS_BUCKET,
  UPLOADS_S3_ENDPOINT,
} from '../../functions/environment/environment';
import { providerReferenceTtlSeconds } from '../../functions/lifecycle/uploads';
import { uploadsOptionsFromEnv } from '../../functions/media/uploads';
import { uploadSettingsFromEnv } from '../../functions/runtime/uploads-from-env';

const ID = '0f6c2a7e-1b2c-4d3e-8f90-123456789abc';

function detailsOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.details;
    throw error;
  }
  throw new Error('expected a ValidationError');
}

describe('upload references', () => {
  test('upload://<uuid> is a reference with its id; anything else in the scheme has none', () => {
    // Act
    const parsed = [uploadReference(ID), 'upload://nope', 'upload://', 'https://example.com/a.png'].map((value) => [
      isUploadReference(value),
      uploadIdOf(value),
    ]);

    // Assert
    expect(parsed).toEqual([
      [true, ID],
      [true, undefined],
      [true, undefined],
      [false, undefined],
    ]);
  });

  test("an upload's key is under its owner, whose id is encoded as one path segment", () => {
    // Act
    const key = uploadKey('a/b@c', ID);

    // Assert
    expect(key).toBe(`uploads/a%2Fb%40c/${ID}`);
  });

  test("the checked copy's key is a sibling of the upload's, named by the version, which no upload form names", () => {
    // Act
    const key = checkedUploadKey('a/b@c', ID, '"9b2cf535f27731c974343645a3985328"');
    const multipart = checkedUploadKey('u', ID, '"d41d8cd98f00b204e9800998ecf8427e-2"');

    // Assert
    expect(key).toBe(`uploads/a%2Fb%40c/${ID}.checked-9b2cf535f27731c974343645a3985328`);
    expect(key).not.toBe(uploadKey('a/b@c', ID));
    expect(multipart).toBe(`uploads/u/${ID}.checked-d41d8cd98f00b204e9800998ecf8427e-2`);
  });
});

describe("the lifetime of the provider's reference URL", () => {
  const createdAt = '2026-11-27T10:00:00.000Z';
  const at = (minutes: number) => new Date(Date.parse(createdAt) + minutes * 60_000);
  const ROLE = 3600;
  const KEYS = 604_800;

  test('it lives as long as the task may still live, a minute more, never under 15 minutes, never past what the credentials allow', () => {
    // Act
    const ttls = [
      providerReferenceTtlSeconds({ createdAt }, { now: at(0), maxPendingMs: 30 * 60_000, maxUrlTtlSeconds: ROLE }),
      providerReferenceTtlSeconds({ createdAt }, { now: at(29), maxPendingMs: 30 * 60_000, maxUrlTtlSeconds: ROLE }),
      providerReferenceTtlSeconds({ createdAt }, { now: at(0), maxPendingMs: 3 * 3_600_000, maxUrlTtlSeconds: ROLE }),
      providerReferenceTtlSeconds({ createdAt }, { now: at(0), maxPendingMs: 3 * 3_600_000, maxUrlTtlSeconds: KEYS }),
    ];

    // Assert
    expect(ttls).toEqual([30 * 60 + 60, 900, ROLE, 3 * 3600 + 60]);
  });
});

describe('the magic-number check', () => {
  test('PNG, JPEG and WebP are told by their first bytes; text and SVG are none of them', () => {
    // Prepare
    const samples = {
      png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
      jpeg: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]),
      webp: Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'),
      text: Buffer.from('this is text, not a PNG'),
      svg: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
      riffWave: Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1'),
    };

    // Act
    const types = Object.fromEntries(Object.entries(samples).map(([name, bytes]) => [name, sniffUploadType(bytes)]));

    // Assert
    expect(types).toEqual({
      png: 'image/png',
      jpeg: 'image/jpeg',
      webp: 'image/webp',
      text: undefined,
      svg: undefined,
      riffWave: undefined,
    });
  });
});

describe('POST /api/ai/uploads bodies', () => {
  test('a PNG, JPEG or WebP within the limit is accepted', () => {
    // Act
    const request = validateUploadRequest({ contentType: 'image/webp', size: 1000 }, 1000);

    // Assert
    expect(request).toEqual({ contentType: 'image/webp', size: 1000 });
  });

  test('a bad type, a size out of range and unknown fields are each named', () => {
    // Act
    const details = detailsOf(() => validateUploadRequest({ contentType: 'image/gif', size: 1001, extra: 1 }, 1000));
    const empty = detailsOf(() => validateUploadRequest({ size: 0 }, 1000));
    const notObject = detailsOf(() => validateUploadRequest([], 1000));

    // Assert
    expect(details).toEqual({
      fieldErrors: {
        extra: ['Unknown field "extra"'],
        contentType: ['Must be one of image/png, image/jpeg, image/webp'],
        size: ['Must be at most 1000 bytes'],
      },
      formErrors: [],
    });
    expect(empty).toEqual({
      fieldErrors: { contentType: ['Required'], size: ['Must be at least 1'] },
      formErrors: [],
    });
    expect(notObject).toEqual({ fieldErrors: {}, formErrors: ['Request body must be a JSON object'] });
  });
});

describe('the SigV4 POST policy', () => {
  test("the policy signature is S3's: the example of the S3 documentation signs to its published value", async () => {
    // Prepare
    // "Example: Browser-Based Upload using HTTP POST (Using AWS Signature Version 4)", Amazon S3 API Reference.
    const policy =
      'eyAiZXhwaXJhdGlvbiI6ICIyMDE1LTEyLTMwVDEyOjAwOjAwLjAwMFoiLA0KICAiY29uZGl0aW9ucyI6IFsNCiAgICB7ImJ1Y2tldCI6ICJzaWd2NGV4YW1wbGVidWNrZXQifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRrZXkiLCAidXNlci91c2VyMS8iXSwNCiAgICB7ImFjbCI6ICJwdWJsaWMtcmVhZCJ9LA0KICAgIHsic3VjY2Vzc19hY3Rpb25fcmVkaXJlY3QiOiAiaHR0cDovL3NpZ3Y0ZXhhbXBsZWJ1Y2tldC5zMy5hbWF6b25hd3MuY29tL3N1Y2Nlc3NmdWxfdXBsb2FkLmh0bWwifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRDb250ZW50LVR5cGUiLCAiaW1hZ2UvIl0sDQogICAgeyJ4LWFtei1tZXRhLXV1aWQiOiAiMTQzNjUxMjM2NTEyNzQifSwNCiAgICB7IngtYW16LXNlcnZlci1zaWRlLWVuY3J5cHRpb24iOiAiQUVTMjU2In0sDQogICAgWyJzdGFydHMtd2l0aCIsICIkeC1hbXotbWV0YS10YWciLCAiIl0sDQoNCiAgICB7IngtYW16LWNyZWRlbnRpYWwiOiAiQUtJQUlPU0ZPRE5ON0VYQU1QTEUvMjAxNTEyMjkvdXMtZWFzdC0xL3MzL2F3czRfcmVxdWVzdCJ9LA0KICAgIHsieC1hbXotYWxnb3JpdGhtIjogIkFXUzQtSE1BQy1TSEEyNTYifSwNCiAgICB7IngtYW16LWRhdGUiOiAiMjAxNTEyMjlUMDAwMDAwWiIgfQ0KICBdDQp9';

    // Act
    const signature = await postPolicySignature(policy, {
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
      date: new Date('2015-12-29T00:00:00Z'),
    });

    // Assert
    expect(signature).toBe('8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e');
  });

  test('the form carries the fields, the credential scope, the session token and a policy that names them all', async () => {
    // Act
    const post = await presignPost({
      url: 'https://media.s3.eu-west-1.amazonaws.com/',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'token' },
      date: new Date('2026-01-02T03:04:05Z'),
      expiresAt: new Date('2026-01-02T03:19:05Z'),
      fields: { key: `uploads/u/${ID}`, 'Content-Type': 'image/png' },
      conditions: [{ bucket: 'media' }, ['content-length-range', 1, 100]],
    });

    // Assert
    const policy = JSON.parse(Buffer.from(post.fields.Policy ?? '', 'base64').toString('utf8')) as unknown;
    expect(post.fields).toMatchObject({
      key: `uploads/u/${ID}`,
      'Content-Type': 'image/png',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': 'AKID/20260102/eu-west-1/s3/aws4_request',
      'X-Amz-Date': '20260102T030405Z',
      'X-Amz-Security-Token': 'token',
      'X-Amz-Signature': expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(policy).toEqual({
      expiration: '2026-01-02T03:19:05.000Z',
      conditions: [
        { key: `uploads/u/${ID}` },
        { 'Content-Type': 'image/png' },
        { 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256' },
        { 'X-Amz-Credential': 'AKID/20260102/eu-west-1/s3/aws4_request' },
        { 'X-Amz-Date': '20260102T030405Z' },
        { 'X-Amz-Security-Token': 'token' },
        { bucket: 'media' },
        ['content-length-range', 1, 100],
      ],
    });
  });
});

describe('uploads settings, read through the environment contract', () => {
  test('unset settings take their defaults; set ones are read by the contract names', () => {
    // Prepare
    const env = environmentOf(
      setting(UPLOAD_MAX_BYTES, 1024),
      setting(UPLOAD_TTL_SECONDS, 3600),
      setting(MAX_OPEN_UPLOADS, 7),
      setting(UPLOADS_BUCKET, 'media-bucket'),
      setting(AWS_REGION, 'eu-west-1'),
    );

    // Act
    const defaults = uploadSettingsFromEnv({});
    const set = uploadSettingsFromEnv(env);
    const unset = uploadsOptionsFromEnv({});
    const deployed = uploadsOptionsFromEnv(env);

    // Assert
    expect(defaults).toEqual({
      maxBytes: DEFAULT_UPLOAD_MAX_BYTES,
      ttlSeconds: DEFAULT_UPLOAD_TTL_SECONDS,
      maxOpen: DEFAULT_MAX_OPEN_UPLOADS,
    });
    expect(set).toEqual({ maxBytes: 1024, ttlSeconds: 3600, maxOpen: 7 });
    expect(unset).toBeUndefined();
    expect(deployed).toEqual({ bucket: 'media-bucket', region: 'eu-west-1' });
  });

  test('the local stand-in wins over LocalStack S3 endpoints; a bad setting fails naming its variable', () => {
    // Prepare
    const local = environmentOf(
      setting(UPLOADS_BUCKET, 'local-uploads'),
      setting(UPLOADS_S3_ENDPOINT, 'http://127.0.0.1:3000'),
      setting(AWS_ENDPOINT_URL_S3, 'http://localhost:4566'),
    );
    const localstack = environmentOf(
      setting(UPLOADS_BUCKET, 'media-bucket'),
      setting(AWS_ENDPOINT_URL, 'http://localhost:4566'),
    );

    // Act
    const standIn = uploadsOptionsFromEnv(local)?.endpoint;
    const localstackEndpoint = uploadsOptionsFromEnv(localstack)?.endpoint;
    const bad = () => uploadSettingsFromEnv({ [UPLOAD_MAX_BYTES.name]: '20MB' });

    // Assert
    expect(standIn).toBe('http://127.0.0.1:3000');
    expect(localstackEndpoint).toBe('http://localhost:4566');
    expect(bad).toThrow(/^UPLOAD_MAX_BYTES must be a whole number/);
  });
});
