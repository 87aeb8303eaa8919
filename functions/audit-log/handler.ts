/**
 * GET /api/audit?limit=&cursor=: the signed-in user's audit log, newest first (who, what, when, from
 * which address). Session only.
 */
import { ValidationError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { decodeAuditCursor, listAudit } from '../store/audit';
import { storeFromEnv } from '../store/from-env';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 100;

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const fieldErrors: Record<string, string[]> = {};
  let limit = DEFAULT_LIMIT;
  if (req.query.limit !== undefined) {
    limit = /^[1-9][0-9]{0,2}$/.test(req.query.limit) ? Number(req.query.limit) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) fieldErrors.limit = [`Must be a whole number from 1 to ${MAX_LIMIT}`];
  }
  let afterSortKey: string | undefined;
  if (req.query.cursor !== undefined) {
    afterSortKey = decodeAuditCursor(req.query.cursor);
    if (afterSortKey === undefined) fieldErrors.cursor = ['Not a cursor this endpoint returned'];
  }
  if (Object.keys(fieldErrors).length > 0) throw new ValidationError({ fieldErrors, formErrors: [] });
  const page = await listAudit(storeFromEnv(), req.caller.userId, { limit, afterSortKey });
  return { statusCode: 200, body: { entries: page.entries, next: page.next ?? null } };
});
