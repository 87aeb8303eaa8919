/**
 * Behind the dashboard's distribution the audit log records the customer's address, not CloudFront's:
 * the authorizer vouches for the viewer address (`callerIp` in its context) and the handlers record it.
 * The real authorizer and the real key-management handler on DynamoDB Local.
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { createAuthorizerHandler } from '../../functions/authorizer/handler';
import { csrfTokenFor } from '../../functions/core/session';
import {
  AWS_ACCESS_KEY_ID,
  AWS_REGION,
  AWS_SECRET_ACCESS_KEY,
  DYNAMODB_ENDPOINT,
  environmentOf,
  LOG_LEVEL,
  PUBLIC_ORIGIN,
  setting,
  TABLE_NAME,
} from '../../functions/environment/environment';
import { listAudit } from '../../functions/store/audit';
import { resetStoreFromEnv } from '../../functions/store/from-env';
import { createSession } from '../../functions/store/sessions';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { apiEvent } from '../support/service-harness';
import { newUserId } from '../support/store-fixtures';

const ORIGIN = 'https://dashboard.example';
const EDGE = '130.176.98.1';
const VIEWER = '203.0.113.44';
let store: TestStore;
const saved = { ...process.env };

beforeAll(async () => {
  store = await createTestStore();
  Object.assign(
    process.env,
    environmentOf(
      setting(TABLE_NAME, store.tableName),
      setting(DYNAMODB_ENDPOINT, store.endpoint),
      setting(PUBLIC_ORIGIN, ORIGIN),
      // DynamoDB Local takes any credentials; the handler's client must find some.
      setting(AWS_ACCESS_KEY_ID, 'local'),
      setting(AWS_SECRET_ACCESS_KEY, 'local'),
      setting(AWS_REGION, 'local'),
      // The authorizer's decision lines are for CloudWatch, not the test output.
      setting(LOG_LEVEL, 'warn'),
    ),
  );
  resetStoreFromEnv();
});

afterAll(async () => {
  process.env = saved;
  resetStoreFromEnv();
  await store.dispose();
});

test('a key created from the dashboard through the distribution is audited with the viewer address', async () => {
  // Prepare
  const userId = newUserId();
  const { sessionId } = await createSession(store, {
    userId,
    email: `${userId}@example.test`,
    idleSeconds: 3600,
    absoluteSeconds: 7200,
  });
  const authorizer = createAuthorizerHandler({ store: () => store, originSecret: async () => 'verify-me' });
  const headers = {
    Cookie: `__Host-session=${sessionId}`,
    Origin: ORIGIN,
    'X-CSRF-Token': csrfTokenFor(sessionId),
    'Content-Type': 'application/json',
    'X-Viewer-Address': VIEWER,
    'X-Origin-Verify': 'verify-me',
  };
  const request = apiEvent({
    user: null,
    method: 'POST',
    resource: '/api/keys',
    path: '/api/keys',
    headers,
    sourceIp: EDGE,
    body: '{"name":"from the dashboard"}',
  });
  const decision = await authorizer({
    type: 'REQUEST',
    methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc123defg/prod/POST/api/keys',
    resource: request.resource,
    path: request.path,
    httpMethod: 'POST',
    headers,
    multiValueHeaders: request.multiValueHeaders,
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: { ...request.requestContext, authorizer: undefined },
  });
  const { handler } = await import('../../functions/keys-create/handler');
  // API Gateway hands the authorizer's context to the integration as strings.
  const context = Object.fromEntries(Object.entries(decision.context ?? {}).map(([k, v]) => [k, String(v)]));
  const authorized = {
    ...request,
    requestContext: { ...request.requestContext, authorizer: { principalId: decision.principalId, ...context } },
  } as unknown as APIGatewayProxyEvent;

  // Act
  const response = await handler(authorized, {} as never);

  // Assert
  expect(decision.context).toMatchObject({ credential: 'session', userId, callerIp: VIEWER });
  expect({ status: response.statusCode, body: response.statusCode === 201 ? undefined : response.body }).toEqual({
    status: 201,
  });
  const audit = await listAudit(store, userId, { limit: 5 });
  expect(audit.entries[0]).toMatchObject({ action: 'key.create', sourceIp: VIEWER });
});
