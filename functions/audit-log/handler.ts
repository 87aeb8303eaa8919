/**
 * GET /api/audit?limit=&cursor=: the signed-in user's audit log, newest first (who, what, when, from
 * which address). Session only.
 */
import { apiHandler } from '../http/api-handler';
import { parsePageQuery } from '../http/page-query';
import { decodeAuditCursor, listAudit } from '../store/audit';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const page = parsePageQuery(req.query, decodeAuditCursor);
  const { entries, next } = await listAudit(storeFromEnv(), req.caller.userId, page);
  return { statusCode: 200, body: { entries, next: next ?? null } };
});
