/** GET /api/webhooks/{id}: one webhook endpoint of the account (never its secret). Key or session. */
import { apiHandler } from '../http/api-handler';
import { describeEndpoint, findEndpoint } from '../lifecycle/webhook-endpoints';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => ({
  statusCode: 200,
  body: describeEndpoint(await findEndpoint(storeFromEnv(), req.caller.userId, req.pathParameters.id ?? '')),
}));
