/**
 * Per-key rate limits, the service's side of them: enrolling each new key (and each account's sessions)
 * in its account's API Gateway usage plan, and giving an account limits of its own. One implementation
 * for both front doors: key management and sign-in call {@link enrollUsageKey}, the operator CLI calls
 * {@link setAccountLimits} and {@link resetAccountLimits}.
 *
 * Locally the stand-in (local/usage-plans.ts) records enrollments and deletions in the table, and the
 * local gateway refuses a usage key whose API Gateway key was deleted, as API Gateway does.
 */

import { type ApiStage, apiGatewayUsagePlans, type UsageKey, type UsagePlans } from '../aws/usage-plans';
import { UsageError } from '../core/errors';
import { type RatePlan, ratePlanProblems, type UsageSubject, usageKeyName, usageKeyOf } from '../core/rate-plan';
import { type Env, REST_API_ID, readEnv, STAGE_NAME, USAGE_PLAN_ID, USAGE_PLAN_NAME } from '../environment/environment';
import { listApiKeys } from '../store/api-keys';
import type { AuditActor } from '../store/audit';
import type { StoreContext } from '../store/client';
import { type Invite, markSessionUsageEnrolled } from '../store/invites';
import { type AccountRatePlan, deleteRatePlan, getRatePlan, putRatePlan } from '../store/rate-plans';

/** The deployed stack's usage plans: the client, the default plan and (for account plans) the stage. */
export interface UsageEnrollment {
  plans: UsagePlans;
  /** The default plan's id (looked up once by name where only the name is known). */
  defaultPlanId: () => Promise<string>;
  stage?: ApiStage;
}

/** A default plan known by id, or by name (looked up on first use, then remembered). */
function defaultPlan(plans: UsagePlans, id: string | undefined, name: string | undefined): () => Promise<string> {
  let known: Promise<string> | undefined = id ? Promise.resolve(id) : undefined;
  return () => {
    known ??= plans.planIdByName(name ?? '').then((found) => {
      if (!found) {
        known = undefined;
        throw new Error(`no API Gateway usage plan is named ${name}`);
      }
      return found;
    });
    return known;
  };
}

/** The local stack's stand-in for API Gateway's usage plans (local/usage-plans.ts); never set in AWS. */
let standIn: UsageEnrollment | undefined;

/**
 * Installs the local stand-in: where no usage plan is configured, {@link usageEnrollmentFromEnv} returns it,
 * so the handlers the local stack runs in its own process enroll and delete keys on the same path as
 * deployed. Set before the handlers load (they read their enrollment when they load).
 */
export function useUsagePlansStandIn(enrollment: UsageEnrollment | undefined): void {
  standIn = enrollment;
}

/**
 * The deployment's usage plans from `USAGE_PLAN_ID` (the CLI, from the stack output) or
 * `USAGE_PLAN_NAME` (the functions), and `REST_API_ID`, `STAGE_NAME` for account plans; undefined where
 * there are none to enroll in (the local stack, LocalStack mode).
 */
export function usageEnrollmentFromEnv(
  env?: Env,
  plans: () => UsagePlans = apiGatewayUsagePlans,
): UsageEnrollment | undefined {
  const planId = readEnv(USAGE_PLAN_ID, env);
  const planName = readEnv(USAGE_PLAN_NAME, env);
  if (!planId && !planName) return standIn;
  const client = plans();
  const apiId = readEnv(REST_API_ID, env);
  const stageName = readEnv(STAGE_NAME, env);
  const stage = apiId && stageName ? { apiId, stage: stageName } : undefined;
  return {
    plans: client,
    defaultPlanId: defaultPlan(client, planId, planName),
    ...(stage ? { stage } : {}),
  };
}

function usageKey(ctx: StoreContext, subject: UsageSubject): UsageKey {
  return { value: usageKeyOf(ctx.tableName, subject), name: usageKeyName(ctx.tableName, subject) };
}

/**
 * Enrolls a subject (a new key, or an account's sessions) in its account's plan, so API Gateway lets its
 * requests through. Idempotent; a no-op without usage plans.
 */
export async function enrollUsageKey(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  userId: string,
  subject: UsageSubject,
): Promise<void> {
  if (!enrollment) return;
  const own = await getRatePlan(ctx, userId);
  await enrollment.plans.enroll(usageKey(ctx, subject), own?.usagePlanId ?? (await enrollment.defaultPlanId()));
}

/**
 * Enrolls the account's sessions once for the account's life (the CLI's invitation does it when it can,
 * else the first sign-in), and records it on the invitation: later sign-ins make no API Gateway call, so
 * a burst of control-plane calls elsewhere (key creations) cannot fail a sign-in. A no-op without usage
 * plans. Throws ControlPlaneBusyError when API Gateway refuses; nothing is recorded then.
 */
export async function enrollSessionsOnce(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  invite: Pick<Invite, 'email' | 'userId' | 'sessionUsageEnrolledAt'>,
  now?: Date,
): Promise<void> {
  if (!enrollment || invite.sessionUsageEnrolledAt !== undefined) return;
  await enrollUsageKey(ctx, enrollment, invite.userId, { credential: 'session', userId: invite.userId });
  await markSessionUsageEnrolled(ctx, { email: invite.email, ...(now ? { now } : {}) });
}

/** Every usage key of an account: each of its API keys, and its sessions. */
async function accountUsageKeys(ctx: StoreContext, userId: string): Promise<UsageKey[]> {
  const apiKeys = await listApiKeys(ctx, userId);
  return [
    ...apiKeys.map((key) => usageKey(ctx, { credential: 'key', keyId: key.keyId })),
    usageKey(ctx, { credential: 'session', userId }),
  ];
}

/** Throws a UsageError naming each field of the plan that is out of range. */
export function assertRatePlan(plan: RatePlan): void {
  const problems = Object.entries(ratePlanProblems(plan)).map(([field, problem]) => `${field} ${problem}`);
  if (problems.length > 0) throw new UsageError(problems.join('; '));
}

/**
 * Gives every key of the account these limits (each key keeps a bucket of its own). Deployed, the account
 * gets a usage plan of its own and its keys move there; the plan's id is recorded before the keys move,
 * so running the command again after a failure finishes the move.
 */
export async function setAccountLimits(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: { userId: string; plan: RatePlan; actor: AuditActor; now?: Date },
): Promise<AccountRatePlan> {
  assertRatePlan(input.plan);
  const plan: AccountRatePlan = { ...input.plan };
  if (enrollment) {
    const existing = await getRatePlan(ctx, input.userId);
    if (existing?.usagePlanId) {
      await enrollment.plans.updatePlan(existing.usagePlanId, input.plan);
      plan.usagePlanId = existing.usagePlanId;
    } else {
      if (!enrollment.stage)
        throw new UsageError('limits set with --aws needs REST_API_ID and STAGE_NAME (stack outputs ApiId, StageName)');
      plan.usagePlanId = await enrollment.plans.createPlan(
        `${ctx.tableName}-account-${input.userId}`,
        input.plan,
        enrollment.stage,
      );
    }
  }
  await putRatePlan(ctx, { userId: input.userId, plan, actor: input.actor, now: input.now });
  if (enrollment && plan.usagePlanId) {
    await enrollment.plans.move(
      await accountUsageKeys(ctx, input.userId),
      await enrollment.defaultPlanId(),
      plan.usagePlanId,
    );
  }
  return plan;
}

/** Puts the account back on the default plan (deployed: its keys move back and its own plan is deleted). */
export async function resetAccountLimits(
  ctx: StoreContext,
  enrollment: UsageEnrollment | undefined,
  input: { userId: string; actor: AuditActor; now?: Date },
): Promise<{ hadOwnPlan: boolean }> {
  const existing = await getRatePlan(ctx, input.userId);
  if (!existing) return { hadOwnPlan: false };
  if (enrollment && existing.usagePlanId) {
    await enrollment.plans.move(
      await accountUsageKeys(ctx, input.userId),
      existing.usagePlanId,
      await enrollment.defaultPlanId(),
    );
    await enrollment.plans.deletePlan(existing.usagePlanId);
  }
  await deleteRatePlan(ctx, { userId: input.userId, actor: input.actor, now: input.now });
  return { hadOwnPlan: true };
}
