/**
 * API Gateway's control plane as key issuing and sign-in meet it: its calls are limited per AWS account
 * (every customer shares them), so sign-in must not depend on it and a refusal on key creation must be a
 * 503 with Retry-After that leaves no key behind. The store is DynamoDB Local; API Gateway's control
 * plane cannot run locally, so its client is mocked (aws-sdk-client-mock).
 */
import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetApiKeysCommand,
  TooManyRequestsException,
} from '@aws-sdk/client-api-gateway';
import { mockClient } from 'aws-sdk-client-mock';
import { issueKey, rotateKey } from '../../functions/auth/key-issuing';
import { enrollSessionsOnce, type UsageEnrollment, usageEnrollmentFromEnv } from '../../functions/auth/rate-limits';
import { apiGatewayUsagePlans } from '../../functions/aws/usage-plans';
import { ControlPlaneBusyError } from '../../functions/core/errors';
import { usageKeyName } from '../../functions/core/rate-plan';
import { errorResponse } from '../../functions/http/error-handler';
import { putApiKey } from '../../functions/money/key-issue';
import { listApiKeys } from '../../functions/store/api-keys';
import { getInvite, inviteAccount } from '../../functions/store/invites';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newUserId } from '../support/store-fixtures';

const gateway = mockClient(APIGatewayClient);
let store: TestStore;
let enrollment: UsageEnrollment;

function throttled(retryAfterSeconds?: string) {
  return new TooManyRequestsException({
    message: 'Too Many Requests',
    $metadata: { httpStatusCode: 429 },
    ...(retryAfterSeconds ? { retryAfterSeconds } : {}),
  });
}

beforeAll(async () => {
  store = await createTestStore();
  const found = usageEnrollmentFromEnv({ USAGE_PLAN_ID: 'plan-default' }, () =>
    apiGatewayUsagePlans({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'mocked' },
      maxAttempts: 1,
    }),
  );
  if (!found) throw new Error('no enrollment');
  enrollment = found;
});

beforeEach(() => {
  gateway.reset();
  gateway.on(CreateApiKeyCommand).callsFake((input: { name?: string }) => ({ id: `gw-${input.name}` }));
  gateway.on(CreateUsagePlanKeyCommand).resolves({});
  gateway.on(DeleteApiKeyCommand).resolves({});
  gateway.on(GetApiKeysCommand).resolves({ items: [] });
});

afterAll(async () => {
  gateway.restore();
  await store?.dispose();
});

describe('sign-in makes no control-plane call once the account is enrolled', () => {
  test('the first enrollment of the sessions calls API Gateway and is recorded; the next sign-in calls nothing', async () => {
    // Prepare
    const userId = newUserId();
    const { email } = await inviteAccount(store, { email: `${userId}@example.com`, userId });
    const first = await getInvite(store, email);
    if (!first) throw new Error('no invite');

    // Act
    await enrollSessionsOnce(store, enrollment, first);
    const callsAfterFirst = gateway.commandCalls(CreateApiKeyCommand).length;
    const second = await getInvite(store, email);
    if (!second) throw new Error('no invite');
    await enrollSessionsOnce(store, enrollment, second);

    // Assert
    expect(callsAfterFirst).toBe(1);
    expect(second.sessionUsageEnrolledAt).toEqual(expect.any(String));
    expect(gateway.commandCalls(CreateApiKeyCommand)).toHaveLength(1);
    expect(gateway.commandCalls(CreateUsagePlanKeyCommand)).toHaveLength(1);
  });

  test('a refused first enrollment is a ControlPlaneBusyError, records nothing, and the next try enrolls', async () => {
    // Prepare
    const userId = newUserId();
    const { email } = await inviteAccount(store, { email: `${userId}@example.com`, userId });
    const invite = await getInvite(store, email);
    if (!invite) throw new Error('no invite');
    gateway
      .on(CreateApiKeyCommand)
      .rejectsOnce(throttled('2'))
      .callsFake((input: { name?: string }) => ({ id: `gw-${input.name}` }));

    // Act
    const refused = await enrollSessionsOnce(store, enrollment, invite).catch((error: unknown) => error);
    const afterRefusal = await getInvite(store, email);
    await enrollSessionsOnce(store, enrollment, invite);
    const afterRetry = await getInvite(store, email);

    // Assert
    expect(refused).toBeInstanceOf(ControlPlaneBusyError);
    expect(afterRefusal?.sessionUsageEnrolledAt).toBeUndefined();
    expect(afterRetry?.sessionUsageEnrolledAt).toEqual(expect.any(String));
  });
});

describe('key creation when API Gateway refuses', () => {
  test('a throttled CreateApiKey answers 503 with Retry-After and leaves no key', async () => {
    // Prepare
    const userId = newUserId();
    gateway.on(CreateApiKeyCommand).rejects(throttled('3'));

    // Act
    const error = await issueKey(store, enrollment, { userId, name: 'ci' }).catch((caught: unknown) => caught);
    const answer = errorResponse(error, 'req-1');
    const keys = await listApiKeys(store, userId);

    // Assert
    expect(error).toBeInstanceOf(ControlPlaneBusyError);
    expect(answer.statusCode).toBe(503);
    expect(answer.headers?.['Retry-After']).toBe('3');
    expect(JSON.parse(answer.body)).toEqual({ error: 'Key service busy, retry later' });
    expect(keys).toEqual([]);
  });

  test('a refusal after the API Gateway key was made gives that key back and writes no key', async () => {
    // Prepare
    const userId = newUserId();
    gateway.on(CreateUsagePlanKeyCommand).rejects(throttled());
    gateway.on(GetApiKeysCommand).callsFake((input: { nameQuery?: string }) => ({
      items: [{ id: `gw-${input.nameQuery}`, name: input.nameQuery }],
    }));

    // Act
    const error = await issueKey(store, enrollment, { userId, name: 'ci' }).catch((caught: unknown) => caught);
    const keys = await listApiKeys(store, userId);
    const created = gateway.commandCalls(CreateApiKeyCommand)[0]?.args[0].input.name;
    const deleted = gateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input.apiKey);

    // Assert
    expect(error).toBeInstanceOf(ControlPlaneBusyError);
    expect((error as ControlPlaneBusyError).retryAfterSeconds).toBe(5);
    expect(keys).toEqual([]);
    expect(created).toEqual(expect.stringContaining(`${store.tableName}-key-`));
    expect(deleted).toEqual([`gw-${created}`]);
  });

  test('a throttled rotation leaves the old key as it was and makes no new key', async () => {
    // Prepare
    const userId = newUserId();
    const old = await putApiKey(store, { userId, name: 'ci' });
    gateway.on(CreateApiKeyCommand).rejects(throttled());

    // Act
    const error = await rotateKey(store, enrollment, { keyId: old.keyId, graceSeconds: 0 }).catch(
      (caught: unknown) => caught,
    );
    const keys = await listApiKeys(store, userId);

    // Assert
    expect(error).toBeInstanceOf(ControlPlaneBusyError);
    expect(keys).toHaveLength(1);
    expect(keys[0]?.keyId).toBe(old.keyId);
    expect(keys[0]?.revokedAt).toBeUndefined();
    expect(keys[0]?.replacedBy).toBeUndefined();
  });

  test('a created key is enrolled before it exists: its API Gateway key carries its usage name', async () => {
    // Prepare
    const userId = newUserId();

    // Act
    const issued = await issueKey(store, enrollment, { userId, name: 'ci' });

    // Assert
    expect(gateway.commandCalls(CreateApiKeyCommand).map((call) => call.args[0].input.name)).toEqual([
      usageKeyName(store.tableName, { credential: 'key', keyId: issued.keyId }),
    ]);
    expect(gateway.commandCalls(CreateUsagePlanKeyCommand)[0]?.args[0].input.usagePlanId).toBe('plan-default');
  });
});
