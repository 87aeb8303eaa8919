/**
 * What each operator command does and prints. Times are shown as ISO 8601 (`null` = never / not).
 */

import { getBalance, grantCredits } from '../../functions/store/accounts';
import {
  type ApiKeyListing,
  type IssuedApiKey,
  listApiKeys,
  putApiKey,
  revokeApiKey,
  rotateApiKey,
} from '../../functions/store/api-keys';
import type { StoreContext } from '../../functions/store/client';
import { auditAll, auditUser } from '../../functions/store/ledger';
import type { Command } from './args';

/** One JSON object for stdout, and whether the command succeeded (audit can print and fail). */
export interface CommandResult {
  output: Record<string, unknown>;
  ok: boolean;
}

function iso(epochSeconds: number | undefined): string | null {
  return epochSeconds === undefined ? null : new Date(epochSeconds * 1000).toISOString();
}

function status(key: ApiKeyListing, nowSeconds: number): 'active' | 'revoked' | 'expired' {
  if (key.revokedAt !== undefined) return 'revoked';
  if (key.expiresAt !== undefined && nowSeconds >= key.expiresAt) return 'expired';
  return 'active';
}

/** What the operator sees of a newly issued key: the only time the plaintext key is shown. */
function issuedKeyOutput(issued: IssuedApiKey) {
  return {
    keyId: issued.keyId,
    apiKey: issued.apiKey,
    userId: issued.userId,
    name: issued.name,
    allowedCidrs: issued.allowedCidrs,
    expiresAt: iso(issued.expiresAt),
  };
}

export async function runCommand(
  ctx: StoreContext,
  command: Exclude<Command, { kind: 'help' }>,
  now: Date,
): Promise<CommandResult> {
  switch (command.kind) {
    case 'credits grant': {
      const result = await grantCredits(ctx, { userId: command.userId, amount: command.amount, now });
      return { output: { userId: result.userId, balance: result.balance }, ok: true };
    }
    case 'credits show':
      return { output: { userId: command.userId, balance: await getBalance(ctx, command.userId) }, ok: true };
    case 'keys create': {
      const issued = await putApiKey(ctx, {
        userId: command.userId,
        name: command.name,
        allowedCidrs: command.allowedCidrs,
        expiresAt: command.expiresAt,
        now,
      });
      return {
        output: issuedKeyOutput(issued),
        ok: true,
      };
    }
    case 'keys list': {
      const nowSeconds = Math.floor(now.getTime() / 1000);
      const listed = await listApiKeys(ctx, command.userId);
      const keys = listed.map((key) => ({
        keyId: key.keyId,
        name: key.name,
        prefix: key.prefix,
        status: status(key, nowSeconds),
        allowedCidrs: key.allowedCidrs,
        createdAt: key.createdAt,
        expiresAt: iso(key.expiresAt),
        revokedAt: iso(key.revokedAt),
        replacedBy: key.replacedBy ?? null,
        rotatedFrom: key.rotatedFrom ?? null,
      }));
      return { output: { userId: command.userId, keys }, ok: true };
    }
    case 'keys revoke': {
      const revoked = await revokeApiKey(ctx, { keyId: command.keyId, now });
      return {
        output: {
          keyId: revoked.keyId,
          userId: revoked.userId,
          revokedAt: iso(revoked.revokedAt),
          alreadyRevoked: revoked.alreadyRevoked,
        },
        ok: true,
      };
    }
    case 'keys rotate': {
      const { issued, previous } = await rotateApiKey(ctx, {
        keyId: command.keyId,
        graceSeconds: command.graceSeconds,
        now,
      });
      return {
        output: {
          ...issuedKeyOutput(issued),
          previous: { keyId: previous.keyId, expiresAt: iso(previous.expiresAt), revokedAt: iso(previous.revokedAt) },
        },
        ok: true,
      };
    }
    case 'audit': {
      if (command.userId !== undefined) {
        const audit = await auditUser(ctx, command.userId);
        return { output: { ok: audit.ok, users: [audit] }, ok: audit.ok };
      }
      const audit = await auditAll(ctx);
      return { output: { ok: audit.ok, users: audit.users }, ok: audit.ok };
    }
  }
}
