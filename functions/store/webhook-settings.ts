/**
 * An account's webhook settings in DynamoDB (`webhookKeys.settings`): its default endpoint, for tasks
 * submitted without a `webhookUrl`, and its sealed signing secret. The rules (URL checks, a secret's
 * rotation) are lifecycle/webhook-settings.ts's.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type UpdateSpec, update, updateParams } from './conditions';
import { type RetryingStoreContext, withRetry } from './errors';
import { webhookKeys } from './keys';
import { withoutKeys } from './webhooks';

/** An account's webhook settings. */
export interface WebhookSettings {
  userId: string;
  /** The default endpoint, for tasks submitted without a `webhookUrl`. */
  url?: string;
  /** The signing secret sealed by `webhooks/secret-box.ts`; never the secret itself. */
  sealedSecret?: string;
  secretCreatedAt?: string;
  updatedAt: string;
}

/** The account's webhook settings, or undefined when it has none. */
export async function getWebhookSettings(
  ctx: RetryingStoreContext,
  userId: string,
): Promise<WebhookSettings | undefined> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: webhookKeys.settings(userId) })),
    ctx.retry,
  );
  return out.Item ? withoutKeys<WebhookSettings>(out.Item) : undefined;
}

async function updateSettings(ctx: RetryingStoreContext, userId: string, spec: UpdateSpec): Promise<WebhookSettings> {
  const out = await withRetry(
    () =>
      ctx.doc.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: webhookKeys.settings(userId),
          ...updateParams(update({ ...spec, set: { userId, ...spec.set } })),
          ReturnValues: 'ALL_NEW',
        }),
      ),
    ctx.retry,
  );
  return withoutKeys<WebhookSettings>(out.Attributes ?? {});
}

/** Sets the account's default endpoint (the caller has checked it). */
export function setWebhookUrl(
  ctx: RetryingStoreContext,
  input: { userId: string; url: string; now: Date },
): Promise<WebhookSettings> {
  return updateSettings(ctx, input.userId, { set: { url: input.url, updatedAt: input.now.toISOString() } });
}

/** Removes the account's default endpoint (tasks' own `webhookUrl`s still get their deliveries). */
export function clearWebhookUrl(
  ctx: RetryingStoreContext,
  input: { userId: string; now: Date },
): Promise<WebhookSettings> {
  return updateSettings(ctx, input.userId, { set: { updatedAt: input.now.toISOString() }, remove: ['url'] });
}

/** Stores a new sealed signing secret, replacing the previous one (a rotation). */
export function putWebhookSecret(
  ctx: RetryingStoreContext,
  input: { userId: string; sealedSecret: string; now: Date },
): Promise<WebhookSettings> {
  const at = input.now.toISOString();
  return updateSettings(ctx, input.userId, {
    set: { sealedSecret: input.sealedSecret, secretCreatedAt: at, updatedAt: at },
  });
}
