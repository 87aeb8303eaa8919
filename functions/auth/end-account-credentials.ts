/**
 * Ending every credential of an account at once, for its closure (lifecycle/close-account.ts). First
 * what stops the debits, side by side: the sessions' key-end guard (store/balance.ts `SESSIONS_GUARD_ID`)
 * and each active API key's guards (`markKeyEnd`). Then each key in turn is revoked as a revocation does
 * (`revokeKey`: its guards find the end recorded already, the key item says revoked, its API Gateway key
 * is given back or left to the sweeper), then the sessions' API Gateway key and the sessions. After it
 * returns no accept of the account can debit, whatever request is still in flight: a submit that passed
 * the authorizer before fails its guard (401), nothing written.
 *
 * The guards first and side by side: every accept that commits until they are written is one more task
 * the closure cancels and refunds, so the time to write them is what a close racing many submits costs
 * (40 accepts in flight through the conflict layer: one guard and one credential after another, 14 s).
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

/**
 * Keys whose guards are written side by side (each key's 32 at once, store/balance.ts `markKeyEnd`): a
 * few, so an account at the cap of 1,000 keys does not send the table 32,000 writes at once.
 */
const KEYS_AT_ONCE = 4;

/** Runs `work` on every item, `KEYS_AT_ONCE` at a time. */
async function eachAtOnce<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  const worker = async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  };
  await Promise.all(Array.from({ length: KEYS_AT_ONCE }, worker));
}

/** Ends the account's sessions and keys (see the module comment). Safe to run again: it ends what is still active. */
export async function endAccountCredentials(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: { userId: string; now: Date; actor: AuditActor; sourceIp?: string },
): Promise<EndedCredentials> {
  const nowSeconds = Math.floor(input.now.getTime() / 1000);
  const endGuards = (keyId: string) => markKeyEnd(ctx, { userId: input.userId, keyId, endSeconds: nowSeconds });
  const listed = listApiKeys(ctx, input.userId).then((keys) => keys.filter((key) => key.revokedAt === undefined));
  await Promise.all([
    endGuards(SESSIONS_GUARD_ID),
    listed.then((active) => eachAtOnce(active, (key) => endGuards(key.keyId))),
  ]);
  const active = await listed;
  // One after another: no accept races them any more, and each takes the key out of the account's
  // active-key count, one item that revocations side by side would contend for.
  let keysRevoked = 0;
  for (const key of active) {
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
