/**
 * Either credential: a bearer API key (`Authorization`) or the session cookie. The authorizer Lambda
 * and the inline mode both decide with this, so they cannot disagree.
 *
 * A request with an `Authorization` header is decided on the key alone, whatever cookies it carries:
 * a client that sends a key means the key, and a bad key must not fall back to a browser session.
 */
import type { StoreContext } from '../store/client';
import { decideKey, type KeyDecision, type KeyPrincipal } from './authorize-key';
import { decideSession, type SessionDecision, type SessionPrincipal } from './authorize-session';

export type RequestPrincipal = ({ credential: 'key' } & KeyPrincipal) | ({ credential: 'session' } & SessionPrincipal);

export type RequestDecision =
  | { credential: 'key'; decision: KeyDecision }
  | { credential: 'session'; decision: SessionDecision }
  | { credential: 'none'; decision: { outcome: 'unauthorized'; reason: 'missing' | 'malformed' } };

export interface AuthorizeRequestInput {
  /** The single `Authorization` value; `null` when ambiguous (several values). */
  authorization: string | undefined | null;
  /** The session cookie's id; `null` when malformed or ambiguous. */
  sessionId: string | undefined | null;
  sourceIp: string | undefined;
  now: Date;
}

export async function decideRequest(store: StoreContext, input: AuthorizeRequestInput): Promise<RequestDecision> {
  if (input.authorization === null)
    return { credential: 'none', decision: { outcome: 'unauthorized', reason: 'malformed' } };
  if (input.authorization !== undefined) {
    return {
      credential: 'key',
      decision: await decideKey(store, {
        authorization: input.authorization,
        sourceIp: input.sourceIp,
        now: input.now,
      }),
    };
  }
  if (input.sessionId === null)
    return { credential: 'none', decision: { outcome: 'unauthorized', reason: 'malformed' } };
  if (input.sessionId === undefined)
    return { credential: 'none', decision: { outcome: 'unauthorized', reason: 'missing' } };
  return {
    credential: 'session',
    decision: await decideSession(store, { sessionId: input.sessionId, now: input.now }),
  };
}

/** The principal of an allowed decision, else `undefined`. */
export function principalOf(result: RequestDecision): RequestPrincipal | undefined {
  if (result.credential === 'key' && result.decision.outcome === 'allow') {
    return { credential: 'key', ...result.decision.principal };
  }
  if (result.credential === 'session' && result.decision.outcome === 'allow') {
    return { credential: 'session', ...result.decision.principal };
  }
  return undefined;
}
