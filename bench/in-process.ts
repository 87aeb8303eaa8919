/**
 * The in-process environment of sections 3 and 5: DynamoDB Local on a free port, a table, the mock
 * provider and a media directory, wired through the same environment variables the CDK stack sets,
 * and API Gateway events to invoke the real handlers with.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import type { StoreContext } from '../functions/store/client';
import { findFreePort, startDynamoDbLocal } from '../local/dynamodb-local';
import { type AuthorizerHandler, lambdaContext, type ProxyHandler } from '../local/gateway';
import { type MockProvider, startMockProvider } from '../local/mock-provider';
import { bounded, note, onCleanup } from './support';

export type { AuthorizerHandler, ProxyHandler };
export { lambdaContext };

export interface InProcessEnv {
  dynamodbEndpoint: string;
  provider: MockProvider;
  mediaDir: string;
  /** `storeFromEnv()` of this process, after the environment was set. */
  store: StoreContext;
}

const PROVIDER_KEY = 'bench-provider-key';

/**
 * Starts the parts and sets the environment. Handler modules read some variables when they are
 * imported (the logger's level), so import them (dynamically) only after this resolved.
 * Everything started is stopped by the section's clean-up.
 */
export async function startInProcessEnv(
  options: { providerDelayMs?: number; refreshIntervalSeconds?: number } = {},
): Promise<InProcessEnv> {
  const port = await findFreePort();
  note(`starting DynamoDB Local on 127.0.0.1:${port}`);
  const dynamodb = await bounded('DynamoDB Local start', 60_000, startDynamoDbLocal({ port }));
  onCleanup(() => dynamodb.stop());
  const provider = await startMockProvider({ apiKey: PROVIDER_KEY, defaultDelayMs: options.providerDelayMs ?? 0 });
  onCleanup(() => provider.stop());
  const mediaDir = mkdtempSync(join(tmpdir(), 'generation-bench-media-'));
  onCleanup(() => rmSync(mediaDir, { recursive: true, force: true }));

  Object.assign(process.env, {
    TABLE_NAME: `bench-${randomUUID()}`,
    DYNAMODB_ENDPOINT: dynamodb.endpoint,
    AWS_REGION: 'local',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    PROVIDER_BASE_URL: provider.url,
    PROVIDER_API_KEY: PROVIDER_KEY,
    MEDIA_DIR: mediaDir,
    MEDIA_BASE_URL: 'http://127.0.0.1:3000',
    PROVIDER_REFRESH_INTERVAL_SECONDS: String(options.refreshIntervalSeconds ?? 30),
    LOG_LEVEL: 'error',
    METRICS: 'off',
  });
  const { resetStoreFromEnv, storeFromEnv } = await import('../functions/store/from-env');
  const { resetLifecycleFromEnv } = await import('../functions/runtime/lifecycle-from-env');
  const { ensureTable } = await import('../functions/store/ensure-table');
  resetStoreFromEnv();
  resetLifecycleFromEnv();
  const store = storeFromEnv();
  onCleanup(() => {
    store.doc.destroy();
    resetStoreFromEnv();
    resetLifecycleFromEnv();
  });
  await ensureTable(store);
  return { dynamodbEndpoint: dynamodb.endpoint, provider, mediaDir, store };
}

const REGION = 'local';
const ACCOUNT = '000000000000';

/** A REST proxy event as API Gateway passes it after an Allow (authorizer context as strings). */
export function proxyEvent(input: {
  method: 'GET' | 'POST';
  resource: string;
  path: string;
  userId: string;
  keyId: string;
  pathParameters?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
}): APIGatewayProxyEvent {
  const requestId = randomUUID();
  return {
    resource: input.resource,
    path: input.path,
    httpMethod: input.method,
    headers: input.headers ?? {},
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: input.pathParameters ?? null,
    stageVariables: null,
    body: input.body ?? null,
    isBase64Encoded: false,
    requestContext: {
      accountId: ACCOUNT,
      apiId: 'bench',
      httpMethod: input.method,
      path: `/prod${input.path}`,
      protocol: 'HTTP/1.1',
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'bench',
      resourcePath: input.resource,
      stage: 'prod',
      authorizer: { principalId: input.userId, userId: input.userId, keyId: input.keyId },
      identity: { sourceIp: '127.0.0.1' },
    },
  } as unknown as APIGatewayProxyEvent;
}

/** An authorizer REQUEST event for `GET /api/ai/tasks/<id>` with this Authorization header. */
export function authorizerEvent(authorization: string, sourceIp = '127.0.0.1'): APIGatewayRequestAuthorizerEvent {
  const path = `/api/ai/tasks/${randomUUID()}`;
  return {
    type: 'REQUEST',
    methodArn: `arn:aws:execute-api:${REGION}:${ACCOUNT}:bench/prod/GET${path}`,
    resource: '/api/ai/tasks/{id}',
    path,
    httpMethod: 'GET',
    headers: { Authorization: authorization },
    multiValueHeaders: { Authorization: [authorization] },
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: { requestId: randomUUID(), identity: { sourceIp } },
  } as unknown as APIGatewayRequestAuthorizerEvent;
}

/** A user with `credits` and one API key (plaintext returned, never printed). */
export async function createUser(
  store: StoreContext,
  credits: number,
): Promise<{ userId: string; keyId: string; apiKey: string }> {
  const { grantCredits } = await import('../functions/money/grant');
  const { putApiKey } = await import('../functions/money/key-issue');
  const userId = `bench-${randomUUID()}`;
  await grantCredits(store, { userId, amount: credits, grantId: `bench-${randomUUID()}` });
  const issued = await putApiKey(store, { userId, name: 'bench' });
  return { userId, keyId: issued.keyId, apiKey: issued.apiKey };
}

/** A completed image task of `userId`, written directly with the store functions. */
export async function completedTask(store: StoreContext, userId: string, keyId: string): Promise<string> {
  const { acceptTask } = await import('../functions/money/accept');
  const { completeTask } = await import('../functions/store/tasks');
  const taskId = randomUUID();
  const now = new Date();
  await acceptTask(store, {
    task: {
      userId,
      taskId,
      type: 'image',
      model: 'image-model-1',
      prompt: 'a lighthouse at dusk',
      request: { model: 'image-model-1', prompt: 'a lighthouse at dusk' },
      creditsUsed: 3,
      keyId,
      now,
    },
  });
  const done = await completeTask(store, {
    userId,
    taskId,
    resultKeys: [`results/${encodeURIComponent(userId)}/${taskId}/0.png`],
    now,
  });
  if (!done) throw new Error('completing the benchmark task failed');
  return taskId;
}
