/**
 * POST /api/webhooks `{ url, events?, description? }`: creates a webhook endpoint of the signed-in
 * account. Its signing secret is in this answer and never again. Session only (a leaked key must not
 * be able to point the account's events elsewhere), with CSRF.
 */
import { parseCreateEndpoint } from '../core/webhook-endpoints';
import { apiHandler } from '../http/api-handler';
import { createEndpoint } from '../lifecycle/webhook-endpoints';
import { endpointWiringWithSecretsFromEnv } from '../runtime/webhook-endpoints-from-env';

export const handler = apiHandler({ jsonBody: true, credentials: 'session' }, async (req) => {
  const input = parseCreateEndpoint(req.body);
  const created = await createEndpoint(endpointWiringWithSecretsFromEnv(), { ...input, userId: req.caller.userId });
  return { statusCode: 201, body: created, headers: { Location: `/api/webhooks/${created.id}` } };
});
