/**
 * GET /api/webhooks/{id}/deliveries `?state=&eventType=&limit=&cursor=`: the endpoint's delivery log,
 * newest first, each delivery with its attempts (time, HTTP status, latency, error). Kept 30 days.
 * Key or session.
 */

import { apiHandler } from '../http/api-handler';
import { parsePageQuery } from '../http/page-query';
import { deliveryCursorDecoder, deliveryFilters, listDeliveries } from '../lifecycle/webhook-endpoints';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const endpointId = req.pathParameters.id ?? '';
  const { errors, ...filters } = deliveryFilters(req.query);
  const page = parsePageQuery(req.query, deliveryCursorDecoder(endpointId), errors);
  return {
    statusCode: 200,
    body: await listDeliveries(storeFromEnv(), { userId: req.caller.userId, endpointId, ...page, ...filters }),
  };
});
