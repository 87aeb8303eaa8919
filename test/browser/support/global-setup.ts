/**
 * Jest global setup of the browser project: finds Chromium first (so a machine without one fails in
 * a second, with the way to get it), then starts the local stack on free ports, exactly as `npm start`
 * does (it builds the dashboard), with one invited account holding credits.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { grantCredits } from '../../../functions/money/grant';
import { createDocumentClient } from '../../../functions/store/client';
import { inviteAccount } from '../../../functions/store/invites';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../../local/dynamodb-local';
import type { SpawnedLocalStack } from '../../../local/spawn-local-stack';
import { acquireSharedDynamoDb, type JestRunShape } from '../../support/shared-dynamodb';
import { spawnTestStack } from '../../support/test-stack';
import { chromiumPath } from './chromium';
import { BROWSER_CONTEXT_ENV, type BrowserTestContext } from './context';
import { type HeldPort, holdPort } from './held-port';

declare global {
  // Jest runs the global setup and teardown in one process: the stack travels on globalThis.
  var __browserLocalStack: SpawnedLocalStack | undefined;
  var __browserWebhookPort: HeldPort | undefined;
}

const TABLE_NAME = 'generation-service-browser';
const ACCOUNT = {
  email: 'browser-user@browser.test',
  password: randomBytes(12).toString('base64url'),
  userId: 'browser-user',
  credits: 1000,
};
/** A second account, for the test that closes it (test/browser/account.test.ts): the first stays open. */
const CLOSING_ACCOUNT = {
  email: 'closing-user@browser.test',
  password: randomBytes(12).toString('base64url'),
  userId: 'closing-user',
  credits: 100,
};
/** The Webhooks test's own account, so its endpoints and deliveries never meet the other file's steps. */
const WEBHOOKS_ACCOUNT = {
  email: 'browser-webhooks@browser.test',
  password: randomBytes(12).toString('base64url'),
  userId: 'browser-webhooks',
};

export default async function setup(globalConfig: JestRunShape): Promise<void> {
  const chromium = chromiumPath();
  // The stack keeps its table on the run's one DynamoDB Local (test/support/shared-dynamodb.ts).
  await acquireSharedDynamoDb(globalConfig);
  // The Webhooks test's receiver: plain http to it is allowed (WEBHOOK_INSECURE_ORIGINS), so its port is held from now.
  const webhookPort = await holdPort();
  globalThis.__browserWebhookPort = webhookPort;
  let stack: SpawnedLocalStack | undefined;
  let lastError: unknown;
  // A free port can be taken between finding it and binding it: a few tries.
  for (let attempt = 0; attempt < 3 && !stack; attempt++) {
    try {
      stack = await spawnTestStack({
        // Generous, for a loaded machine.
        readyTimeoutMs: 180_000,
        env: {
          TABLE_NAME,
          PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
          // Every 2 s: each sweep of an idle stack costs about 65 ms of CPU, and this stack is up for the whole run.
          SWEEPER_INTERVAL_SECONDS: '2',
          DASHBOARD_DIR: '',
          LOCAL_IDP_ACCOUNTS: [ACCOUNT, CLOSING_ACCOUNT, WEBHOOKS_ACCOUNT]
            .map((account) => `${account.email}:${account.password}`)
            .join(','),
          WEBHOOK_INSECURE_ORIGINS: webhookPort.origin,
          // A failed delivery waits an hour: the Webhooks test's log keeps the state it filters on (redelivery is the test's to make).
          WEBHOOK_RETRY_DELAYS_SECONDS: '3600',
          // 1 MB, so the dashboard test's oversize reference file stays small.
          UPLOAD_MAX_BYTES: String(1024 * 1024),
        },
      });
    } catch (error) {
      lastError = error;
    }
  }
  if (!stack) throw lastError;
  globalThis.__browserLocalStack = stack;

  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
  try {
    const store = { doc, tableName: TABLE_NAME };
    await inviteAccount(store, { email: ACCOUNT.email, userId: ACCOUNT.userId });
    await grantCredits(store, { userId: ACCOUNT.userId, amount: ACCOUNT.credits, grantId: 'browser-welcome' });
    await inviteAccount(store, { email: CLOSING_ACCOUNT.email, userId: CLOSING_ACCOUNT.userId });
    await grantCredits(store, { userId: CLOSING_ACCOUNT.userId, amount: CLOSING_ACCOUNT.credits, grantId: 'closing' });
    await inviteAccount(store, { email: WEBHOOKS_ACCOUNT.email, userId: WEBHOOKS_ACCOUNT.userId });
  } finally {
    doc.destroy();
  }

  const screenshotDir = resolve(__dirname, '../../../test-results/dashboard');
  mkdirSync(screenshotDir, { recursive: true });
  const context: BrowserTestContext = {
    baseUrl: stack.baseUrl,
    chromium,
    account: ACCOUNT,
    closingAccount: CLOSING_ACCOUNT,
    screenshotDir,
    dynamodbEndpoint: stack.dynamodbEndpoint,
    tableName: TABLE_NAME,
    webhooks: { account: WEBHOOKS_ACCOUNT, receiverOrigin: webhookPort.origin },
  };
  process.env[BROWSER_CONTEXT_ENV] = JSON.stringify(context);
}
