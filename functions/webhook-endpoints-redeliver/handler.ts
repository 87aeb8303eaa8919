/**
 * POST /api/webhooks/{id}/deliveries/{deliveryId}/redeliver: sends the delivery again now, with the
 * same `webhook-id` (a new attempt in its log). Key or session (CSRF for a session). 202: the attempt
 * runs beside the answer.
 */
import { apiHandler } from '../http/api-handler';
import { redeliver } from '../lifecycle/webhook-endpoints';
import { endpointWiringFromEnv } from '../runtime/webhook-endpoints-from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => ({
  statusCode: 202,
  body: await redeliver(endpointWiringFromEnv(), {
    userId: req.caller.userId,
    endpointId: req.pathParameters.id ?? '',
    deliveryId: req.pathParameters.deliveryId ?? '',
  }),
}));
