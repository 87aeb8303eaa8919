/**
 * DELETE /api/webhooks/{id}: deletes an endpoint; its open deliveries end unsent at their next attempt.
 * Session only, with CSRF.
 */
import { apiHandler } from '../http/api-handler';
import { removeEndpoint } from '../lifecycle/webhook-endpoints';
import { endpointWiringFromEnv } from '../runtime/webhook-endpoints-from-env';

export const handler = apiHandler({ jsonBody: false, credentials: 'session' }, async (req) => {
  const endpointId = req.pathParameters.id ?? '';
  await removeEndpoint(endpointWiringFromEnv(), { userId: req.caller.userId, endpointId });
  return { statusCode: 200, body: { id: endpointId, deleted: true } };
});
