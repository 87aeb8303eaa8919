/**
 * The wiring of the webhook endpoint routes (functions/webhook-endpoints-*): the table, the URL rules of
 * every webhook endpoint, the bounds; and the secret box, for the two routes that make a secret
 * (create, rotate), which alone are given the sealing key.
 */
import { ServiceBusyError } from '../core/errors';
import { DEFAULT_WEBHOOK_MAX_ENDPOINTS } from '../core/webhook-endpoints';
import { DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES } from '../core/webhooks';
import { type Env, readEnv, WEBHOOK_MAX_ENDPOINTS, WEBHOOK_MAX_OPEN_DELIVERIES } from '../environment/environment';
import type { EndpointWiring } from '../lifecycle/webhook-endpoints';
import { storeFromEnv } from '../store/from-env';
import { type SecretBox, secretBoxFromEnv } from '../webhooks/secret-box';
import { webhookTargetPolicy } from '../webhooks/target-policy';

/** A box that refuses: webhooks are off here (no sealing key), so no secret can be made. */
const NO_BOX: SecretBox = {
  seal: () => Promise.reject(new ServiceBusyError(undefined, 'Webhooks are not configured on this deployment')),
  open: () => Promise.reject(new ServiceBusyError(undefined, 'Webhooks are not configured on this deployment')),
};

let box: { value: SecretBox } | undefined;

/** The routes' wiring without a secret box (reading, changing, testing, the log, redelivery). */
export function endpointWiringFromEnv(env?: Env): EndpointWiring {
  return {
    store: storeFromEnv(),
    box: NO_BOX,
    policy: webhookTargetPolicy(env),
    now: () => new Date(),
    maxEndpoints: readEnv(WEBHOOK_MAX_ENDPOINTS, env) ?? DEFAULT_WEBHOOK_MAX_ENDPOINTS,
    maxOpenDeliveries: readEnv(WEBHOOK_MAX_OPEN_DELIVERIES, env) ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES,
  };
}

/** The wiring with the secret box of this process (cached: deployed, it caches the sealing key). */
export function endpointWiringWithSecretsFromEnv(env?: Env): EndpointWiring {
  box ??= { value: secretBoxFromEnv(env) ?? NO_BOX };
  return { ...endpointWiringFromEnv(env), box: box.value };
}

/** Forgets the cached box (tests change the environment between runs). */
export function resetEndpointWiringFromEnv(): void {
  box = undefined;
}
