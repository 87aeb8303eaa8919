/**
 * The key that seals accounts' webhook signing secrets, for `webhooks secret`: locally
 * `WEBHOOK_SECRETS_KEY`, else the running stack's: an in-memory start's is in its run record, a start
 * with a data directory keeps it in `<DATA_DIR>/webhook-secrets-key`; with `--aws` the stack's secret
 * (`WEBHOOK_SECRETS_KEY_ARN`, output `WebhookSecretsKeyArn`), read with the normal AWS credential chain.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { getSecretString } from '../../functions/aws/secrets-manager';
import { UsageError } from '../../functions/core/errors';
import { createSecretBox, type SecretBox } from '../../functions/webhooks/secret-box';
import { IN_MEMORY } from '../../local/stack-state';
import type { Target } from './target';

/** Where `npm start` keeps the local key (local/stack.ts writes it, readable by its owner only). */
export function localWebhookKeyFile(dataDir: string): string {
  return resolve(dataDir, 'webhook-secrets-key');
}

export function webhookSecretBox(aws: boolean, env: NodeJS.ProcessEnv, running?: Target['running']): SecretBox {
  if (aws) {
    const arn = env.WEBHOOK_SECRETS_KEY_ARN;
    if (!arn)
      throw new UsageError('webhooks secret --aws needs WEBHOOK_SECRETS_KEY_ARN (stack output WebhookSecretsKeyArn)');
    return createSecretBox(async () => {
      const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
      const credentials = await defaultProvider()();
      return getSecretString(arn, {
        ...env,
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        AWS_SESSION_TOKEN: credentials.sessionToken,
      });
    });
  }
  if (env.WEBHOOK_SECRETS_KEY) {
    const key = env.WEBHOOK_SECRETS_KEY;
    return createSecretBox(async () => key);
  }
  if (running?.state.webhookSecretsKeyFromEnv) {
    throw new UsageError(
      'the running local stack was started with WEBHOOK_SECRETS_KEY: set the same WEBHOOK_SECRETS_KEY for the CLI',
    );
  }
  const inMemoryKey = running?.state.webhookSecretsKey;
  if (inMemoryKey) return createSecretBox(async () => inMemoryKey);
  const dataDir = running?.dataDir ?? (env.DATA_DIR || '.data');
  if (dataDir === IN_MEMORY) {
    // Never a path under a folder called ":memory:": say what is missing instead.
    throw new UsageError(
      'no webhook secrets key: the in-memory local stack (DATA_DIR=:memory:) keeps its key only in its run record ' +
        'while it runs, and none was found for these settings; set WEBHOOK_SECRETS_KEY to the key the stack uses',
    );
  }
  const file = localWebhookKeyFile(dataDir);
  let key: string;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch {
    throw new UsageError(
      `no webhook secrets key: set WEBHOOK_SECRETS_KEY, or start the local stack once (npm start writes ${file})`,
    );
  }
  return createSecretBox(async () => key);
}
