/**
 * API Gateway REST REQUEST authorizer for both credentials: a bearer API key (`Authorization`) or the
 * browser session cookie (`__Host-session`).
 *
 * Identity source and caching: API Gateway does not even call a REQUEST authorizer when one of its
 * identity sources is missing, so neither the `Authorization` header (absent for a browser) nor the
 * `Cookie` header (absent for an API client) can be one. The only identity source is
 * `context.identity.sourceIp`, which is always present, and the result cache is off (TTL 0): a cache
 * keyed on the address alone would hand one caller's Allow to another behind the same address. Every
 * request is therefore decided on the store's current state, so revoking a key or a session takes
 * effect on the very next request.
 *
 * - Allow: a policy for the whole API; principalId = userId; `usageIdentifierKey` = the API Gateway API
 *   key of this API key (or of the account's sessions), whose usage plan limits it (`usageKeyOf`);
 *   context `{ credential: 'key', userId,
 *   keyId, expiresAt?, spendLimitVersion, spendLimitCredits?, spendLimitPeriod?, spendBudgetKeyId? }` or `{ credential: 'session', userId, sessionHash, expiresAt }` (epoch seconds;
 *   handlers re-check it). Which routes take which credential is the handlers' rule (functions/http).
 * - Missing, malformed, unknown, revoked or expired credential: `throw new Error('Unauthorized')` (401).
 * - Valid key from an address outside its allowlist: a Deny policy for the whole API (403).
 * - Anything else (the store unreachable): rethrown, API Gateway answers 500. Never an Allow.
 *
 * An active session's idle expiry is moved forward here, at most once a minute per session.
 */
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { decideRequest, principalOf, type RequestPrincipal } from '../auth/authorize-request';
import { sessionIdFromHeaders } from '../auth/session-cookie';
import { sessionSettingsFromEnv } from '../auth/session-settings';
import { callerAddress, originSecretFromEnv } from '../auth/viewer-address';
import { epochSeconds } from '../core/api-key';
import { usageKeyOf, usageSubjectOf } from '../core/rate-plan';
import { touchDue } from '../core/session';
import { type SpendLimitContext, spendLimitContext } from '../core/spend-limit';
import { createLogger, type Logger, withInvocation } from '../observability/logger';
import { keyUseDue, recordKeyUse } from '../store/api-keys';
import type { StoreContext } from '../store/client';
import { storeFromEnv } from '../store/from-env';
import { touchSession } from '../store/sessions';

/** The authorizer context handlers receive (`requestContext.authorizer`). */
export type AuthorizerContext = (
  | ({ credential: 'key'; userId: string; keyId: string; expiresAt?: number } & SpendLimitContext)
  | { credential: 'session'; userId: string; sessionHash: string; expiresAt: number }
) & {
  /** The viewer's address when the request came through the dashboard's distribution (viewer-address.ts). */
  callerIp?: string;
};

export interface AuthorizerDependencies {
  /** The store, built lazily on first use (default: `storeFromEnv()`). */
  store?: () => StoreContext;
  now?: () => Date;
  logger?: Logger;
  /** The origin-verify secret of the distribution (default: from `ORIGIN_VERIFY_SECRET_ARN`; none locally). */
  originSecret?: () => Promise<string | undefined>;
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

function authorizerContext(principal: RequestPrincipal): AuthorizerContext {
  if (principal.credential === 'session') {
    const { userId, sessionHash, expiresAt } = principal;
    return { credential: 'session', userId, sessionHash, expiresAt };
  }
  // The key's spend limit rides along, so the accept needs no read of its own; a limit changed after
  // this read cannot be used (the accept proves its version on the key-end guard, store/spend.ts).
  const context: AuthorizerContext = {
    credential: 'key',
    userId: principal.userId,
    keyId: principal.keyId,
    ...spendLimitContext(principal.spendLimit, principal.spendLimitVersion),
  };
  if (principal.expiresAt !== undefined) context.expiresAt = principal.expiresAt;
  return context;
}

/** Builds the handler; tests inject the store, the clock and the logger. */
export function createAuthorizerHandler(deps: AuthorizerDependencies = {}) {
  const getStore = deps.store ?? (() => storeFromEnv());
  const now = deps.now ?? (() => new Date());
  const log = deps.logger ?? createLogger({ service: 'authorizer' });
  const originSecret = deps.originSecret ?? originSecretFromEnv();

  return async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
    const gatewaySourceIp = event.requestContext?.identity?.sourceIp;
    const requestId = event.requestContext?.requestId;
    let sourceIp: string | undefined = gatewaySourceIp;
    try {
      // Behind the distribution, the viewer's address (vouched for by the origin secret); else sourceIp.
      sourceIp = callerAddress(gatewaySourceIp, event.headers, await originSecret());
      // Fail before any store read when the ARN is not one we can scope a policy to.
      const resource = wholeApiArn(event.methodArn);
      const at = now();
      const result = await decideRequest(getStore(), {
        authorization: authorizationHeader(event),
        sessionId: sessionIdFromHeaders(event.headers, event.multiValueHeaders),
        sourceIp,
        now: at,
      });
      const principal = principalOf(result);
      if (principal) {
        log.info('authorizer decision', {
          decision: 'allow',
          credential: principal.credential,
          ...(principal.credential === 'key' ? { keyId: principal.keyId } : {}),
          userId: principal.userId,
          sourceIp,
          requestId,
        });
        if (result.credential === 'session' && result.decision.outcome === 'allow') {
          await touchIfDue(getStore(), principal, result.decision.session, at, log);
        }
        if (result.credential === 'key' && result.decision.outcome === 'allow') {
          await recordUseIfDue(getStore(), result.decision.principal, result.decision.use, at, log);
        }
        return {
          ...policy(principal.userId, 'Allow', resource),
          context: {
            ...authorizerContext(principal),
            ...(sourceIp !== undefined && sourceIp !== gatewaySourceIp ? { callerIp: sourceIp } : {}),
          },
          // Each API key (and the account's sessions together) has its own bucket in the account's usage plan.
          usageIdentifierKey: usageKeyOf(getStore().tableName, usageSubjectOf(principal)),
        };
      }
      const { decision } = result;
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
      const known = {
        ...('keyId' in decision && decision.keyId !== undefined ? { keyId: decision.keyId } : {}),
        ...('userId' in decision && decision.userId !== undefined ? { userId: decision.userId } : {}),
      };
      log.info('authorizer decision', {
        decision: 'unauthorized',
        credential: result.credential,
        reason: 'reason' in decision ? decision.reason : undefined,
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

/** Activity keeps a session alive; a failed touch costs the caller nothing (logged, not fatal). */
async function touchIfDue(
  store: StoreContext,
  principal: RequestPrincipal,
  session: { idleExpiresAt: number; absoluteExpiresAt: number },
  at: Date,
  log: Logger,
): Promise<void> {
  if (principal.credential !== 'session') return;
  const { idleSeconds } = sessionSettingsFromEnv();
  if (!touchDue(session, epochSeconds(at), idleSeconds)) return;
  try {
    await touchSession(store, { sessionHash: principal.sessionHash, session, idleSeconds, now: at });
  } catch (error) {
    log.warn('session touch failed', { error, userId: principal.userId });
  }
}

/** "Last used" of a key, written at most once a minute; a failed write costs the caller nothing. */
async function recordUseIfDue(
  store: StoreContext,
  principal: { userId: string; keyId: string },
  use: { keyHash: string; lastUsedAt?: number },
  at: Date,
  log: Logger,
): Promise<void> {
  if (!keyUseDue(use, epochSeconds(at))) return;
  try {
    await recordKeyUse(store, { keyHash: use.keyHash, userId: principal.userId, keyId: principal.keyId, now: at });
  } catch (error) {
    log.warn('recording key use failed', { error, keyId: principal.keyId });
  }
}

/** The Lambda entry point. */
export const handler = withInvocation(createAuthorizerHandler(), (event) => event.requestContext?.requestId);
