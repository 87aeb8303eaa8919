/**
 * Validation of the key management API's request bodies with the same rules as the operator CLI
 * (core/key-rules.ts). Failures are a 400 with one message per field, like every other body.
 */

import { ValidationError } from './errors';
import { allowlistRule, DEFAULT_GRACE_SECONDS, expiryRule, graceRule, keyNameRule } from './key-rules';
import { type SpendLimitInput, spendLimitProblem } from './spend-limit';

export interface CreateKeyRequest {
  name: string;
  allowedCidrs: string[];
  expiresAt?: number;
  spendLimit?: SpendLimitInput;
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError({ fieldErrors: {}, formErrors: ['Request body must be a JSON object'] });
  }
  return body as Record<string, unknown>;
}

function unknownFields(body: Record<string, unknown>, allowed: string[], fieldErrors: Record<string, string[]>): void {
  for (const field of Object.keys(body)) {
    if (!allowed.includes(field)) fieldErrors[field] = [`Unknown field "${field}"`];
  }
}

function finish(fieldErrors: Record<string, string[]>): void {
  if (Object.keys(fieldErrors).length > 0) throw new ValidationError({ fieldErrors, formErrors: [] });
}

/** `{ name, allowedCidrs?: string[], expiresAt?: ISO 8601 with zone }`. */
export function parseCreateKey(body: unknown, now: Date): CreateKeyRequest {
  const input = asObject(body);
  const fieldErrors: Record<string, string[]> = {};
  unknownFields(input, ['name', 'allowedCidrs', 'expiresAt', 'spendLimit'], fieldErrors);
  const out: CreateKeyRequest = { name: '', allowedCidrs: [] };

  if (typeof input.name !== 'string') fieldErrors.name = ['Required: a string'];
  else {
    const name = keyNameRule(input.name);
    if (name.ok) out.name = name.value;
    else fieldErrors.name = [`Name ${name.message}`];
  }

  if (input.allowedCidrs !== undefined) {
    if (!Array.isArray(input.allowedCidrs) || !input.allowedCidrs.every((entry) => typeof entry === 'string')) {
      fieldErrors.allowedCidrs = ['Must be a list of IPv4/IPv6 addresses or CIDR blocks'];
    } else {
      const list = allowlistRule(input.allowedCidrs);
      if (list.ok) out.allowedCidrs = list.value;
      else if (list.index === undefined) fieldErrors.allowedCidrs = [`Allowlist: ${list.message}`];
      else
        fieldErrors[`allowedCidrs.${list.index}`] = [
          `${JSON.stringify(input.allowedCidrs[list.index])} ${list.message}`,
        ];
    }
  }

  if (input.expiresAt !== undefined && input.expiresAt !== null) {
    if (typeof input.expiresAt !== 'string') fieldErrors.expiresAt = ['Must be an ISO 8601 date-time string'];
    else {
      const expiry = expiryRule(input.expiresAt, now);
      if (expiry.ok) out.expiresAt = expiry.value;
      else fieldErrors.expiresAt = [`Expiry ${expiry.message}`];
    }
  }
  if (input.spendLimit !== undefined && input.spendLimit !== null) {
    const problem = spendLimitProblem(input.spendLimit);
    if (problem) fieldErrors.spendLimit = [`Spend limit ${problem}`];
    else out.spendLimit = input.spendLimit as SpendLimitInput;
  }
  finish(fieldErrors);
  return out;
}

/** `{ spendLimit: { credits, period: "day" | "month" | "total" } | null }` (null removes the limit). */
export function parseUpdateKey(body: unknown): { spendLimit: SpendLimitInput | null } {
  const input = asObject(body);
  const fieldErrors: Record<string, string[]> = {};
  unknownFields(input, ['spendLimit'], fieldErrors);
  let spendLimit: SpendLimitInput | null = null;
  if (!('spendLimit' in input)) fieldErrors.spendLimit = ['Required: { credits, period } or null'];
  else if (input.spendLimit !== null) {
    const problem = spendLimitProblem(input.spendLimit);
    if (problem) fieldErrors.spendLimit = [`Spend limit ${problem}`];
    else spendLimit = input.spendLimit as SpendLimitInput;
  }
  finish(fieldErrors);
  return { spendLimit };
}

/** `{ spendLimit: { credits, period: "month" } | null }`: the account-wide monthly limit (docs/api/spend-limits-and-usage.md). */
export function parseAccountLimit(body: unknown): { credits: number | null } {
  const input = asObject(body);
  const fieldErrors: Record<string, string[]> = {};
  unknownFields(input, ['spendLimit'], fieldErrors);
  let credits: number | null = null;
  if (!('spendLimit' in input)) fieldErrors.spendLimit = ['Required: { credits, period: "month" } or null'];
  else if (input.spendLimit !== null) {
    const problem = spendLimitProblem(input.spendLimit);
    const limit = input.spendLimit as SpendLimitInput;
    if (problem) fieldErrors.spendLimit = [`Spend limit ${problem}`];
    else if (limit.period !== 'month') fieldErrors.spendLimit = ['The account-wide limit is per month: period "month"'];
    else credits = limit.credits;
  }
  finish(fieldErrors);
  return { credits };
}

/** `{ graceSeconds?: 0..2592000 }` (default 3600, as the CLI). */
export function parseRotateKey(body: unknown): { graceSeconds: number } {
  const input = asObject(body);
  const fieldErrors: Record<string, string[]> = {};
  unknownFields(input, ['graceSeconds'], fieldErrors);
  let graceSeconds = DEFAULT_GRACE_SECONDS;
  if (input.graceSeconds !== undefined) {
    const grace = graceRule(typeof input.graceSeconds === 'number' ? input.graceSeconds : Number.NaN);
    if (grace.ok) graceSeconds = grace.value;
    else fieldErrors.graceSeconds = [`Grace period ${grace.message}`];
  }
  finish(fieldErrors);
  return { graceSeconds };
}
