/**
 * An account's webhook settings: its default endpoint and its signing secret. The operator CLI is the
 * front door today; these are the rules, so a future API route uses the same ones.
 */
import { UsageError } from '../core/errors';
import { newWebhookSecret } from '../core/webhooks';
import type { SourcePolicy } from '../media/source-policy';
import type { StoreContext } from '../store/client';
import {
  clearWebhookUrl,
  getWebhookSettings,
  putWebhookSecret,
  setWebhookUrl,
  type WebhookSettings,
} from '../store/webhook-settings';
import { getDeliveryWithAttempts, listAccountEventDeliveries } from '../store/webhooks';
import type { SecretBox } from '../webhooks/secret-box';
import { webhookUrlProblem } from '../webhooks/target-policy';

/** What may be shown of the settings: never the secret, sealed or not. */
export function describeWebhookSettings(userId: string, settings: WebhookSettings | undefined) {
  return {
    userId,
    url: settings?.url ?? null,
    hasSecret: settings?.sealedSecret !== undefined,
    secretCreatedAt: settings?.secretCreatedAt ?? null,
  };
}

/**
 * Sets the account's default endpoint, judged by the rule that judges every `webhookUrl` and every
 * delivery.
 * @throws UsageError naming the problem when the endpoint is not allowed
 */
export async function setAccountWebhookUrl(
  store: StoreContext,
  policy: SourcePolicy,
  input: { userId: string; url: string; now: Date },
) {
  const problem = webhookUrlProblem(input.url, policy);
  if (problem) throw new UsageError(`url: ${problem}`);
  return describeWebhookSettings(input.userId, await setWebhookUrl(store, input));
}

/** Removes the default endpoint; tasks submitted with their own `webhookUrl` still get deliveries. */
export async function clearAccountWebhookUrl(store: StoreContext, input: { userId: string; now: Date }) {
  return describeWebhookSettings(input.userId, await clearWebhookUrl(store, input));
}

/** The account's settings, as may be shown. */
export async function showAccountWebhooks(store: StoreContext, userId: string) {
  return describeWebhookSettings(userId, await getWebhookSettings(store, userId));
}

/**
 * Makes a new signing secret for the account, replacing any previous one (a rotation: every attempt
 * from now on, retries of earlier deliveries included, is signed with the new one). The secret is in
 * the answer and nowhere else: the table keeps it sealed.
 */
export async function rotateWebhookSecret(
  store: StoreContext,
  box: SecretBox,
  input: { userId: string; now: Date },
): Promise<{ userId: string; secret: string; rotated: boolean; secretCreatedAt: string }> {
  const previous = await getWebhookSettings(store, input.userId);
  const secret = newWebhookSecret();
  const sealedSecret = await box.seal(input.userId, secret);
  const settings = await putWebhookSecret(store, { userId: input.userId, sealedSecret, now: input.now });
  return {
    userId: input.userId,
    secret,
    rotated: previous?.sealedSecret !== undefined,
    secretCreatedAt: settings.secretCreatedAt ?? input.now.toISOString(),
  };
}

/** A task's delivery and every attempt, for the operator (null when the task sent none). */
export async function describeDeliveries(store: StoreContext, userId: string, taskId: string) {
  const { delivery, attempts } = await getDeliveryWithAttempts(store, userId, taskId);
  return {
    userId,
    taskId,
    delivery: delivery
      ? {
          webhookId: delivery.webhookId,
          url: delivery.url,
          eventType: delivery.eventType,
          state: delivery.deliveryState,
          attempts: delivery.attempts,
          nextAttemptAt: delivery.deliveryState === 'waiting' ? (delivery.dueAt ?? null) : null,
          deliveredAt: delivery.deliveredAt ?? null,
          gaveUpAt: delivery.gaveUpAt ?? null,
          // Why it was never tried, when the bound on open deliveries dropped it.
          reason: delivery.dropReason ?? null,
        }
      : null,
    attempts: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      at: attempt.at,
      durationMs: attempt.durationMs,
      statusCode: attempt.statusCode ?? null,
      error: attempt.error ?? null,
    })),
  };
}

/**
 * The account's account-event deliveries (key spend limits, low balance), newest first, for the
 * operator; each one's attempts are `describeDeliveries` of its `eventId`.
 */
export async function describeAccountEvents(store: StoreContext, userId: string) {
  const deliveries = await listAccountEventDeliveries(store, userId);
  return {
    userId,
    events: deliveries
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
      .map((delivery) => ({
        eventId: delivery.eventId ?? null,
        type: delivery.eventType,
        at: delivery.eventAt,
        data: delivery.data ?? null,
        state: delivery.deliveryState,
        attempts: delivery.attempts,
        reason: delivery.dropReason ?? null,
      })),
  };
}
