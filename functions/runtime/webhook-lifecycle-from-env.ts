/**
 * The webhook worker's wiring: the lifecycle without the provider (it never calls it), results signed
 * by the API functions' media store (it only reads them: presigned GETs), the secret box, the
 * endpoint policy and the retry schedule.
 */

import { DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES, parseRetryDelays } from '../core/webhooks';
import {
  type Env,
  PROVIDER_BASE_URL,
  readEnv,
  WEBHOOK_MAX_OPEN_DELIVERIES,
  WEBHOOK_RETRY_DELAYS_SECONDS,
} from '../environment/environment';
import type { WebhookLifecycle } from '../lifecycle/webhooks';
import { secretBoxFromEnv } from '../webhooks/secret-box';
import { webhookTargetPolicy } from '../webhooks/target-policy';
import { lifecycleFromEnv } from './lifecycle-from-env';
import { lifecycleWithoutProvider } from './worker-lifecycle-from-env';

let cached: WebhookLifecycle | null | undefined;

/**
 * The worker's lifecycle for this process, built on first use; undefined when no webhook secrets key
 * is configured (`WEBHOOK_SECRETS_KEY` or `WEBHOOK_SECRETS_KEY_ARN`): webhooks are then off.
 * @throws Error on a malformed setting (`WEBHOOK_RETRY_DELAYS_SECONDS`, `WEBHOOK_INSECURE_ORIGINS`, `WEBHOOK_MAX_OPEN_DELIVERIES`)
 */
export function webhookLifecycleFromEnv(env?: Env): WebhookLifecycle | undefined {
  if (cached !== undefined) return cached ?? undefined;
  const box = secretBoxFromEnv(env);
  if (!box) {
    cached = null;
    return undefined;
  }
  const base = readEnv(PROVIDER_BASE_URL, env) ? lifecycleFromEnv(env) : lifecycleWithoutProvider(env);
  cached = {
    ...base,
    webhooks: {
      box,
      policy: webhookTargetPolicy(env),
      retryDelays: parseRetryDelays(readEnv(WEBHOOK_RETRY_DELAYS_SECONDS, env)),
      maxOpenDeliveries: maxOpenDeliveriesFromEnv(env),
    },
  };
  return cached;
}

/** Forgets the wiring (tests change the environment between runs). */
export function resetWebhookLifecycleFromEnv(): void {
  cached = undefined;
}

/**
 * Open deliveries an account may have at once: `WEBHOOK_MAX_OPEN_DELIVERIES`, else the default (100).
 * @throws Error naming the variable when it is not a whole number from 1 to 100000
 */
export function maxOpenDeliveriesFromEnv(env?: Env): number {
  return readEnv(WEBHOOK_MAX_OPEN_DELIVERIES, env) ?? DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES;
}
