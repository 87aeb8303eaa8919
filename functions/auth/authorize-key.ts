/**
 * The API key decision, shared by the API Gateway authorizer Lambda and (where no Lambda authorizer
 * runs, e.g. LocalStack's free edition) the HTTP layer inline, so both decide identically.
 */
import { hashApiKey, isApiKeyFormat, isKeyExpired, parseBearer } from '../core/api-key';
import { isAllowed } from '../core/cidr';
import { ForbiddenError, UnauthorizedError } from '../core/errors';
import type { KeySpendLimit } from '../core/task';
import { getApiKeyByHash } from '../store/api-keys';
import type { StoreContext } from '../store/client';

export interface AuthorizeKeyInput {
  /** The raw `Authorization` header value. */
  authorization: string | undefined;
  /** The caller's address as the gateway saw it (`requestContext.identity.sourceIp`), never X-Forwarded-For. */
  sourceIp: string | undefined;
  now: Date;
}

/** Who is calling. `expiresAt` (epoch seconds) lets handlers re-check expiry behind a cached Allow. */
export interface KeyPrincipal {
  userId: string;
  keyId: string;
  expiresAt?: number;
  /** The key's spend limit and its version, enforced by the accept (store/spend.ts). */
  spendLimit?: KeySpendLimit;
  spendLimitVersion?: number;
}

/** Why a key was refused; for logs and metrics only, never shown to the caller. */
export type DenyReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired' | 'ip-not-allowed';

/** The full decision, with what the logs may say about it (the key id, never the key). */
export type KeyDecision =
  | { outcome: 'allow'; principal: KeyPrincipal; use: { keyHash: string; lastUsedAt?: number } }
  | { outcome: 'unauthorized'; reason: Exclude<DenyReason, 'ip-not-allowed'>; keyId?: string; userId?: string }
  | { outcome: 'forbidden'; reason: 'ip-not-allowed'; keyId: string; userId: string };

/**
 * Decides on a request's key. A store failure propagates (the caller answers 5xx, never Allow).
 * A key is expired from its `expiresAt` second on (`now >= expiresAt`).
 */
export async function decideKey(store: StoreContext, input: AuthorizeKeyInput): Promise<KeyDecision> {
  if (input.authorization === undefined) return { outcome: 'unauthorized', reason: 'missing' };
  const token = parseBearer(input.authorization);
  // A token that is not shaped like our keys cannot match one: no store read for it.
  if (token === undefined || !isApiKeyFormat(token)) return { outcome: 'unauthorized', reason: 'malformed' };

  const keyHash = hashApiKey(token);
  const record = await getApiKeyByHash(store, keyHash);
  if (!record) return { outcome: 'unauthorized', reason: 'unknown' };
  const who = { keyId: record.keyId, userId: record.userId };
  if (record.revokedAt !== undefined) return { outcome: 'unauthorized', reason: 'revoked', ...who };
  if (isKeyExpired(record.expiresAt, input.now)) {
    return { outcome: 'unauthorized', reason: 'expired', ...who };
  }
  if (!isAllowed(input.sourceIp, record.allowedCidrs))
    return { outcome: 'forbidden', reason: 'ip-not-allowed', ...who };

  const principal: KeyPrincipal = { userId: record.userId, keyId: record.keyId };
  if (record.expiresAt !== undefined) principal.expiresAt = record.expiresAt;
  if (record.spendLimit !== undefined) principal.spendLimit = record.spendLimit;
  if (record.spendLimitVersion !== undefined) principal.spendLimitVersion = record.spendLimitVersion;
  return { outcome: 'allow', principal, use: { keyHash, lastUsedAt: record.lastUsedAt } };
}

/**
 * The decision as a principal or an error: UnauthorizedError (missing, malformed, unknown, revoked or
 * expired key: 401) or ForbiddenError (valid key, source address outside its allowlist: 403).
 */
export async function authorizeKey(store: StoreContext, input: AuthorizeKeyInput): Promise<KeyPrincipal> {
  const decision = await decideKey(store, input);
  if (decision.outcome === 'allow') return decision.principal;
  if (decision.outcome === 'forbidden') throw new ForbiddenError();
  throw new UnauthorizedError();
}

/**
 * Whether a principal from a (possibly cached) authorizer result is past its key's expiry. Handlers call
 * this so a cached Allow cannot outlive the key (the same rule as the authorizer: `now >= expiresAt`).
 */
export const isPrincipalExpired = isKeyExpired;
