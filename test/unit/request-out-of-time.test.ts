import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { apiHandler } from '../../functions/http/api-handler';
import { TIMEOUT_MARGIN_MS } from '../../functions/http/timeout';
import { setLogSink } from '../../functions/observability/logger';

/** A Lambda context with `remainingMs` left, as the runtime hands one to a handler near its timeout. */
function contextWith(remainingMs: number): Context {
  const deadline = Date.now() + remainingMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'submit-image',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:submit-image',
    memoryLimitInMB: '512',
    awsRequestId: 'req-1',
    logGroupName: '/aws/lambda/submit-image',
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

function keyEvent(): APIGatewayProxyEvent {
  return {
    resource: '/api/ai/image/generate',
    path: '/api/ai/image/generate',
    httpMethod: 'GET',
    headers: {},
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body: null,
    isBase64Encoded: false,
    requestContext: {
      requestId: 'req-1',
      authorizer: { userId: 'user-1', keyId: 'key_1' },
      identity: { sourceIp: '203.0.113.9' },
    },
  } as unknown as APIGatewayProxyEvent;
}

describe('a request that runs out of its time', () => {
  it('answers 503 with Retry-After and says it may have taken effect, not a 500', async () => {
    // Prepare: a handler that is still waiting (on a slow table) when the function's time runs out
    const logs: string[] = [];
    const previous = setLogSink((line) => logs.push(line));
    let release: () => void = () => undefined;
    const handler = apiHandler({ jsonBody: false }, async () => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { statusCode: 200, body: {} };
    });

    // Act
    const answer = await handler(keyEvent(), contextWith(TIMEOUT_MARGIN_MS + 300));
    release();
    setLogSink(previous);

    // Assert
    expect(answer.statusCode).toBe(503);
    expect(answer.headers).toMatchObject({ 'Retry-After': '1', 'X-Request-Id': 'req-1' });
    expect(JSON.parse(answer.body)).toEqual({
      error:
        'Service busy: the request ran out of time and may or may not have taken effect; retry it (a submit with the same Idempotency-Key is done once)',
    });
    expect(logs.filter((line) => line.includes('Unexpected error'))).toEqual([]);
  });

  it('leaves a request that ends in time alone', async () => {
    // Prepare
    const handler = apiHandler({ jsonBody: false }, async () => ({ statusCode: 200, body: { ok: true } }));

    // Act
    const answer = await handler(keyEvent(), contextWith(TIMEOUT_MARGIN_MS + 5_000));

    // Assert
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ ok: true });
  });
});
