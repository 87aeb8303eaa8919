/**
 * API Gateway's usage plans, for the local gateway, with the same semantics: after the authorizer allows
 * a request, its `usageIdentifierKey` names the caller's API Gateway API key; a key in no plan is a 403;
 * otherwise the request takes a token from the key's bucket (size `burst`, refilled at `ratePerSecond`)
 * and counts against the key's quota for the UTC day. An empty bucket or a spent quota is a 429 with
 * `Retry-After`. Deployed, API Gateway does this itself (lib/generation-service-stack.ts).
 */

import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { UsageEnrollment } from '../functions/auth/rate-limits';
import type { UsageKey, UsagePlans } from '../functions/aws/usage-plans';
import {
  QUOTA_EXCEEDED_BODY,
  QUOTA_RETRY_AFTER_SECONDS,
  type RatePlan,
  THROTTLED_BODY,
  THROTTLED_RETRY_AFTER_SECONDS,
  type UsageSubject,
  usageKeyName,
  usageKeyOf,
} from '../functions/core/rate-plan';
import type { StoreContext } from '../functions/store/client';
import { getRatePlan } from '../functions/store/rate-plans';

function subjectOf(context: Readonly<Record<string, string>>): UsageSubject | undefined {
  if (context.credential === 'key' && context.keyId) return { credential: 'key', keyId: context.keyId };
  if (context.credential === 'session' && context.userId) return { credential: 'session', userId: context.userId };
  return undefined;
}

/**
 * The plan of a usage key, or undefined when it is in none. `context` is the authorizer's context of the
 * request (credential, userId, keyId), which tells the local stack whose key it should be.
 */
export type PlanLookup = (usageKey: string, context: Readonly<Record<string, string>>) => Promise<RatePlan | undefined>;

/** Let the request through, or answer it. */
export type UsageVerdict =
  | { ok: true }
  | { ok: false; status: 403 | 429; body: { error: string }; headers: Record<string, string> };

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms). */
  at: number;
  /** UTC day (`YYYY-MM-DD`) the count belongs to. */
  day: string;
  usedToday: number;
}

/**
 * A limiter over `lookup`'s plans. `now` (ms) is injectable so the semantics can be tested without
 * waiting. Buckets are kept in memory, one per usage key, as API Gateway keeps one per API key.
 */
export function createUsageLimiter(lookup: PlanLookup, now: () => number = Date.now) {
  const buckets = new Map<string, Bucket>();

  return async function admit(
    usageKey: string | undefined,
    context: Readonly<Record<string, string>>,
  ): Promise<UsageVerdict> {
    // API Gateway answers a method that requires a key with 403 when the key is missing or in no plan.
    const plan = usageKey ? await lookup(usageKey, context) : undefined;
    if (!usageKey || !plan) return { ok: false, status: 403, body: { error: 'Forbidden' }, headers: {} };
    const at = now();
    const day = new Date(at).toISOString().slice(0, 10);
    let bucket = buckets.get(usageKey);
    if (!bucket) {
      bucket = { tokens: plan.burst, at, day, usedToday: 0 };
      buckets.set(usageKey, bucket);
    }
    // Refill for the time that passed, never beyond the (possibly changed) burst.
    bucket.tokens = Math.min(plan.burst, bucket.tokens + ((at - bucket.at) / 1000) * plan.ratePerSecond);
    bucket.at = at;
    if (bucket.day !== day) {
      bucket.day = day;
      bucket.usedToday = 0;
    }
    if (bucket.tokens < 1) {
      return {
        ok: false,
        status: 429,
        body: { ...THROTTLED_BODY },
        headers: { 'Retry-After': String(THROTTLED_RETRY_AFTER_SECONDS) },
      };
    }
    if (plan.dailyQuota !== undefined && bucket.usedToday >= plan.dailyQuota) {
      return {
        ok: false,
        status: 429,
        body: { ...QUOTA_EXCEEDED_BODY },
        headers: { 'Retry-After': String(QUOTA_RETRY_AFTER_SECONDS) },
      };
    }
    bucket.tokens -= 1;
    bucket.usedToday += 1;
    return { ok: true };
  };
}

/** A usage-plan limiter: what the local gateway calls after an Allow. */
export type UsageLimiter = ReturnType<typeof createUsageLimiter>;

/**
 * The local stack's plans. Deployed, key creation enrolls each key's usage key in its account's plan;
 * locally every usage key the authorizer derives for an allowed request is taken as enrolled, in the
 * default plan unless the operator gave the account its own (`limits set`). An account's own plan is read
 * from the table at most once per `cacheSeconds`, as API Gateway takes a moment to apply a plan change.
 */
export function storePlanLookup(
  store: StoreContext,
  defaultPlan: RatePlan,
  cacheSeconds: number,
  now: () => number = Date.now,
): PlanLookup {
  const cache = new Map<string, { plan: RatePlan; until: number }>();
  return async (usageKey, context) => {
    const userId = context.userId;
    const subject = subjectOf(context);
    // Only the key the authorizer derives for this request's credential exists; anything else is in no plan.
    if (userId === undefined || subject === undefined || usageKey !== usageKeyOf(store.tableName, subject)) {
      return undefined;
    }
    // A deleted API Gateway key is in no plan any more (API Gateway answers 403), whatever its key says.
    if (subject.credential === 'key' && (await isDeleted(store, usageKeyName(store.tableName, subject)))) {
      return undefined;
    }
    const cached = cache.get(userId);
    if (cached && cached.until > now()) return cached.plan;
    const plan = (await getRatePlan(store, userId)) ?? defaultPlan;
    if (cacheSeconds > 0) cache.set(userId, { plan, until: now() + cacheSeconds * 1000 });
    return plan;
  };
}

/**
 * The stand-in's record of one API Gateway key (`LOCALAPIKEY#<name>` / `LOCALAPIKEY`): enrolled in
 * `planId`, or `deleted` (kept, so the local gateway can refuse it as API Gateway refuses a deleted key).
 * Keys made before the stand-in existed have no record and count as enrolled.
 */
const localKey = (name: string) => ({ PK: `LOCALAPIKEY#${name}`, SK: 'LOCALAPIKEY' });

async function isDeleted(store: StoreContext, name: string): Promise<boolean> {
  const found = await store.doc.send(
    new GetCommand({ TableName: store.tableName, Key: localKey(name), ConsistentRead: true }),
  );
  return found.Item?.deleted === true;
}

/** The stand-in's default plan id (the stack's is looked up by name). */
export const LOCAL_DEFAULT_PLAN_ID = 'local-default';

/**
 * API Gateway's usage-plan control plane, for the local stack and the CLI talking to it: enrollments and
 * deletions are recorded in the table, so key issuing, revocation and the sweeper's repair run the same
 * code as deployed, and the local gateway refuses a deleted key. Account plans stay the table's own
 * (`limits set` records them; the gateway reads them), so the plan operations change nothing here.
 */
export function tableUsagePlans(store: () => StoreContext): UsagePlans {
  return {
    async enroll(key: UsageKey, planId: string) {
      const ctx = store();
      await ctx.doc.send(
        new PutCommand({
          TableName: ctx.tableName,
          Item: { ...localKey(key.name), name: key.name, value: key.value, planId },
        }),
      );
    },
    async remove(key: UsageKey) {
      const ctx = store();
      const found = await ctx.doc.send(
        new GetCommand({ TableName: ctx.tableName, Key: localKey(key.name), ConsistentRead: true }),
      );
      if (found.Item?.deleted === true) return false;
      await ctx.doc.send(
        new PutCommand({ TableName: ctx.tableName, Item: { ...localKey(key.name), name: key.name, deleted: true } }),
      );
      return found.Item !== undefined;
    },
    async move(keys: readonly UsageKey[]) {
      return keys.length;
    },
    async createPlan(name: string) {
      return `local-${name}`;
    },
    async updatePlan() {},
    async deletePlan() {},
    async planIdByName() {
      return LOCAL_DEFAULT_PLAN_ID;
    },
  };
}

/** The stand-in as an enrollment: what the local stack installs and the CLI uses without `--aws`. */
export function localUsageEnrollment(store: () => StoreContext): UsageEnrollment {
  return { plans: tableUsagePlans(store), defaultPlanId: async () => LOCAL_DEFAULT_PLAN_ID };
}
