/** GET /api/webhooks: the account's webhook endpoints, oldest first (never a secret). Key or session. */
import { apiHandler } from '../http/api-handler';
import { listAccountEndpoints } from '../lifecycle/webhook-endpoints';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => ({
  statusCode: 200,
  body: { endpoints: await listAccountEndpoints(storeFromEnv(), req.caller.userId) },
}));
