/**
 * Issuing, rotating and revoking API keys together with their API Gateway keys: the one implementation
 * behind both front doors (the key management API and the operator CLI), and the sweeper's repair.
 *
 * - A new key's API Gateway key is enrolled before the key is written, so a key is never active without
 *   its rate limit: when API Gateway's control plane refuses (its per-AWS-account rate is shared by
 *   every customer), the answer is a 503 with Retry-After and no key exists.
 * - Every key that ends gives its API Gateway key back (a region holds 10,000 by default): a revoked
 *   key at once, a replaced one after its grace period, an expired one at its expiry (the sweeper).
 * - Each step is recorded first (store/gateway-keys.ts), so what a crash or a refusal interrupts is
 *   finished by the sweeper ({@link reconcileGatewayKeys}).
 */
import { ControlPlaneBusyError } from '../core/errors';
import { type UsageSubject, usageKeyName, usageKeyOf } from '../core/rate-plan';
import { retireKey } from '../money/key-cap';
import { type RevokedApiKey, type RotatedApiKey, revokeApiKey, rotateApiKey } from '../money/key-end';
import { type PutApiKeyInput, putApiKey } from '../money/key-issue';
import { type Logger, logger } from '../observability/logger';
import {
  type ApiKeyRecord,
  type BeforeCommit,
  epochSeconds,
  getApiKeyById,
  type IssuedApiKey,
  type KeyAction,
} from '../store/api-keys';
import type { StoreContext } from '../store/client';
import { clearGatewayKey, type DueGatewayKey, dueGatewayKeys, scheduleGatewayKey } from '../store/gateway-keys';
import { maxActiveKeysFromEnv } from '../store/key-count';
import { enrollUsageKey, type UsageEnrollment } from './rate-limits';

/**
 * How long an issuing may take before the sweeper looks at its API Gateway key: an issuing that has not
 * finished by then crashed (a Lambda ends long before), and the sweeper enrolls or deletes as the key's
 * state says.
 */
export const ISSUING_REPAIR_SECONDS = 300;

function usageKeyOfKey(ctx: StoreContext, keyId: string) {
  const subject: UsageSubject = { credential: 'key', keyId };
  return { value: usageKeyOf(ctx.tableName, subject), name: usageKeyName(ctx.tableName, subject) };
}

const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000);

/** After a key is written: its API Gateway key needs a look only at the key's end (or never). */
async function settleIssued(ctx: StoreContext, key: Pick<ApiKeyRecord, 'userId' | 'keyId' | 'expiresAt'>) {
  if (key.expiresAt === undefined) await clearGatewayKey(ctx, key);
  else await scheduleGatewayKey(ctx, { ...key, due: new Date(key.expiresAt * 1000) });
}

/** Deletes an ended key's API Gateway key now, or leaves it scheduled for the sweeper when that fails. */
async function giveBack(ctx: StoreContext, enrollment: UsageEnrollment, key: { userId: string; keyId: string }) {
  try {
    await enrollment.plans.remove(usageKeyOfKey(ctx, key.keyId));
    await clearGatewayKey(ctx, key);
  } catch (error) {
    logger.warn('an API Gateway key could not be deleted yet; the sweeper will', { keyId: key.keyId, error });
  }
}

async function withEnrollment<T>(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  now: Date,
  write: (beforeCommit: BeforeCommit) => Promise<T>,
): Promise<T> {
  let started: { userId: string; keyId: string } | undefined;
  const beforeCommit: BeforeCommit = async (key) => {
    if (!enrollment) return;
    // Recorded before API Gateway is called: whatever happens next, the sweeper finds this key.
    await scheduleGatewayKey(ctx, { ...key, due: later(now, ISSUING_REPAIR_SECONDS) });
    started = key;
    await enrollUsageKey(ctx, enrollment, key.userId, { credential: 'key', keyId: key.keyId });
  };
  try {
    return await write(beforeCommit);
  } catch (error) {
    // A refused enrollment may still have made the API Gateway key, and so may a write refused after it
    // (409, 404): the key was never written, so its API Gateway key goes.
    if (enrollment && started) await giveBack(ctx, enrollment, started);
    if (error instanceof ControlPlaneBusyError) logger.warn('key not issued: the control plane is busy', { error });
    throw error;
  }
}

/**
 * Issues a key whose API Gateway key is enrolled first (see the module comment), within the account's
 * cap on active keys (`maxActiveKeys`, default `MAX_ACTIVE_KEYS`): beyond it a KeyLimitError (409), found
 * before API Gateway is called and enforced exactly by the key's transaction.
 */
export async function issueKey(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: Omit<PutApiKeyInput, 'beforeCommit'>,
): Promise<IssuedApiKey> {
  const now = input.now ?? new Date();
  const maxActiveKeys = input.maxActiveKeys ?? maxActiveKeysFromEnv();
  const issued = await withEnrollment(ctx, enrollment, now, (beforeCommit) =>
    putApiKey(ctx, { ...input, now, maxActiveKeys, beforeCommit }),
  );
  if (enrollment) await settleIssued(ctx, issued);
  return issued;
}

/**
 * Rotates a key; the new key's API Gateway key is enrolled before the rotation is written. The old key's
 * API Gateway key is deleted when the old key ends: now without grace, by the sweeper after the grace.
 */
export async function rotateKey(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: KeyAction & { graceSeconds: number; maxActiveKeys?: number },
): Promise<RotatedApiKey> {
  const now = input.now ?? new Date();
  // With grace the old key stays active (and counted) until its end, so the new one needs a free place.
  const maxActiveKeys = input.maxActiveKeys ?? maxActiveKeysFromEnv();
  const rotated = await withEnrollment(ctx, enrollment, now, (beforeCommit) =>
    rotateApiKey(ctx, { ...input, now, maxActiveKeys, beforeCommit }),
  );
  if (enrollment) await settleIssued(ctx, rotated.issued);
  // The old key's API Gateway key goes when the old key ends (the sweeper's, when not now or not here).
  const old = { userId: rotated.issued.userId, keyId: rotated.previous.keyId };
  const end = rotated.previous.revokedAt ?? rotated.previous.expiresAt ?? epochSeconds(now);
  await scheduleGatewayKey(ctx, { ...old, due: new Date(end * 1000) });
  if (enrollment && rotated.previous.revokedAt !== undefined) await giveBack(ctx, enrollment, old);
  return rotated;
}

/**
 * Revokes a key and deletes its API Gateway key. The deletion is recorded before the revocation, so a
 * crash (or a refusal by API Gateway, or a caller without usage plans) leaves it to the sweeper.
 */
export async function revokeKey(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: KeyAction,
): Promise<RevokedApiKey> {
  const now = input.now ?? new Date();
  const record = await getApiKeyById(ctx, input.keyId);
  // Someone else's key is not found by revokeApiKey either: nothing is recorded for it.
  if (record && (input.ownerId === undefined || record.userId === input.ownerId)) {
    await scheduleGatewayKey(ctx, { userId: record.userId, keyId: record.keyId, due: now });
  }
  const revoked = await revokeApiKey(ctx, { ...input, now });
  // Without usage plans here (the CLI with --aws but no USAGE_PLAN_ID) the sweeper deletes it.
  if (enrollment) await giveBack(ctx, enrollment, revoked);
  return revoked;
}

export interface GatewayKeySweep {
  /** API Gateway keys deleted (their keys ended, or were never written). */
  deleted: number;
  /** API Gateway keys (re-)enrolled for active keys whose issuing did not finish. */
  enrolled: number;
  /** Due keys API Gateway refused for now (busy): left due, the next sweep tries them again. */
  busy?: number;
}

/**
 * The sweeper's part: every API Gateway key due by `now` is reconciled with its key's state. A key that
 * ended, or was never written, loses its API Gateway key (and an expired key leaves the account's
 * active-key count); an active key is enrolled (idempotent) and looked at again at its expiry.
 * Deletions come first: they are what frees the account's key quota, so enrollments (which take from
 * it) wait for them. A busy answer from API Gateway (`LimitExceededException`, `TooManyRequestsException`)
 * skips that key, left due for the next sweep, and goes on: one refused entry at the head of the list
 * must not hold up every deletion behind it.
 */
export async function reconcileGatewayKeys(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  now: Date,
  log: Logger = logger,
): Promise<GatewayKeySweep> {
  const report: GatewayKeySweep = { deleted: 0, enrolled: 0 };
  if (!enrollment) return report;
  const nowSeconds = epochSeconds(now);
  const skipBusy = async (keyId: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      if (!(error instanceof ControlPlaneBusyError)) throw error;
      report.busy = (report.busy ?? 0) + 1;
      log.warn('API Gateway refused one key while reconciling; skipped, the next sweep tries it again', {
        keyId,
        error,
      });
    }
  };
  const active: Array<{ due: DueGatewayKey; record: ApiKeyRecord }> = [];
  for (const due of await dueGatewayKeys(ctx, now)) {
    const key = { userId: due.userId, keyId: due.keyId };
    const record = await getApiKeyById(ctx, due.keyId);
    const ended =
      record === undefined ||
      record.revokedAt !== undefined ||
      (record.expiresAt !== undefined && record.expiresAt <= nowSeconds);
    if (!ended) {
      active.push({ due, record });
      continue;
    }
    await skipBusy(due.keyId, async () => {
      if (await enrollment.plans.remove(usageKeyOfKey(ctx, due.keyId))) report.deleted += 1;
      if (record) await retireKey(ctx, key, now);
      await clearGatewayKey(ctx, { ...key, ifDueKey: due.dueKey });
    });
  }
  for (const { due, record } of active) {
    const key = { userId: due.userId, keyId: due.keyId };
    await skipBusy(due.keyId, async () => {
      await enrollUsageKey(ctx, enrollment, record.userId, { credential: 'key', keyId: record.keyId });
      report.enrolled += 1;
      if (record.expiresAt === undefined) await clearGatewayKey(ctx, { ...key, ifDueKey: due.dueKey });
      else await scheduleGatewayKey(ctx, { ...key, due: new Date(record.expiresAt * 1000), ifDueKey: due.dueKey });
    });
  }
  return report;
}
