/**
 * PATCH /api/keys/{keyId} `{ spendLimit: { credits, period } | null }`: sets or removes the spend limit
 * of one of the signed-in user's keys (docs/api/spend-limits-and-usage.md#spend-limits). The change holds from the
 * next accept on:
 * an accept that read the old limit cannot commit (store/spend.ts). Session only (with CSRF); audited.
 */
import { isKeyIdFormat } from '../core/api-key';
import { KeyNotFoundError } from '../core/errors';
import { parseUpdateKey } from '../core/key-requests';
import { apiHandler } from '../http/api-handler';
import { describeKeys } from '../http/key-views';
import { setSpendLimit } from '../money/key-limit';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const keyId = req.pathParameters.keyId ?? '';
  const { spendLimit } = parseUpdateKey(req.body);
  if (!isKeyIdFormat(keyId)) throw new KeyNotFoundError();
  const store = storeFromEnv();
  const now = new Date();
  await setSpendLimit(store, {
    keyId,
    ownerId: req.caller.userId,
    spendLimit,
    now,
    audit: { action: 'key.limit', actor: { type: 'session', userId: req.caller.userId }, sourceIp: req.sourceIp },
  });
  // The key as the listing shows it, with what it spent this period.
  const key = (await describeKeys(store, req.caller.userId, now)).find((entry) => entry.keyId === keyId);
  if (!key) throw new KeyNotFoundError();
  return { statusCode: 200, body: key };
});
