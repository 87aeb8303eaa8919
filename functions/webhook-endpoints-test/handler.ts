/**
 * POST /api/webhooks/{id}/test: sends a `webhook.test` event to this endpoint (enabled or not), as a
 * delivery of its log. Key or session (CSRF for a session). 202: the attempt runs beside the answer.
 */
import { apiHandler } from '../http/api-handler';
import { sendTestEvent } from '../lifecycle/webhook-endpoints';
import { endpointWiringFromEnv } from '../runtime/webhook-endpoints-from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const sent = await sendTestEvent(
    endpointWiringFromEnv(),
    { userId: req.caller.userId, endpointId: req.pathParameters.id ?? '' },
    req.log,
  );
  return { statusCode: 202, body: sent };
});
