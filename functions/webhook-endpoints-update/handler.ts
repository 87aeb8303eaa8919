/**
 * PATCH /api/webhooks/{id} `{ url?, events?, enabled?, description? }`: changes an endpoint (`events:
 * null`: all events again). Session only, with CSRF.
 */
import { parseUpdateEndpoint } from '../core/webhook-endpoints';
import { apiHandler } from '../http/api-handler';
import { updateEndpoint } from '../lifecycle/webhook-endpoints';
import { endpointWiringFromEnv } from '../runtime/webhook-endpoints-from-env';

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const changes = parseUpdateEndpoint(req.body);
  const endpoint = await updateEndpoint(endpointWiringFromEnv(), {
    ...changes,
    userId: req.caller.userId,
    endpointId: req.pathParameters.id ?? '',
  });
  return { statusCode: 200, body: endpoint };
});
