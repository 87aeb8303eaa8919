/**
 * The local stack as a child process (`node bin/run-ts.cjs local/start.ts`) on free ports, in memory, with
 * the users and keys the suite needs written straight into its DynamoDB Local. Only the global setup and
 * teardown use this module: the test files see nothing but HTTP.
 */

import { randomBytes } from 'node:crypto';
import { grantCredits } from '../../../functions/money/grant';
import { putApiKey } from '../../../functions/money/key-issue';
import { createDocumentClient, type StoreContext } from '../../../functions/store/client';
import { inviteAccount } from '../../../functions/store/invites';
import { auditAll } from '../../../functions/store/ledger';
import { createSession } from '../../../functions/store/sessions';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../../local/dynamodb-local';
import type { SpawnedLocalStack } from '../../../local/spawn-local-stack';
import { spawnTestStack } from '../../support/test-stack';
import type { E2eContext } from './target';

const TABLE_NAME = 'generation-service-e2e';
/** The stack's start (DynamoDB Local's JVM first): generous, for a loaded machine. */
const READY_TIMEOUT_MS = 180_000;

/** Small enough to wait for a TIMEOUT in a test, large enough for every normal task to finish. */
export const LOCAL_MAX_PENDING_SECONDS = 8;
export const USERS = {
  main: { userId: 'e2e-main', credits: 100_000 },
  other: { userId: 'e2e-other', credits: 50 },
  poor: { userId: 'e2e-poor', credits: 2 },
  restricted: { userId: 'e2e-restricted', credits: 10 },
  expiring: { userId: 'e2e-expiring', credits: 10 },
  // Below the 320-credit balance probe, so a 402 tells its balance (test/e2e/fuzz-http.test.ts).
  fuzz: { userId: 'e2e-fuzz', credits: 300 },
  // Signs in through the local OpenID provider (test/e2e/accounts.test.ts).
  session: { userId: 'e2e-session', credits: 500 },
} as const;

/** The identity provider's accounts for the run (passwords made per run). */
const SIGN_IN = {
  invited: { email: 'e2e-invited@e2e.test', password: randomBytes(12).toString('base64url') },
  stranger: { email: 'e2e-stranger@e2e.test', password: randomBytes(12).toString('base64url') },
  // The expiry check's account: it issues itself a key that ends seconds later (test/e2e/lifetimes.test.ts).
  keyIssuer: { email: 'e2e-expiring@e2e.test', password: randomBytes(12).toString('base64url') },
};

export interface RunningLocalStack extends SpawnedLocalStack {
  store: StoreContext;
}

/** Starts `local/start.ts` on free ports with the suite's settings, on the run's DynamoDB Local. */
function spawnStack(): Promise<SpawnedLocalStack> {
  return spawnTestStack({
    readyTimeoutMs: READY_TIMEOUT_MS,
    env: {
      TABLE_NAME,
      // The black-box tier runs the dispatcher and the stream workers on their deployed triggers (the
      // table stream's filtered records, SQS wake-ups in whole seconds, the mappings' batches and
      // retries: local/deployed-driver.ts); the integration tier runs the same flows under the fast loop.
      DISPATCH_DRIVER: 'deployed',
      PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
      MAX_PENDING_SECONDS: String(LOCAL_MAX_PENDING_SECONDS),
      // Every 2 s: each sweep of an idle stack costs about 65 ms of CPU, and this stack is up for the whole run.
      SWEEPER_INTERVAL_SECONDS: '2',
      // No authorizer cache (the default, and the only value allowed): expiry is checked on every request.
      AUTHORIZER_CACHE_TTL_SECONDS: '',
      LOCAL_IDP_ACCOUNTS: Object.values(SIGN_IN)
        .map(({ email, password }) => `${email}:${password}`)
        .join(','),
    },
  });
}

/** The stack, its store, and the suite's users and keys. */
export async function startLocalStack(): Promise<{ stack: RunningLocalStack; context: E2eContext }> {
  let lastError: unknown;
  // A free port can be taken between finding it and binding it: a few tries.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const spawned = await spawnStack();
      const store: StoreContext = {
        doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: spawned.dynamodbEndpoint }),
        tableName: TABLE_NAME,
      };
      const stack: RunningLocalStack = { ...spawned, store };
      try {
        return { stack, context: await seed(stack) };
      } catch (error) {
        store.doc.destroy();
        await stack.stop();
        throw error;
      }
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function seed(stack: RunningLocalStack): Promise<E2eContext> {
  const { store } = stack;
  for (const user of Object.values(USERS)) {
    await grantCredits(store, { userId: user.userId, amount: user.credits, grantId: `e2e-${user.userId}` });
  }
  const key = (userId: string, name: string, extra: { allowedCidrs?: string[] } = {}) =>
    putApiKey(store, { userId, name, ...extra });
  const main = await key(USERS.main.userId, 'e2e main');
  const other = await key(USERS.other.userId, 'e2e other');
  const poor = await key(USERS.poor.userId, 'e2e poor');
  const restricted = await key(USERS.restricted.userId, 'e2e restricted', { allowedCidrs: ['10.0.0.0/8'] });
  const fuzz = await key(USERS.fuzz.userId, 'e2e fuzz');
  await inviteAccount(store, { email: SIGN_IN.invited.email, userId: USERS.session.userId });
  await inviteAccount(store, { email: SIGN_IN.keyIssuer.email, userId: USERS.expiring.userId });
  // A session that ended a minute ago: the cookie of someone who comes back too late.
  const expired = await createSession(store, {
    userId: USERS.session.userId,
    email: SIGN_IN.invited.email,
    idleSeconds: 60,
    absoluteSeconds: 60,
    now: new Date(Date.now() - 120_000),
  });

  return {
    kind: 'local',
    baseUrl: stack.baseUrl,
    keys: {
      main: { apiKey: main.apiKey, balance: USERS.main.credits },
      other: { apiKey: other.apiKey, balance: USERS.other.credits },
      poor: { apiKey: poor.apiKey, balance: USERS.poor.credits },
      ipRestricted: { apiKey: restricted.apiKey },
      fuzz: { apiKey: fuzz.apiKey, balance: USERS.fuzz.credits },
    },
    accounts: {
      invited: { ...SIGN_IN.invited, userId: USERS.session.userId, balance: USERS.session.credits },
      stranger: SIGN_IN.stranger,
      otherUsersKeyId: other.keyId,
      expiredSessionId: expired.sessionId,
      keyIssuer: SIGN_IN.keyIssuer,
    },
    mockProvider: true,
    maxPendingSeconds: LOCAL_MAX_PENDING_SECONDS,
    // A task's end on the local stack waits on the media worker (the stream poller over DynamoDB Local's
    // JVM): seconds when idle, many times that on a 2-core machine running a second copy of the suite.
    pollTimeoutMs: 120_000,
  };
}

/**
 * The ledger invariant over every account of the run: balance = sum of the ledger, never negative.
 * @returns a description of every violation (empty when the invariant holds)
 */
export async function ledgerViolations(store: StoreContext): Promise<string[]> {
  const audit = await auditAll(store);
  const problems = audit.users
    .filter((user) => !user.ok)
    .map((user) => `${user.userId}: balance ${user.balance}, ledger sum ${user.ledgerSum} (${user.entries} entries)`);
  const audited = new Set(audit.users.map((user) => user.userId));
  for (const user of Object.values(USERS)) {
    if (!audited.has(user.userId)) problems.push(`${user.userId}: no account found to audit`);
  }
  return problems;
}
