/**
 * Issuing, rotating and revoking API keys together with their API Gateway keys: the one implementation
 * behind both front doors (the key management API and the operator CLI).
 *
 * A new key's API Gateway key is enrolled before the key is written, so a key is never active without
 * its rate limit: when API Gateway's control plane refuses (its per-AWS-account rate is shared by every
 * customer), the answer is a 503 with Retry-After and no key exists. An API Gateway key made before a
 * later step failed is given back at once when possible.
 */
import { ServiceBusyError } from '../core/errors';
import { usageKeyName, usageKeyOf } from '../core/rate-plan';
import { logger } from '../observability/logger';
import {
  type BeforeCommit,
  type IssuedApiKey,
  type KeyAction,
  type PutApiKeyInput,
  putApiKey,
  type RotatedApiKey,
  rotateApiKey,
} from '../store/api-keys';
import type { StoreContext } from '../store/client';
import { enrollUsageKey, type UsageEnrollment } from './rate-limits';

/** Enrolls the new key's API Gateway key; remembers it so a failed write can give it back. */
function enrollFirst(ctx: StoreContext, enrollment: UsageEnrollment | undefined) {
  let enrolled: string | undefined;
  const beforeCommit: BeforeCommit = async ({ keyId, userId }) => {
    if (!enrollment) return;
    enrolled = keyId;
    await enrollUsageKey(ctx, enrollment, userId, { credential: 'key', keyId });
  };
  /** After a failure: the API Gateway key of a key that was never written is deleted (best effort). */
  const giveBack = async (): Promise<void> => {
    if (!enrollment || enrolled === undefined) return;
    const subject = { credential: 'key', keyId: enrolled } as const;
    try {
      await enrollment.plans.remove({
        value: usageKeyOf(ctx.tableName, subject),
        name: usageKeyName(ctx.tableName, subject),
      });
    } catch (error) {
      logger.warn('an unused API Gateway key could not be deleted yet', { keyId: enrolled, error });
    }
  };
  return { beforeCommit, giveBack };
}

async function withEnrollment<T>(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  write: (beforeCommit: BeforeCommit) => Promise<T>,
): Promise<T> {
  const { beforeCommit, giveBack } = enrollFirst(ctx, enrollment);
  try {
    return await write(beforeCommit);
  } catch (error) {
    // A refused enrollment (ServiceBusyError) may still have made the API Gateway key; so may a write
    // refused after it (409, 404).
    await giveBack();
    if (error instanceof ServiceBusyError) logger.warn('key not issued: the control plane is busy', { error });
    throw error;
  }
}

/** Issues a key whose API Gateway key is enrolled first (see the module comment). */
export function issueKey(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: Omit<PutApiKeyInput, 'beforeCommit'>,
): Promise<IssuedApiKey> {
  return withEnrollment(ctx, enrollment, (beforeCommit) => putApiKey(ctx, { ...input, beforeCommit }));
}

/** Rotates a key; the new key's API Gateway key is enrolled before the rotation is written. */
export function rotateKey(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: KeyAction & { graceSeconds: number },
): Promise<RotatedApiKey> {
  return withEnrollment(ctx, enrollment, (beforeCommit) => rotateApiKey(ctx, { ...input, beforeCommit }));
}
