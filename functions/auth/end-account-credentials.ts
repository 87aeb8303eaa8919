/**
 * Ending every credential of an account at once, for its closure (lifecycle/close-account.ts): its
 * sessions' accepts first (the sessions' key-end guard, store/balance.ts `SESSIONS_GUARD_ID`), then each
 * active API key as a revocation does (`revokeKey`: guards written before the key says revoked, its API
 * Gateway key given back or left to the sweeper), the sessions' API Gateway key, and the sessions.
 * After it returns no accept of the account can debit, whatever request is still in flight: a submit
 * that passed the authorizer before fails its guard (401), nothing written.
 */
import { usageKeyName, usageKeyOf } from '../core/rate-plan';
import { logger } from '../observability/logger';
import { listApiKeys } from '../store/api-keys';
import type { AuditActor } from '../store/audit';
import { markKeyEnd, SESSIONS_GUARD_ID } from '../store/balance';
import type { StoreContext } from '../store/client';
import { revokeAllSessions } from '../store/sessions';
import { revokeKey } from './key-issuing';
import type { UsageEnrollment } from './rate-limits';

/** What was ended. */
export interface EndedCredentials {
  keysRevoked: number;
  sessionsEnded: number;
}

/** Ends the account's sessions and keys (see the module comment). Safe to run again: it ends what is still active. */
export async function endAccountCredentials(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: { userId: string; now: Date; actor: AuditActor; sourceIp?: string },
): Promise<EndedCredentials> {
  const nowSeconds = Math.floor(input.now.getTime() / 1000);
  await markKeyEnd(ctx, { userId: input.userId, keyId: SESSIONS_GUARD_ID, endSeconds: nowSeconds });
  let keysRevoked = 0;
  for (const key of await listApiKeys(ctx, input.userId)) {
    if (key.revokedAt !== undefined) continue;
    const revoked = await revokeKey(ctx, enrollment, {
      keyId: key.keyId,
      ownerId: input.userId,
      now: input.now,
      audit: {
        action: 'key.revoke',
        actor: input.actor,
        ...(input.sourceIp ? { sourceIp: input.sourceIp } : {}),
        details: { reason: 'account.close' },
      },
    });
    if (!revoked.alreadyRevoked) keysRevoked++;
  }
  if (enrollment) {
    const subject = { credential: 'session' as const, userId: input.userId };
    try {
      await enrollment.plans.remove({
        value: usageKeyOf(ctx.tableName, subject),
        name: usageKeyName(ctx.tableName, subject),
      });
    } catch (error) {
      // Its sessions are revoked and sign-in refused: the key admits nobody. Closing again retries it.
      logger.warn("the sessions' API Gateway key could not be deleted yet", { userId: input.userId, error });
    }
  }
  const sessionsEnded = await revokeAllSessions(ctx, { userId: input.userId, now: input.now });
  return { keysRevoked, sessionsEnded };
}
