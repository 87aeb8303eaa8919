/**
 * API Gateway's usage plans, as the deployed stack uses them for per-key rate limits: every API key of
 * the service has an API Gateway API key (value `usageKeyOf`, which the authorizer returns as
 * `usageIdentifierKey`) enrolled in its account's usage plan: the stack's default plan, or the account's
 * own one (`limits set`). The SDK's client, not a hand-written call: this runs only in key management,
 * sign-in and the operator CLI, never on the submit/get/authorizer path.
 */
import {
  APIGatewayClient,
  type APIGatewayClientConfig,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanCommand,
  DeleteUsagePlanKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
  LimitExceededException,
  NotFoundException,
  type PatchOperation,
  ServiceUnavailableException,
  TooManyRequestsException,
  UpdateUsagePlanCommand,
} from '@aws-sdk/client-api-gateway';
import { observeClient } from '../core/aws-call-observer';
import { ControlPlaneBusyError } from '../core/errors';
import type { RatePlan } from '../core/rate-plan';

/**
 * API Gateway's control plane allows a few calls per second per AWS account (shared by every customer
 * of the service, and by sign-in before it stopped calling it), and 10,000 API keys per region. When the
 * SDK's own retries could not get past a refusal, the caller gets {@link ControlPlaneBusyError} (a 503
 * with Retry-After), never an unexpected error (a 500). The one place these failures are read.
 */
export function controlPlaneFailure(error: unknown): unknown {
  if (
    error instanceof TooManyRequestsException ||
    error instanceof LimitExceededException ||
    error instanceof ServiceUnavailableException
  ) {
    const hint = Number(error.retryAfterSeconds);
    return new ControlPlaneBusyError({
      cause: error,
      ...(Number.isInteger(hint) && hint > 0 && hint <= 3600 ? { retryAfterSeconds: hint } : {}),
    });
  }
  return error;
}

/** One API Gateway API key to enroll: its value (the usage identifier) and its readable name. */
export interface UsageKey {
  value: string;
  name: string;
}

/** Where the account plans apply: the stack's REST API and stage. */
export interface ApiStage {
  apiId: string;
  stage: string;
}

/**
 * The tag every usage plan of the service carries, valued with its REST API's id: the stack's default
 * plan (lib/constructs/service-api.ts) and each account plan (`createPlan`). The functions may add keys
 * only to plans with their API's tag (IAM `aws:ResourceTag`, which a plan's keys inherit).
 */
export const USAGE_PLAN_API_TAG = 'generation-service:rest-api-id';

/** What the service does with usage plans; {@link apiGatewayUsagePlans} is the deployed one. */
export interface UsagePlans {
  /** Makes sure the key exists and is in `planId` (idempotent: a repeat changes nothing). */
  enroll(key: UsageKey, planId: string): Promise<void>;
  /**
   * Deletes the key (which takes it out of every plan), giving back one of the region's API keys;
   * idempotent: false when there was none.
   */
  remove(key: UsageKey): Promise<boolean>;
  /** Moves the keys from one plan to another (each: into `to`, out of `from`); keys it does not find are skipped. */
  move(keys: readonly UsageKey[], from: string, to: string): Promise<number>;
  /** Creates a plan for the stage with these limits; returns its id. */
  createPlan(name: string, plan: RatePlan, on: ApiStage): Promise<string>;
  /** Sets a plan's limits (throttle and quota). */
  updatePlan(planId: string, plan: RatePlan): Promise<void>;
  /** Deletes an (empty) plan. */
  deletePlan(planId: string): Promise<void>;
  /** The id of the plan with this name, or undefined. */
  planIdByName(name: string): Promise<string | undefined>;
}

/** The usage plans of the deployed stack, through the SDK's API Gateway client. */
export function apiGatewayUsagePlans(config: APIGatewayClientConfig = {}): UsagePlans {
  const sdk = new APIGatewayClient(config);
  observeClient('apigateway', sdk);
  // Every call's refusals are read in one place (controlPlaneFailure).
  const client = {
    send: (async (command: Parameters<APIGatewayClient['send']>[0]) => {
      try {
        return await sdk.send(command);
      } catch (error) {
        throw controlPlaneFailure(error);
      }
    }) as APIGatewayClient['send'],
  };

  async function keyIdByName(name: string): Promise<string | undefined> {
    let position: string | undefined;
    do {
      const page = await client.send(new GetApiKeysCommand({ nameQuery: name, position, limit: 500 }));
      // nameQuery matches prefixes; the exact name is the one.
      const found = page.items?.find((item) => item.name === name);
      if (found?.id) return found.id;
      position = page.position;
    } while (position);
    return undefined;
  }

  async function ensureKey(key: UsageKey): Promise<string> {
    try {
      const created = await client.send(new CreateApiKeyCommand({ name: key.name, value: key.value, enabled: true }));
      if (created.id) return created.id;
    } catch (error) {
      // The value exists already (a retried enrollment): find it by its name.
      if (!(error instanceof ConflictException)) throw error;
    }
    const id = await keyIdByName(key.name);
    if (!id) throw new Error(`API Gateway API key ${key.name} exists under another name`);
    return id;
  }

  async function addToPlan(keyId: string, planId: string): Promise<void> {
    try {
      await client.send(new CreateUsagePlanKeyCommand({ usagePlanId: planId, keyId, keyType: 'API_KEY' }));
    } catch (error) {
      // Already in this plan: enrolled before.
      if (!(error instanceof ConflictException)) throw error;
    }
  }

  return {
    async enroll(key, planId) {
      await addToPlan(await ensureKey(key), planId);
    },

    async remove(key) {
      const id = await keyIdByName(key.name);
      if (!id) return false;
      try {
        await client.send(new DeleteApiKeyCommand({ apiKey: id }));
        return true;
      } catch (error) {
        if (error instanceof NotFoundException) return false;
        throw error;
      }
    },

    async move(keys, from, to) {
      // The members of `from`, by name, so each key costs no lookup of its own.
      const members = new Map<string, string>();
      let position: string | undefined;
      do {
        const page = await client.send(new GetUsagePlanKeysCommand({ usagePlanId: from, position, limit: 500 }));
        for (const item of page.items ?? []) if (item.name && item.id) members.set(item.name, item.id);
        position = page.position;
      } while (position);
      let moved = 0;
      for (const key of keys) {
        const id = members.get(key.name);
        if (!id) continue;
        // A key may be in one plan per stage: out of the old one first, then straight into the new one.
        await client.send(new DeleteUsagePlanKeyCommand({ usagePlanId: from, keyId: id }));
        await addToPlan(id, to);
        moved += 1;
      }
      return moved;
    },

    async createPlan(name, plan, on) {
      const created = await client.send(
        new CreateUsagePlanCommand({
          name,
          apiStages: [{ apiId: on.apiId, stage: on.stage }],
          throttle: { rateLimit: plan.ratePerSecond, burstLimit: plan.burst },
          ...(plan.dailyQuota === undefined ? {} : { quota: { limit: plan.dailyQuota, period: 'DAY' } }),
          tags: { [USAGE_PLAN_API_TAG]: on.apiId },
        }),
      );
      if (!created.id) throw new Error(`API Gateway created usage plan ${name} without an id`);
      return created.id;
    },

    async updatePlan(planId, plan) {
      const patchOperations: PatchOperation[] = [
        { op: 'replace', path: '/throttle/rateLimit', value: String(plan.ratePerSecond) },
        { op: 'replace', path: '/throttle/burstLimit', value: String(plan.burst) },
        plan.dailyQuota === undefined
          ? { op: 'remove', path: '/quota' }
          : { op: 'replace', path: '/quota/limit', value: String(plan.dailyQuota) },
      ];
      if (plan.dailyQuota !== undefined) patchOperations.push({ op: 'replace', path: '/quota/period', value: 'DAY' });
      await client.send(new UpdateUsagePlanCommand({ usagePlanId: planId, patchOperations }));
    },

    async planIdByName(name) {
      let position: string | undefined;
      do {
        const page = await client.send(new GetUsagePlansCommand({ position, limit: 500 }));
        const found = page.items?.find((item) => item.name === name);
        if (found?.id) return found.id;
        position = page.position;
      } while (position);
      return undefined;
    },

    async deletePlan(planId) {
      try {
        await client.send(new DeleteUsagePlanCommand({ usagePlanId: planId }));
      } catch (error) {
        if (!(error instanceof NotFoundException)) throw error;
      }
    },
  };
}
