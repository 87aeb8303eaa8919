import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { authorizeKey } from '../../functions/auth/authorize-key';
import { createAuthorizerHandler, wholeApiArn } from '../../functions/authorizer/handler';
import { hashApiKey } from '../../functions/core/api-key';
import { ForbiddenError, UnauthorizedError, UsageError } from '../../functions/core/errors';
import { usageKeyOf } from '../../functions/core/rate-plan';
import { revokeApiKey, rotateApiKey } from '../../functions/money/key-end';
import { putApiKey } from '../../functions/money/key-issue';
import type { LogFields, Logger } from '../../functions/observability/logger';
import { ApiKeyNotFoundError, ApiKeyStateError, getApiKeyByHash, listApiKeys } from '../../functions/store/api-keys';
import { requestIdentity } from '../../local/gateway';
import { createTestStore, type TestStore } from '../support/dynamodb';

const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123defg/prod/POST/api/ai/image/generate';
const WHOLE_API = 'arn:aws:execute-api:eu-west-1:123456789012:abc123defg/prod/*/*';
const T0 = new Date('2030-01-01T00:00:00.000Z');
const T0_SECONDS = T0.getTime() / 1000;

interface EventOptions {
  authorization?: string;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  sourceIp?: string;
  methodArn?: string;
}

function event(opts: EventOptions): APIGatewayRequestAuthorizerEvent {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.authorization !== undefined) headers.Authorization = opts.authorization;
  return {
    type: 'REQUEST',
    methodArn: opts.methodArn ?? METHOD_ARN,
    resource: '/api/ai/image/generate',
    path: '/api/ai/image/generate',
    httpMethod: 'POST',
    headers,
    multiValueHeaders:
      opts.multiValueHeaders ?? Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123defg',
      authorizer: undefined,
      protocol: 'HTTP/1.1',
      httpMethod: 'POST',
      path: '/prod/api/ai/image/generate',
      stage: 'prod',
      requestId: 'req-1',
      requestTimeEpoch: T0.getTime(),
      resourceId: 'res1',
      resourcePath: '/api/ai/image/generate',
      identity: requestIdentity(opts.sourceIp ?? '198.51.100.7', 'jest'),
    },
  };
}

/** Resolves to the value or the error, so a refusal can be taken in Act and asserted later. */
function settle<T>(promise: Promise<T>): Promise<T | unknown> {
  return promise.catch((error: unknown) => error);
}

const UNAUTHORIZED = new Error('Unauthorized');

function policy(effect: 'Allow' | 'Deny') {
  return { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: WHOLE_API }] };
}

function captureLogger(lines: LogFields[]): Logger {
  const write =
    (level: string) =>
    (message: string, fields: LogFields = {}) => {
      lines.push({ level, message, ...fields });
    };
  const logger: Logger = {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    child: () => logger,
  };
  return logger;
}

describe('API keys and the REQUEST authorizer on DynamoDB Local', () => {
  let store: TestStore;
  let clock: Date;
  let logs: LogFields[];
  let handler: (e: APIGatewayRequestAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;

  beforeAll(async () => {
    store = await createTestStore();
  });

  afterAll(async () => {
    await store.dispose();
  });

  beforeEach(() => {
    clock = T0;
    logs = [];
    handler = createAuthorizerHandler({ store: () => store, now: () => clock, logger: captureLogger(logs) });
  });

  it('allows a new key with a whole-API policy and { credential, userId, keyId } context, then refuses it once revoked', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-1', name: 'ci', now: T0 });

    // Act
    const allowed = await handler(event({ authorization: `Bearer ${key.apiKey}` }));
    const revoked = await revokeApiKey(store, { keyId: key.keyId, now: T0 });
    const afterRevoke = await settle(handler(event({ authorization: `Bearer ${key.apiKey}` })));

    // Assert
    expect(allowed).toStrictEqual({
      principalId: 'user-1',
      policyDocument: policy('Allow'),
      context: { credential: 'key', userId: 'user-1', keyId: key.keyId },
      usageIdentifierKey: usageKeyOf(store.tableName, { credential: 'key', keyId: key.keyId }),
    });
    expect(revoked).toEqual({ keyId: key.keyId, userId: 'user-1', revokedAt: T0_SECONDS, alreadyRevoked: false });
    expect(afterRevoke).toEqual(UNAUTHORIZED);
  });

  it('puts expiresAt (epoch seconds) in the context and refuses the key from that second on', async () => {
    // Prepare
    const expiresAt = T0_SECONDS + 3600;
    const key = await putApiKey(store, { userId: 'user-exp', name: 'expiring', expiresAt, now: T0 });
    const request = event({ authorization: `Bearer ${key.apiKey}` });

    // Act
    clock = new Date(expiresAt * 1000 - 1);
    const lastMoment = await handler(request);
    clock = new Date(expiresAt * 1000);
    const atExpiry = await settle(handler(request));

    // Assert
    expect(lastMoment).toStrictEqual({
      principalId: 'user-exp',
      policyDocument: policy('Allow'),
      context: { credential: 'key', userId: 'user-exp', keyId: key.keyId, expiresAt },
      usageIdentifierKey: usageKeyOf(store.tableName, { credential: 'key', keyId: key.keyId }),
    });
    expect(atExpiry).toEqual(UNAUTHORIZED);
  });

  it('names a usage key per API key: two keys of one account take from two buckets', async () => {
    // Prepare
    const first = await putApiKey(store, { userId: 'user-usage-a', name: 'one', now: T0 });
    const second = await putApiKey(store, { userId: 'user-usage-a', name: 'two', now: T0 });
    const other = await putApiKey(store, { userId: 'user-usage-b', name: 'one', now: T0 });

    // Act
    const [a1, a2, b] = await Promise.all(
      [first, second, other].map((key) => handler(event({ authorization: `Bearer ${key.apiKey}` }))),
    );

    // Assert
    expect(a1?.usageIdentifierKey).toBe(usageKeyOf(store.tableName, { credential: 'key', keyId: first.keyId }));
    expect(a2?.usageIdentifierKey).toBe(usageKeyOf(store.tableName, { credential: 'key', keyId: second.keyId }));
    expect(a2?.usageIdentifierKey).not.toBe(a1?.usageIdentifierKey);
    expect(b?.usageIdentifierKey).toBe(usageKeyOf(store.tableName, { credential: 'key', keyId: other.keyId }));
    expect(a1?.usageIdentifierKey).toMatch(/^gsu_[0-9a-f]{64}$/);
  });

  it('answers a valid key from outside its allowlist with a whole-API Deny, judged on sourceIp only', async () => {
    // Prepare
    const key = await putApiKey(store, {
      userId: 'user-ip',
      name: 'office',
      allowedCidrs: ['198.51.100.0/24', '2001:db8::/32'],
      now: T0,
    });
    const authorization = `Bearer ${key.apiKey}`;

    // Act
    const fromV4 = await handler(event({ authorization, sourceIp: '198.51.100.200' }));
    const fromMapped = await handler(event({ authorization, sourceIp: '::ffff:198.51.100.9' }));
    const fromV6 = await handler(event({ authorization, sourceIp: '2001:db8:1::42' }));
    const outside = await handler(event({ authorization, sourceIp: '203.0.113.9' }));
    const spoofed = await handler(
      event({ authorization, sourceIp: '203.0.113.9', headers: { 'X-Forwarded-For': '198.51.100.7' } }),
    );

    // Assert
    expect([fromV4, fromMapped, fromV6].map((r) => r.policyDocument)).toEqual([
      policy('Allow'),
      policy('Allow'),
      policy('Allow'),
    ]);
    expect(outside).toStrictEqual({ principalId: 'user-ip', policyDocument: policy('Deny') });
    expect(spoofed).toStrictEqual({ principalId: 'user-ip', policyDocument: policy('Deny') });
  });

  it("behind the distribution, judges the viewer's address when the origin secret vouches for it, and sourceIp otherwise", async () => {
    // Prepare
    const behindDistribution = createAuthorizerHandler({
      store: () => store,
      now: () => clock,
      logger: captureLogger([]),
      originSecret: async () => 'origin-secret-value',
    });
    const key = await putApiKey(store, { userId: 'user-cf', name: 'cf', allowedCidrs: ['203.0.113.0/24'], now: T0 });
    const edge = '130.176.98.1';
    const request = (headers: Record<string, string>, sourceIp = edge) =>
      behindDistribution(event({ authorization: `Bearer ${key.apiKey}`, headers, sourceIp }));

    // Act
    const vouched = await request({ 'X-Viewer-Address': '203.0.113.7', 'X-Origin-Verify': 'origin-secret-value' });
    const forged = await request({ 'X-Viewer-Address': '203.0.113.7', 'X-Origin-Verify': 'a-guess' });
    const unsigned = await request({ 'X-Viewer-Address': '203.0.113.7' });
    const garbage = await request({
      'X-Viewer-Address': '203.0.113.7, 10.0.0.1',
      'X-Origin-Verify': 'origin-secret-value',
    });
    const direct = await request({}, '203.0.113.8');
    const localStack = await handler(
      event({
        authorization: `Bearer ${key.apiKey}`,
        headers: { 'X-Viewer-Address': '203.0.113.7', 'X-Origin-Verify': 'origin-secret-value' },
        sourceIp: edge,
      }),
    );

    // Assert
    expect(vouched).toMatchObject({
      policyDocument: policy('Allow'),
      context: { keyId: key.keyId, callerIp: '203.0.113.7' },
    });
    expect(forged).toStrictEqual({ principalId: 'user-cf', policyDocument: policy('Deny') });
    expect(unsigned).toStrictEqual({ principalId: 'user-cf', policyDocument: policy('Deny') });
    expect(garbage).toStrictEqual({ principalId: 'user-cf', policyDocument: policy('Deny') });
    expect(direct).toMatchObject({ policyDocument: policy('Allow') });
    expect(direct?.context).not.toHaveProperty('callerIp');
    expect(localStack).toStrictEqual({ principalId: 'user-cf', policyDocument: policy('Deny') });
  });

  it('refuses a revoked key with 401 (not 403) even from outside its allowlist', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-r', name: 'r', allowedCidrs: ['10.0.0.0/8'], now: T0 });
    await revokeApiKey(store, { keyId: key.keyId, now: T0 });

    // Act
    const result = handler(event({ authorization: `Bearer ${key.apiKey}`, sourceIp: '203.0.113.9' }));

    // Assert
    await expect(result).rejects.toThrow(new Error('Unauthorized'));
  });

  it('rotation with a grace period: both keys work until the grace ends, then only the new one', async () => {
    // Prepare
    const expiresAt = T0_SECONDS + 86_400;
    const old = await putApiKey(store, {
      userId: 'user-rot',
      name: 'deploy',
      allowedCidrs: ['198.51.100.0/24'],
      expiresAt,
      now: T0,
    });

    // Act
    const rotated = await rotateApiKey(store, { keyId: old.keyId, graceSeconds: 60, now: T0 });
    clock = new Date((T0_SECONDS + 59) * 1000);
    const oldInGrace = await handler(event({ authorization: `Bearer ${old.apiKey}` }));
    clock = new Date((T0_SECONDS + 60) * 1000);
    const oldAfterGrace = await settle(handler(event({ authorization: `Bearer ${old.apiKey}` })));
    const fresh = await handler(event({ authorization: `Bearer ${rotated.issued.apiKey}` }));

    // Assert
    expect(rotated.issued).toMatchObject({
      userId: 'user-rot',
      name: 'deploy',
      allowedCidrs: ['198.51.100.0/24'],
      expiresAt,
      rotatedFrom: old.keyId,
    });
    expect(rotated.issued.apiKey).not.toBe(old.apiKey);
    expect(rotated.previous).toEqual({ keyId: old.keyId, expiresAt: T0_SECONDS + 60 });
    expect(oldInGrace.context).toStrictEqual({
      credential: 'key',
      userId: 'user-rot',
      keyId: old.keyId,
      expiresAt: T0_SECONDS + 60,
    });
    expect(oldAfterGrace).toEqual(UNAUTHORIZED);
    expect(fresh.context).toStrictEqual({
      credential: 'key',
      userId: 'user-rot',
      keyId: rotated.issued.keyId,
      expiresAt,
    });
  });

  it('rotation without grace revokes the old key at once; a replaced or revoked key cannot be rotated', async () => {
    // Prepare
    const old = await putApiKey(store, { userId: 'user-rot0', name: 'leaked', now: T0 });

    // Act
    const rotated = await rotateApiKey(store, { keyId: old.keyId, graceSeconds: 0, now: T0 });
    const oldResult = await settle(handler(event({ authorization: `Bearer ${old.apiKey}` })));
    const fresh = await handler(event({ authorization: `Bearer ${rotated.issued.apiKey}` }));
    const again = await settle(rotateApiKey(store, { keyId: old.keyId, graceSeconds: 0, now: T0 }));
    await revokeApiKey(store, { keyId: rotated.issued.keyId, now: T0 });
    const revokedRotation = await settle(
      rotateApiKey(store, { keyId: rotated.issued.keyId, graceSeconds: 0, now: T0 }),
    );

    // Assert
    expect(rotated.previous).toEqual({ keyId: old.keyId, revokedAt: T0_SECONDS });
    expect(oldResult).toEqual(UNAUTHORIZED);
    expect(fresh.principalId).toBe('user-rot0');
    expect(again).toBeInstanceOf(ApiKeyStateError);
    expect(revokedRotation).toBeInstanceOf(ApiKeyStateError);
  });

  it('never grants a grace beyond the old key’s own expiry', async () => {
    // Prepare
    const expiresAt = T0_SECONDS + 30;
    const old = await putApiKey(store, { userId: 'user-short', name: 'short', expiresAt, now: T0 });

    // Act
    const rotated = await rotateApiKey(store, { keyId: old.keyId, graceSeconds: 3600, now: T0 });

    // Assert
    expect(rotated.previous).toEqual({ keyId: old.keyId, expiresAt });
  });

  it.each([
    ['no header', {}],
    ['an empty header', { authorization: '' }],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['two spaces', { authorization: 'Bearer  gsk_live_x' }],
    ['a trailing part', { authorization: 'Bearer gsk_live_x y' }],
    ['a well-formed unknown key', { authorization: `Bearer gsk_live_${'A'.repeat(43)}` }],
    ['a token that is not one of our keys', { authorization: 'Bearer abc.def' }],
  ])('answers %s with 401', async (_label, opts: EventOptions) => {
    // Act
    const result = handler(event(opts));

    // Assert
    await expect(result).rejects.toThrow(new Error('Unauthorized'));
  });

  it('reads the header case-insensitively but refuses two different Authorization values', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-h', name: 'h', now: T0 });
    const other = await putApiKey(store, { userId: 'user-h2', name: 'h2', now: T0 });

    // Act
    const lowerCase = await handler(event({ headers: { authorization: `Bearer ${key.apiKey}` } }));
    const twoValues = await settle(
      handler(
        event({
          headers: { Authorization: `Bearer ${key.apiKey}` },
          multiValueHeaders: { Authorization: [`Bearer ${key.apiKey}`, `Bearer ${other.apiKey}`] },
        }),
      ),
    );
    const twoNames = await settle(
      handler(
        event({
          headers: { Authorization: `Bearer ${key.apiKey}`, authorization: `Bearer ${other.apiKey}` },
          multiValueHeaders: {},
        }),
      ),
    );

    // Assert
    expect(lowerCase.principalId).toBe('user-h');
    expect(twoValues).toEqual(UNAUTHORIZED);
    expect(twoNames).toEqual(UNAUTHORIZED);
  });

  it('propagates a store failure instead of allowing or answering 401', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-f', name: 'f', now: T0 });
    const broken = createAuthorizerHandler({
      store: () => ({ doc: store.doc, tableName: `${store.tableName}-missing` }),
      now: () => T0,
      logger: captureLogger(logs),
    });

    // Act
    const result = broken(event({ authorization: `Bearer ${key.apiKey}` }));

    // Assert
    await expect(result).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    expect(logs.at(-1)).toMatchObject({ level: 'error', message: 'authorizer error' });
  });

  it('logs one line per decision with the key id, never the key or its hash', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-log', name: 'log', allowedCidrs: ['10.0.0.0/8'], now: T0 });
    const authorization = `Bearer ${key.apiKey}`;

    // Act
    await handler(event({ authorization, sourceIp: '10.1.2.3' }));
    await handler(event({ authorization, sourceIp: '192.0.2.1' }));
    await revokeApiKey(store, { keyId: key.keyId, now: T0 });
    await handler(event({ authorization, sourceIp: '10.1.2.3' })).catch(() => undefined);

    // Assert
    expect(logs).toEqual([
      expect.objectContaining({ decision: 'allow', keyId: key.keyId, userId: 'user-log', sourceIp: '10.1.2.3' }),
      expect.objectContaining({ decision: 'deny', reason: 'ip-not-allowed', keyId: key.keyId }),
      expect.objectContaining({ decision: 'unauthorized', reason: 'revoked', keyId: key.keyId }),
    ]);
    const text = JSON.stringify(logs);
    expect(text).not.toContain(key.apiKey);
    expect(text).not.toContain(key.apiKey.slice(9));
    expect(text).not.toContain(hashApiKey(key.apiKey));
  });

  it('authorizeKey (the inline path) throws the domain errors the HTTP layer maps to 401 and 403', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-inline', name: 'i', allowedCidrs: ['192.0.2.0/24'], now: T0 });
    const authorization = `Bearer ${key.apiKey}`;

    // Act
    const allowed = await authorizeKey(store, { authorization, sourceIp: '192.0.2.10', now: T0 });
    const forbidden = await settle(authorizeKey(store, { authorization, sourceIp: '198.51.100.1', now: T0 }));
    const missingIp = await settle(authorizeKey(store, { authorization, sourceIp: undefined, now: T0 }));
    const unauthorized = await settle(
      authorizeKey(store, { authorization: undefined, sourceIp: '192.0.2.10', now: T0 }),
    );

    // Assert
    expect(allowed).toStrictEqual({ userId: 'user-inline', keyId: key.keyId });
    expect(forbidden).toBeInstanceOf(ForbiddenError);
    expect(missingIp).toBeInstanceOf(ForbiddenError);
    expect(unauthorized).toBeInstanceOf(UnauthorizedError);
  });

  it('stores only the hash: the records hold neither the key nor more than its display prefix', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-store', name: 'stored', allowedCidrs: ['192.0.2.1'], now: T0 });

    // Act
    const record = await getApiKeyByHash(store, hashApiKey(key.apiKey));
    const listing = await listApiKeys(store, 'user-store');

    // Assert
    expect(record).toStrictEqual({
      keyId: key.keyId,
      userId: 'user-store',
      name: 'stored',
      allowedCidrs: ['192.0.2.1/32'],
      createdAt: T0.toISOString(),
    });
    expect(listing).toStrictEqual([
      {
        keyId: key.keyId,
        name: 'stored',
        prefix: key.apiKey.slice(0, 15),
        allowedCidrs: ['192.0.2.1/32'],
        createdAt: T0.toISOString(),
      },
    ]);
    expect(JSON.stringify([record, listing])).not.toContain(key.apiKey);
  });

  it('refuses bad input before writing and unknown key ids on revoke', async () => {
    // Act
    const badCidr = await settle(
      putApiKey(store, { userId: 'user-bad', name: 'x', allowedCidrs: ['10.0.0.1/8'], now: T0 }),
    );
    const pastExpiry = await settle(
      putApiKey(store, { userId: 'user-bad', name: 'x', expiresAt: T0_SECONDS, now: T0 }),
    );
    const unknown = await settle(revokeApiKey(store, { keyId: 'key_000000000000', now: T0 }));

    // Assert
    expect(badCidr).toEqual(new UsageError('not an IPv4/IPv6 address or CIDR block: 10.0.0.1/8'));
    expect(pastExpiry).toEqual(new UsageError('expiresAt must be in the future'));
    expect(unknown).toBeInstanceOf(ApiKeyNotFoundError);
    expect(await listApiKeys(store, 'user-bad')).toEqual([]);
  });

  it('revoking twice keeps the first revocation time', async () => {
    // Prepare
    const key = await putApiKey(store, { userId: 'user-twice', name: 't', now: T0 });
    await revokeApiKey(store, { keyId: key.keyId, now: T0 });

    // Act
    const second = await revokeApiKey(store, { keyId: key.keyId, now: new Date(T0.getTime() + 5000) });

    // Assert
    expect(second).toEqual({ keyId: key.keyId, userId: 'user-twice', revokedAt: T0_SECONDS, alreadyRevoked: true });
  });
});

describe('wholeApiArn', () => {
  it('scopes the policy to every method and path of the API stage, keeping the partition', () => {
    // Act
    const arns = [
      wholeApiArn(METHOD_ARN),
      wholeApiArn('arn:aws-cn:execute-api:cn-north-1:123456789012:api1/dev/GET/api/ai/tasks/t-1'),
    ];

    // Assert
    expect(arns).toEqual([WHOLE_API, 'arn:aws-cn:execute-api:cn-north-1:123456789012:api1/dev/*/*']);
  });

  it('refuses an ARN it cannot scope (the handler then fails with 500, never Allow)', () => {
    // Act
    const attempt = () => wholeApiArn('arn:aws:lambda:eu-west-1:123456789012:function:x');

    // Assert
    expect(attempt).toThrow('Unexpected methodArn');
  });
});
