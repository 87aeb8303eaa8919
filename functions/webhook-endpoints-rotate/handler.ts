/**
 * POST /api/webhooks/{id}/rotate-secret `{ graceSeconds? }`: a new signing secret, shown only in this
 * answer; the previous one still signs beside it for the grace (default a day). Session only, with CSRF.
 */
import { parseRotateEndpointSecret } from '../core/webhook-endpoints';
import { apiHandler } from '../http/api-handler';
import { rotateEndpointSecret } from '../lifecycle/webhook-endpoints';
import { endpointWiringWithSecretsFromEnv } from '../runtime/webhook-endpoints-from-env';

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const { graceSeconds } = parseRotateEndpointSecret(req.body);
  const rotated = await rotateEndpointSecret(endpointWiringWithSecretsFromEnv(), {
    userId: req.caller.userId,
    endpointId: req.pathParameters.id ?? '',
    graceSeconds,
  });
  return { statusCode: 200, body: rotated };
});
