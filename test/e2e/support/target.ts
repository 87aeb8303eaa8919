/**
 * What the end-to-end suite runs against, handed from the global setup to the test files in one
 * environment variable (JSON), and which checks that target can run.
 *
 * Targets differ in what they can show, not in how the service must behave: a check that needs a key
 * or a capability the target lacks is not defined there at all (never skipped), and the global setup
 * prints each left-out check once, with the reason.
 */

/** The one variable that carries the context (JSON) from the global setup to the test files. */
export const E2E_CONTEXT_ENV = 'E2E_CONTEXT';

export type TargetKind = 'local' | 'localstack' | 'aws';

/** A key the suite uses, with the credit balance of its user when the suite knows it exactly. */
export interface TargetKey {
  apiKey: string;
  balance?: number;
}

export interface E2eContext {
  kind: TargetKind;
  /** No trailing slash. */
  baseUrl: string;
  keys: {
    /** A user with plenty of credits: every task loop runs on it. */
    main: TargetKey;
    /** A second user: ownership, and the idempotency debit check (its balance must be below PROBE_COST). */
    other?: TargetKey;
    /** A user with fewer credits than the cheapest task (3). */
    poor?: TargetKey;
    /** A key whose IP allowlist excludes the machine running the suite. */
    ipRestricted?: TargetKey;
    /** A user only the HTTP fuzzer uses, with a known balance below the 320-credit balance probe. */
    fuzz?: TargetKey;
  };
  /**
   * Sign-in through the local OpenID provider (local stack only): an invited account, an account the
   * provider knows but nobody invited, another user's key id, and a session that has expired.
   */
  accounts?: {
    invited: { email: string; password: string; userId: string; balance: number };
    stranger: { email: string; password: string };
    otherUsersKeyId: string;
    expiredSessionId: string;
    /**
     * An invited account the expiry check signs in with to issue itself a key that ends seconds later
     * (POST /api/keys with `expiresAt`): jest decides when that check runs, so the key is made then.
     */
    keyIssuer?: { email: string; password: string };
  };
  /** The target's upstream provider is the mock provider (mockOutcome / mockDelayMs controls work). */
  mockProvider: boolean;
  /** The target's MAX_PENDING_SECONDS, when it is small enough to wait for a TIMEOUT. */
  maxPendingSeconds?: number;
  /** Bound on polling one task to a terminal status. */
  pollTimeoutMs: number;
}

/** What a target can show. A capability it lacks maps to the reason, printed by the setup. */
export type Capability =
  | 'gatewayBodies'
  | 'sourceIp'
  | 'mockProvider'
  | 'shortTimeout'
  | 'otherUserKey'
  | 'poorKey'
  | 'ipRestrictedKey'
  | 'expiringKey'
  | 'fuzzKey'
  | 'localSignIn'
  | 'ownLocalStack';

/** Checks that not every target can run, with what each needs. Every other check runs everywhere. */
export const CONDITIONAL_CHECKS = {
  taskLoops: {
    needs: ['mockProvider'],
    what: 'submit -> poll -> download for image models 1-4 and video families A-F',
  },
  providerFailures: {
    needs: ['mockProvider'],
    what: 'provider failure, refusal and broken result -> status 2 with errorCode, refunded',
  },
  taskTimeout: { needs: ['mockProvider', 'shortTimeout'], what: 'a task that never finishes -> TIMEOUT, refunded' },
  gatewayBodies: {
    needs: ['gatewayBodies'],
    what: 'bodies of the answers the gateway makes itself (401, 403, unknown route 404, 413); their status codes are checked everywhere',
  },
  ownership: { needs: ['otherUserKey'], what: "another user's GET of a task -> 404 Task not found" },
  uploadOwnership: {
    needs: ['otherUserKey'],
    what: "another account's upload in inputImageUrls -> the same 400 as a missing one",
  },
  uploadTask: {
    needs: ['mockProvider'],
    what: 'an uploaded PNG and an inline data: PNG -> an image-to-image task that completes',
  },
  idempotentDebit: {
    needs: ['otherUserKey'],
    what: 'an idempotent replay debits once (balance read from a 402 answer)',
  },
  insufficientCredits: { needs: ['poorKey'], what: 'not enough credits -> 402 { error, required, balance }' },
  ipAllowlist: { needs: ['sourceIp', 'ipRestrictedKey'], what: 'a key used outside its IP allowlist -> 403' },
  keyExpiry: {
    needs: ['expiringKey'],
    what: 'a key works until its expiry and gets 401 after it',
  },
  fuzzCredits: {
    needs: ['fuzzKey'],
    what: 'HTTP fuzzing moves no credit on a rejected request (balance of a dedicated user, read from a 402)',
  },
  providerCallbacks: {
    needs: ['mockProvider'],
    what: 'a dropped provider callback still completes by polling; a forged callback gets 404 and changes nothing',
  },
  callbackCompletes: {
    needs: ['ownLocalStack'],
    what: 'a task completes by the provider callback alone (a second local stack with polling and the sweeper off)',
  },
  webhooks: {
    needs: ['ownLocalStack'],
    what: 'a signed webhook verified by a test receiver, retried after a 500 with the same webhook-id and both attempts recorded; private endpoints refused at submit and never called; a hanging receiver does not hold up the task (a second local stack with a short retry schedule)',
  },
  accounts: {
    needs: ['localSignIn', 'mockProvider'],
    what: 'sign-in through the OpenID provider, sessions, CSRF, key management with the session',
  },
} as const satisfies Record<string, { needs: readonly Capability[]; what: string }>;

export type CheckId = keyof typeof CONDITIONAL_CHECKS;

/** Why each capability is missing on a target, or nothing when the target has it. */
export function missingCapabilities(context: E2eContext): Partial<Record<Capability, string>> {
  const missing: Partial<Record<Capability, string>> = {};
  if (context.kind === 'localstack') {
    missing.gatewayBodies = 'the LocalStack free edition ignores gateway response bodies';
    missing.sourceIp = 'LocalStack reports every sourceIp as 127.0.0.1';
  }
  if (!context.mockProvider) {
    missing.mockProvider = 'the target does not talk to the mock provider (set E2E_MOCK_PROVIDER=true when it does)';
  }
  if (context.maxPendingSeconds === undefined) {
    missing.shortTimeout = "the target's MAX_PENDING_SECONDS is unknown (set E2E_MAX_PENDING_SECONDS to wait for it)";
  }
  const local = context.kind === 'local';
  if (!context.keys.other) missing.otherUserKey = 'API_KEY_OTHER_USER is not set';
  if (!context.keys.poor) missing.poorKey = 'API_KEY_POOR is not set';
  if (!context.keys.ipRestricted) {
    missing.ipRestrictedKey = local ? 'no allowlisted key was created' : 'API_KEY_IP_RESTRICTED is not set';
  }
  if (!context.accounts) {
    missing.localSignIn = 'signing in needs accounts at the identity provider; only the local stack makes them';
  }
  if (!local) missing.ownLocalStack = 'only a local run can start a second local stack of its own';
  if (!context.keys.fuzz) missing.fuzzKey = 'only the local stack seeds a dedicated fuzzing user';
  if (!context.accounts?.keyIssuer) {
    missing.expiringKey =
      'the suite issues its short-lived key with a session of an account only the local stack makes';
  }
  return missing;
}

/** The checks a target leaves out, each with the reasons. */
export function omittedChecks(context: E2eContext): { check: CheckId; what: string; reasons: string[] }[] {
  const missing = missingCapabilities(context);
  const omitted: { check: CheckId; what: string; reasons: string[] }[] = [];
  for (const [check, { needs, what }] of Object.entries(CONDITIONAL_CHECKS) as [
    CheckId,
    (typeof CONDITIONAL_CHECKS)[CheckId],
  ][]) {
    const reasons = needs.flatMap((need) => missing[need] ?? []);
    if (reasons.length > 0) omitted.push({ check, what, reasons });
  }
  return omitted;
}

/** The target as the test files see it. */
export interface Target extends E2eContext {
  /** Whether the target has a capability. */
  can(capability: Capability): boolean;
  /** Whether the target runs a conditional check; test files define its tests only when it does. */
  runs(check: CheckId): boolean;
  /** A key the check needs; throws when it is absent (define the test under `runs` first). */
  key<K extends keyof E2eContext['keys']>(name: K): NonNullable<E2eContext['keys'][K]>;
}

function readContext(): E2eContext {
  const raw = process.env[E2E_CONTEXT_ENV];
  if (!raw) {
    throw new Error(`${E2E_CONTEXT_ENV} is not set: run the e2e suite through jest's "e2e" project (npm run test:e2e)`);
  }
  return JSON.parse(raw) as E2eContext;
}

/** Loads the target from the environment the global setup prepared. */
export function loadTarget(): Target {
  const context = readContext();
  const missing = missingCapabilities(context);
  return {
    ...context,
    can: (capability) => missing[capability] === undefined,
    runs: (check) => CONDITIONAL_CHECKS[check].needs.every((need) => missing[need] === undefined),
    key: <K extends keyof E2eContext['keys']>(name: K) => {
      const key = context.keys[name];
      if (!key) throw new Error(`The target has no "${name}" key`);
      return key as NonNullable<E2eContext['keys'][K]>;
    },
  };
}
