/**
 * The session decision, shared by the authorizer Lambda and the inline mode (LocalStack), like the key
 * decision in authorize-key.ts.
 */
import { epochSeconds } from '../core/api-key';
import { hashSessionId, sessionUnusable } from '../core/session';
import type { StoreContext } from '../store/client';
import { getSessionByHash, type SessionRecord } from '../store/sessions';

/** A signed-in browser. `expiresAt` (epoch seconds) lets handlers re-check expiry. */
export interface SessionPrincipal {
  userId: string;
  /** The stored hash of the session id (never the id). */
  sessionHash: string;
  expiresAt: number;
}

export type SessionDecision =
  | { outcome: 'allow'; principal: SessionPrincipal; session: SessionRecord }
  | { outcome: 'unauthorized'; reason: 'unknown' | 'revoked' | 'expired'; userId?: string };

/** Decides on a session id (already shape-checked). A store failure propagates (5xx, never Allow). */
export async function decideSession(
  store: StoreContext,
  input: { sessionId: string; now: Date },
): Promise<SessionDecision> {
  const sessionHash = hashSessionId(input.sessionId);
  const session = await getSessionByHash(store, sessionHash);
  if (!session) return { outcome: 'unauthorized', reason: 'unknown' };
  const unusable = sessionUnusable(session, epochSeconds(input.now));
  if (unusable) return { outcome: 'unauthorized', reason: unusable, userId: session.userId };
  return {
    outcome: 'allow',
    principal: {
      userId: session.userId,
      sessionHash,
      expiresAt: Math.min(session.idleExpiresAt, session.absoluteExpiresAt),
    },
    session,
  };
}
