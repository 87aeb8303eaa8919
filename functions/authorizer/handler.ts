/**
 * API Gateway REST REQUEST authorizer. Identity sources: the `Authorization` header and
 * `context.identity.sourceIp`, so a cached result is per key *and* caller address.
 *
 * - Allow: a policy for the whole API (`<apiArn>/<stage>/*\/*`) so one cached result serves every
 *   route; principalId = userId; context `{ userId, keyId, expiresAt? }` (expiresAt in epoch seconds,
 *   absent for a key that never expires; handlers re-check it behind the cache).
 * - Missing, malformed, unknown, revoked or expired key: `throw new Error('Unauthorized')`, which API
 *   Gateway answers with 401.
 * - Valid key from an address outside its allowlist: a Deny policy for the whole API (403).
 * - Anything else (the store unreachable): rethrown, API Gateway answers 500. Never an Allow.
 */
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { decideKey, type KeyPrincipal } from '../auth/authorize-key';
import { createLogger, type Logger } from '../observability/logger';
import type { StoreContext } from '../store/client';
import { storeFromEnv } from '../store/from-env';

/** The authorizer context handlers receive (`requestContext.authorizer`). */
export interface AuthorizerContext {
  userId: string;
  keyId: string;
  /** Epoch seconds; absent when the key never expires. */
  expiresAt?: number;
}

export interface AuthorizerDependencies {
  /** The store, built lazily on first use (default: `storeFromEnv()`). */
  store?: () => StoreContext;
  now?: () => Date;
  logger?: Logger;
}

/**
 * `arn:<partition>:execute-api:<region>:<account>:<apiId>/<stage>/*\/*` from the invoked method's ARN:
 * every method and path of this API and stage.
 */
export function wholeApiArn(methodArn: string): string {
  const parts = methodArn.split(':');
  const [arn, partition, service, region, account] = parts;
  const [apiId, stage] = parts.slice(5).join(':').split('/');
  if (arn !== 'arn' || service !== 'execute-api' || !partition || !region || !account || !apiId || !stage) {
    throw new Error(`Unexpected methodArn: ${methodArn}`);
  }
  return `arn:${partition}:execute-api:${region}:${account}:${apiId}/${stage}/*/*`;
}

/**
 * The single `Authorization` value, matched case-insensitively. Several values (repeated header or
 * case variants with different values) are ambiguous, so they count as malformed (`null`).
 */
export function authorizationHeader(event: APIGatewayRequestAuthorizerEvent): string | undefined | null {
  const values = new Set<string>();
  for (const [name, list] of Object.entries(event.multiValueHeaders ?? {})) {
    if (name.toLowerCase() === 'authorization') for (const value of list ?? []) values.add(value);
  }
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (name.toLowerCase() === 'authorization' && value !== undefined) values.add(value);
  }
  if (values.size > 1) return null;
  return values.values().next().value;
}

function policy(principalId: string, effect: 'Allow' | 'Deny', resource: string): APIGatewayAuthorizerResult {
  return {
    principalId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: resource }],
    },
  };
}

function authorizerContext(principal: KeyPrincipal): AuthorizerContext {
  const context: AuthorizerContext = { userId: principal.userId, keyId: principal.keyId };
  if (principal.expiresAt !== undefined) context.expiresAt = principal.expiresAt;
  return context;
}

/** Builds the handler; tests inject the store, the clock and the logger. */
export function createAuthorizerHandler(deps: AuthorizerDependencies = {}) {
  const getStore = deps.store ?? (() => storeFromEnv());
  const now = deps.now ?? (() => new Date());
  const log = deps.logger ?? createLogger({ service: 'authorizer' });

  return async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
    const sourceIp = event.requestContext?.identity?.sourceIp;
    const requestId = event.requestContext?.requestId;
    const header = authorizationHeader(event);
    try {
      // Fail before any store read when the ARN is not one we can scope a policy to.
      const resource = wholeApiArn(event.methodArn);
      const decision =
        header === null
          ? ({ outcome: 'unauthorized', reason: 'malformed' } as const)
          : await decideKey(getStore(), { authorization: header, sourceIp, now: now() });

      if (decision.outcome === 'allow') {
        const { principal } = decision;
        log.info('authorizer decision', {
          decision: 'allow',
          keyId: principal.keyId,
          userId: principal.userId,
          sourceIp,
          requestId,
        });
        return { ...policy(principal.userId, 'Allow', resource), context: { ...authorizerContext(principal) } };
      }
      if (decision.outcome === 'forbidden') {
        log.info('authorizer decision', {
          decision: 'deny',
          reason: decision.reason,
          keyId: decision.keyId,
          userId: decision.userId,
          sourceIp,
          requestId,
        });
        return policy(decision.userId, 'Deny', resource);
      }
      const known = 'keyId' in decision ? { keyId: decision.keyId, userId: decision.userId } : {};
      log.info('authorizer decision', {
        decision: 'unauthorized',
        reason: decision.reason,
        ...known,
        sourceIp,
        requestId,
      });
    } catch (error) {
      log.error('authorizer error', { error, sourceIp, requestId });
      throw error;
    }
    // The exact message API Gateway turns into 401.
    throw new Error('Unauthorized');
  };
}

/** The Lambda entry point. */
export const handler = createAuthorizerHandler();
