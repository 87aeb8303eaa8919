/**
 * Request limits: a steady rate and a burst (a token bucket, as API Gateway's usage plans apply them) and
 * an optional daily quota. The default plan comes from the stack configuration; the operator CLI may give
 * one account a plan of its own. One set of rules for both, used by the CDK configuration, the CLI and
 * the local gateway.
 *
 * The plan is the account's; the bucket is each key's. Every API key of an account has a bucket of its
 * own of the account's size, so a runaway script on one key never throttles the account's other keys;
 * the account's dashboard sessions share one more bucket.
 */
import { createHash } from 'node:crypto';

/** The request limits every key of an account gets. */
export interface RatePlan {
  /** Steady requests per second (whole, so one token is always back within `Retry-After: 1`). */
  ratePerSecond: number;
  /** Requests that may arrive at once (the bucket's size). */
  burst: number;
  /** Requests per UTC day; undefined for no quota. */
  dailyQuota?: number;
}

/**
 * The default plan. A client may poll each pending task every 2 s (the documented promise): 100 tasks in
 * flight are 50 requests/s, which leaves 50/s for submits and listings; the burst lets a batch of 200
 * submits through at once (one account accepts about 126/s, docs/development/performance.md). No daily quota.
 */
export const DEFAULT_RATE_PLAN: Readonly<RatePlan> = { ratePerSecond: 100, burst: 200 };

/** API Gateway's default account-level (per region) steady rate: no plan can use more. */
export const MAX_RATE_PER_SECOND = 10_000;
/** API Gateway's default account-level burst. */
export const MAX_BURST = 5_000;
/** Far beyond any day's traffic; a guard against typos. */
export const MAX_DAILY_QUOTA = 1_000_000_000;

/** `Retry-After` of a throttled request: with a whole rate of at least 1/s a token is back within a second. */
export const THROTTLED_RETRY_AFTER_SECONDS = 1;
/**
 * `Retry-After` of a request over the daily quota. API Gateway's gateway responses can only carry a fixed
 * header, not the time to the next UTC midnight, so both the deployment and the local gateway say one hour.
 */
export const QUOTA_RETRY_AFTER_SECONDS = 3600;

/** The bodies of the two 429 answers (gateway responses deployed, the local gateway locally). */
export const THROTTLED_BODY = { error: 'Too many requests' } as const;
export const QUOTA_EXCEEDED_BODY = { error: 'Daily quota exceeded' } as const;

/** What is wrong with one field of a plan, keyed by the field name. */
export type RatePlanProblems = Partial<Record<keyof RatePlan, string>>;

function wholeIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

/** The problems of a plan (empty when it is valid). */
export function ratePlanProblems(plan: RatePlan): RatePlanProblems {
  const problems: RatePlanProblems = {};
  if (!wholeIn(plan.ratePerSecond, 1, MAX_RATE_PER_SECOND)) {
    problems.ratePerSecond = `must be a whole number from 1 to ${MAX_RATE_PER_SECOND}`;
  }
  if (!wholeIn(plan.burst, 1, MAX_BURST)) problems.burst = `must be a whole number from 1 to ${MAX_BURST}`;
  if (plan.dailyQuota !== undefined && !wholeIn(plan.dailyQuota, 1, MAX_DAILY_QUOTA)) {
    problems.dailyQuota = `must be a whole number from 1 to ${MAX_DAILY_QUOTA}`;
  }
  return problems;
}

/** Whose bucket a request takes from: one API key, or the account's dashboard sessions together. */
export type UsageSubject = { credential: 'key'; keyId: string } | { credential: 'session'; userId: string };

/**
 * The usage identifier of a subject: the value of its API Gateway API key, which the authorizer returns
 * as `usageIdentifierKey` and key creation enrolls in the account's usage plan. Derived, so the
 * authorizer needs no read for it; `scope` (the table name) keeps two stacks in one AWS account apart. It
 * is no credential: with the API key source set to the authorizer, API Gateway ignores any key a client
 * sends, and the value never leaves the service.
 */
export function usageKeyOf(scope: string, subject: UsageSubject): string {
  const id = subject.credential === 'key' ? `key\n${subject.keyId}` : `session\n${subject.userId}`;
  return `gsu_${createHash('sha256').update(`${scope}\n${id}`, 'utf8').digest('hex')}`;
}

/** The subject of an allowed request: its key, or the account's sessions. */
export function usageSubjectOf(
  principal: { credential: 'key'; keyId: string } | { credential: 'session'; userId: string },
): UsageSubject {
  return principal.credential === 'key'
    ? { credential: 'key', keyId: principal.keyId }
    : { credential: 'session', userId: principal.userId };
}

/**
 * The name of a subject's API Gateway API key: readable in the console, unique per stack, and what the
 * enrollment looks the key up by when it already exists.
 */
export function usageKeyName(scope: string, subject: UsageSubject): string {
  return subject.credential === 'key' ? `${scope}-key-${subject.keyId}` : `${scope}-sessions-${subject.userId}`;
}
