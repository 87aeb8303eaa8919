/**
 * GET /api/account/export: the signed-in account's data as JSON (lifecycle/account-export.ts), a page
 * of at most 4 MiB; `next` names the following page (`?cursor=`). Session only: an export is the owner's,
 * never an integration's.
 */
import { apiHandler } from '../http/api-handler';
import { exportAccountPage } from '../lifecycle/account-export';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const page = await exportAccountPage(
    { store: storeFromEnv(), now: () => new Date() },
    { userId: req.caller.userId, ...(req.query.cursor === undefined ? {} : { cursor: req.query.cursor }) },
  );
  return {
    statusCode: 200,
    body: page,
    headers: {
      'Cache-Control': 'no-store',
      'Content-Disposition': `attachment; filename="account-export-${page.exportedAt.slice(0, 10)}.json"`,
    },
  };
});
