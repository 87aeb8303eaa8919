/**
 * Who is calling: the identity the authorizer put on the request, re-checked here.
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { authorizeKey, isPrincipalExpired } from '../auth/authorize-key';
import { UnauthorizedError } from '../core/errors';
import type { Caller } from '../core/task';
import { storeFromEnv } from '../store/from-env';

export type { Caller };

/** Authorizer context values arrive as strings on REST APIs, as numbers in some emulators. */
function asString(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length > 0) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * Reads the caller from `requestContext.authorizer` and re-checks the key's expiry: API Gateway caches
 * an Allow for the authorizer TTL, and that cached Allow must not outlive the key.
 *
 * When the API runs without a Lambda authorizer (LocalStack's free edition cannot run one), the stack
 * sets INLINE_AUTHORIZER=true and the same key check runs here instead.
 */
export async function resolveCaller(event: APIGatewayProxyEvent, now: Date = new Date()): Promise<Caller> {
  const context = event.requestContext?.authorizer;
  const userId = asString(context?.userId);
  const keyId = asString(context?.keyId);
  if (userId && keyId) {
    const expiresAt = Number(asString(context?.expiresAt) ?? Number.NaN);
    if (isPrincipalExpired(Number.isFinite(expiresAt) ? expiresAt : undefined, now)) throw new UnauthorizedError();
    return { userId, keyId };
  }
  if (process.env.INLINE_AUTHORIZER === 'true') {
    const authorization = Object.entries(event.headers ?? {}).find(([name]) => name.toLowerCase() === 'authorization');
    const result = await authorizeKey(storeFromEnv(), {
      authorization: authorization?.[1],
      sourceIp: event.requestContext?.identity?.sourceIp,
      now,
    });
    return { userId: result.userId, keyId: result.keyId };
  }
  throw new UnauthorizedError();
}
