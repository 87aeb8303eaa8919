/**
 * Who is calling: the identity the authorizer put on the request, re-checked here.
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { isPrincipalExpired } from '../auth/authorize-key';
import { decideRequest, principalOf } from '../auth/authorize-request';
import { sessionIdFromHeaders } from '../auth/session-cookie';
import { ForbiddenError, UnauthorizedError } from '../core/errors';
import { spendLimitFromContext } from '../core/spend-limit';
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
 * Reads the caller from `requestContext.authorizer` and re-checks the credential's expiry, so an Allow
 * the gateway may have cached never outlives the key or the session.
 *
 * When the API runs without a Lambda authorizer (LocalStack's free edition cannot run one), the stack
 * sets INLINE_AUTHORIZER=true and the same decision runs here instead.
 */
export async function resolveCaller(event: APIGatewayProxyEvent, now: Date = new Date()): Promise<Caller> {
  const context = event.requestContext?.authorizer;
  const userId = asString(context?.userId);
  const keyId = asString(context?.keyId);
  const sessionHash = asString(context?.sessionHash);
  if (userId && (keyId || sessionHash)) {
    const expiresAt = Number(asString(context?.expiresAt) ?? Number.NaN);
    if (isPrincipalExpired(Number.isFinite(expiresAt) ? expiresAt : undefined, now)) throw new UnauthorizedError();
    return keyId ? { userId, keyId, ...spendLimitFromContext(context) } : { userId, sessionHash };
  }
  // Spelled `process.env.X`, the one form esbuild's `define` replaces (a build-time variable of the
  // contract, functions/environment/environment.ts): bundles without the inline mode drop this code.
  if (process.env.INLINE_AUTHORIZER === 'true') {
    const authorization = Object.entries(event.headers ?? {}).find(([name]) => name.toLowerCase() === 'authorization');
    const result = await decideRequest(storeFromEnv(), {
      authorization: authorization?.[1],
      sessionId: sessionIdFromHeaders(event.headers, event.multiValueHeaders),
      sourceIp: event.requestContext?.identity?.sourceIp,
      now,
    });
    const principal = principalOf(result);
    if (principal?.credential === 'key') {
      const { userId: id, keyId: key, spendLimit, spendLimitVersion } = principal;
      return {
        userId: id,
        keyId: key,
        spendLimitVersion: spendLimitVersion ?? 0,
        ...(spendLimit ? { spendLimit } : {}),
      };
    }
    if (principal?.credential === 'session') return { userId: principal.userId, sessionHash: principal.sessionHash };
    if (result.decision.outcome === 'forbidden') throw new ForbiddenError();
  }
  throw new UnauthorizedError();
}
