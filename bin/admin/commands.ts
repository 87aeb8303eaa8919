/**
 * What each operator command does and prints. Times are shown as ISO 8601 (`null` = never / not).
 */

import { endAccountCredentials } from '../../functions/auth/end-account-credentials';
import { issueKey, revokeKey, rotateKey } from '../../functions/auth/key-issuing';
import {
  enrollSessionsOnce,
  resetAccountLimits,
  setAccountLimits,
  type UsageEnrollment,
} from '../../functions/auth/rate-limits';
import { DomainError, UsageError, ValidationError } from '../../functions/core/errors';
import type { RatePlan } from '../../functions/core/rate-plan';
import { describeIssuedKey, describeKeys } from '../../functions/http/key-views';
import { setAccountAlerts, showAccountAlerts } from '../../functions/lifecycle/account-alerts';
import { rearmAfterCredit } from '../../functions/lifecycle/account-events';
import { closeAccount } from '../../functions/lifecycle/close-account';
import { reportUpstreams } from '../../functions/lifecycle/upstreams-report';
import { usageReportOf } from '../../functions/lifecycle/usage';
import {
  clearAccountWebhookUrl,
  describeAccountEvents,
  describeDeliveries,
  rotateWebhookSecret,
  setAccountWebhookUrl,
  showAccountWebhooks,
} from '../../functions/lifecycle/webhook-settings';
import { type SourcePolicy, STRICT_SOURCE_POLICY } from '../../functions/media/source-policy';
import { setAccountSpendLimit } from '../../functions/money/account-limit';
import { grantCredits } from '../../functions/money/grant';
import { setSpendLimit } from '../../functions/money/key-limit';
import { createLogger, setLogSink } from '../../functions/observability/logger';
import { setMetricSink } from '../../functions/observability/metrics';
import { getAccountSpendLimit } from '../../functions/store/account-limit';
import { accountExists, getBalance } from '../../functions/store/accounts';
import type { AuditInput } from '../../functions/store/audit';
import type { StoreContext } from '../../functions/store/client';
import { generateUserId, getInvite, inviteAccount } from '../../functions/store/invites';
import { auditAll, auditUser } from '../../functions/store/ledger';
import { getRatePlan } from '../../functions/store/rate-plans';
import { revokeAllSessions } from '../../functions/store/sessions';
import type { SecretBox } from '../../functions/webhooks/secret-box';
import type { Command } from './args';
import type { FileRemoval } from './removal';

/** `credits show` for a user the table knows nothing about: not a balance of 0. */
export class UnknownAccountError extends DomainError {
  override readonly name: string = 'UnknownAccountError';
  /** A CLI error; a 404 if it ever reached HTTP. */
  readonly status: number = 404;
  constructor(userId: string) {
    super(
      `no account ${JSON.stringify(userId)}: it has no credits, keys, invitation or sessions (check --user, and the target)`,
    );
  }
}

/** One JSON object for stdout, and whether the command succeeded (audit can print and fail). */
export interface CommandResult {
  output: Record<string, unknown>;
  ok: boolean;
}

function iso(epochSeconds: number | undefined): string | null {
  return epochSeconds === undefined ? null : new Date(epochSeconds * 1000).toISOString();
}

/** Operator actions are audited on the owner's account like the owner's own. */
const OPERATOR: AuditInput['actor'] = { type: 'operator' };

/**
 * What an ended key can still do, said exactly: spending is checked inside the accept transaction
 * itself, and every other request is decided by the authorizer on the key's current state.
 */
const REVOCATION_NOTE =
  'Submits with this key are refused from now on, checked inside the accept itself; every other request from its next authorization (the authorizer keeps no cache).';
const LIMITS_NOTE =
  'Each key of the account has these limits in a bucket of its own. The local stack applies a change within RATE_PLAN_CACHE_SECONDS; API Gateway applies usage plan changes after a short delay.';
/** Deployed, the default plan lives in the stack (context keys), not in the table. */
const DEPLOYED_DEFAULT = { plan: 'the stack default (context keyRateLimit, keyBurstLimit, keyDailyQuota)' };
const ROTATION_NOTE =
  'The previous key works until its end (expiresAt, or revokedAt when the grace is 0) and not a second longer: submits are checked inside the accept itself.';

/**
 * What the CLI does besides the table, with `--aws`: creating the invited person's Cognito user, and
 * enrolling keys in the stack's usage plans (their rate limits). `defaultPlan` is what `limits show`
 * reports for an account without its own.
 */
export interface CommandOptions {
  createIdentity?: (email: string) => Promise<'created' | 'exists'>;
  usage?: UsageEnrollment;
  defaultPlan?: RatePlan;
  /** Which webhook endpoints the target allows (default: the strict, deployed rule). */
  webhookPolicy?: SourcePolicy;
  /** The box that seals signing secrets (made only for `webhooks secret`). */
  webhookBox?: () => SecretBox;
  /** Where the target's result files and uploads are removed (made only for `accounts close`). */
  fileRemoval?: () => FileRemoval;
}

/** What a closure keeps, and how to finish one (docs/design/accounts.md#closing-an-account). */
const CLOSE_NOTE =
  'Sign-in is refused from now on. The balance, the ledger and the audit log are kept (accounting). Tasks still at the provider end as usual: run the command again once they have to delete them.';

/**
 * Closes the account through the one rule of every front door (functions/lifecycle/close-account.ts),
 * as the operator. Its log and metric lines (EMF, for a Lambda's CloudWatch) would break the one JSON
 * object on stdout: warnings and errors (an API Gateway key not given back yet) are reported in the
 * output instead, the rest dropped.
 */
async function closeAccountAsOperator(
  ctx: StoreContext,
  userId: string,
  options: CommandOptions,
): Promise<Record<string, unknown>> {
  if (!options.fileRemoval) throw new Error('accounts close needs the storage of results and uploads');
  // Its settings are checked before the first store call: a bad invocation touches nothing.
  const removal = options.fileRemoval();
  if (!(await accountExists(ctx, userId))) throw new UnknownAccountError(userId);
  const warnings: string[] = [];
  const previous = setLogSink((line) => {
    const { level, message } = JSON.parse(line) as { level?: string; message?: string };
    if ((level === 'warn' || level === 'error') && message) warnings.push(message);
  });
  setMetricSink(() => undefined);
  try {
    const report = await closeAccount(
      {
        ...removal,
        store: ctx,
        now: () => new Date(),
        endCredentials: ({ now }) => endAccountCredentials(ctx, options.usage, { userId, now, actor: OPERATOR }),
      },
      { userId, actor: OPERATOR },
      createLogger({ service: 'admin' }),
    );
    return {
      ...report,
      complete: report.tasksStillRunning === 0 && warnings.length === 0,
      ...(warnings.length > 0 ? { warnings } : {}),
      note: CLOSE_NOTE,
    };
  } finally {
    setLogSink(previous);
    setMetricSink(undefined);
  }
}

const SECRET_NOTE =
  'Shown only now: the table keeps it sealed. Verify deliveries with it (standardwebhooks: new Webhook(secret).verify(body, headers)).';

function describePlan(plan: RatePlan) {
  return { ratePerSecond: plan.ratePerSecond, burst: plan.burst, dailyQuota: plan.dailyQuota ?? null };
}

export async function runCommand(
  ctx: StoreContext,
  command: Exclude<Command, { kind: 'help' } | { kind: 'version' }>,
  now: Date,
  options: CommandOptions = {},
): Promise<CommandResult> {
  switch (command.kind) {
    case 'credits grant': {
      const result = await grantCredits(ctx, { userId: command.userId, amount: command.amount, now });
      // A grant that lifts the balance to the low-balance threshold or above re-arms credits.low.
      await rearmAfterCredit(ctx, command.userId, result.balance);
      return { output: { userId: result.userId, balance: result.balance }, ok: true };
    }
    case 'credits show': {
      if (!(await accountExists(ctx, command.userId))) {
        throw new UnknownAccountError(command.userId);
      }
      return { output: { userId: command.userId, balance: await getBalance(ctx, command.userId) }, ok: true };
    }
    case 'credits usage': {
      const query = { from: command.from, to: command.to, groupBy: command.groupBy };
      try {
        const { report } = await usageReportOf(ctx, { userId: command.userId, query, now });
        return { output: { userId: command.userId, ...report }, ok: true };
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        const option = (field: string) => (field === 'groupBy' ? '--group-by' : `--${field}`);
        const problems = Object.entries(error.details.fieldErrors).map(
          ([field, messages]) => `${option(field)}: ${messages.join('; ')}`,
        );
        throw new UsageError(problems.join(', '));
      }
    }
    case 'credits limit': {
      const spendLimit =
        command.credits === undefined
          ? await getAccountSpendLimit(ctx, command.userId, now)
          : await setAccountSpendLimit(ctx, {
              userId: command.userId,
              credits: command.credits,
              now,
              audit: { action: 'account.limit', actor: OPERATOR },
            });
      return { output: { userId: command.userId, spendLimit }, ok: true };
    }
    case 'keys create': {
      const issued = await issueKey(ctx, options.usage, {
        userId: command.userId,
        name: command.name,
        allowedCidrs: command.allowedCidrs,
        expiresAt: command.expiresAt,
        spendLimit: command.spendLimit,
        now,
        audit: { action: 'key.create', actor: OPERATOR },
      });
      return {
        output: describeIssuedKey(issued),
        ok: true,
      };
    }
    case 'keys list': {
      const keys = await describeKeys(ctx, command.userId, now);
      return { output: { userId: command.userId, keys }, ok: true };
    }
    case 'keys limit': {
      const changed = await setSpendLimit(ctx, {
        keyId: command.keyId,
        spendLimit: command.spendLimit,
        now,
        audit: { action: 'key.limit', actor: OPERATOR },
      });
      const key = (await describeKeys(ctx, changed.userId, now)).find((entry) => entry.keyId === command.keyId);
      return { output: { userId: changed.userId, ...key }, ok: true };
    }
    case 'keys revoke': {
      const revoked = await revokeKey(ctx, options.usage, {
        keyId: command.keyId,
        now,
        audit: { action: 'key.revoke', actor: OPERATOR },
      });
      return {
        output: {
          keyId: revoked.keyId,
          userId: revoked.userId,
          revokedAt: iso(revoked.revokedAt),
          alreadyRevoked: revoked.alreadyRevoked,
          note: REVOCATION_NOTE,
        },
        ok: true,
      };
    }
    case 'keys rotate': {
      const { issued, previous } = await rotateKey(ctx, options.usage, {
        keyId: command.keyId,
        graceSeconds: command.graceSeconds,
        now,
        audit: { action: 'key.rotate', actor: OPERATOR },
      });
      return {
        output: {
          ...describeIssuedKey(issued),
          previous: { keyId: previous.keyId, expiresAt: iso(previous.expiresAt), revokedAt: iso(previous.revokedAt) },
          note: ROTATION_NOTE,
        },
        ok: true,
      };
    }
    case 'accounts invite': {
      const invited = await inviteAccount(ctx, {
        email: command.email,
        userId: command.userId ?? generateUserId(),
        now,
        audit: { action: 'account.invite', actor: OPERATOR },
      });
      // Deployed with USAGE_PLAN_ID: the account's sessions are enrolled now, so even the first sign-in
      // makes no API Gateway call.
      const invite = await getInvite(ctx, invited.email);
      if (invite) await enrollSessionsOnce(ctx, options.usage, invite, now);
      const cognito = options.createIdentity ? await options.createIdentity(invited.email) : undefined;
      return { output: { ...invited, ...(cognito ? { cognitoUser: cognito } : {}) }, ok: true };
    }
    case 'accounts revoke-sessions': {
      const sessions = await revokeAllSessions(ctx, {
        userId: command.userId,
        now,
        audit: { action: 'session.revoke-all', actor: OPERATOR },
      });
      return { output: { userId: command.userId, sessionsRevoked: sessions }, ok: true };
    }
    case 'accounts close':
      return { output: await closeAccountAsOperator(ctx, command.userId, options), ok: true };
    case 'limits set': {
      const plan = await setAccountLimits(ctx, options.usage, {
        userId: command.userId,
        plan: command.plan,
        actor: OPERATOR,
        now,
      });
      return {
        output: { userId: command.userId, own: true, ...describePlan(plan), note: LIMITS_NOTE },
        ok: true,
      };
    }
    case 'limits show': {
      const own = await getRatePlan(ctx, command.userId);
      const plan = own ?? options.defaultPlan;
      return {
        output: { userId: command.userId, own: own !== undefined, ...(plan ? describePlan(plan) : DEPLOYED_DEFAULT) },
        ok: true,
      };
    }
    case 'limits reset': {
      const { hadOwnPlan } = await resetAccountLimits(ctx, options.usage, {
        userId: command.userId,
        actor: OPERATOR,
        now,
      });
      const plan = options.defaultPlan;
      return {
        output: { userId: command.userId, own: false, hadOwnPlan, ...(plan ? describePlan(plan) : DEPLOYED_DEFAULT) },
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
    case 'webhooks set':
      return {
        output: await setAccountWebhookUrl(ctx, options.webhookPolicy ?? STRICT_SOURCE_POLICY, {
          userId: command.userId,
          url: command.url,
          now,
        }),
        ok: true,
      };
    case 'webhooks show':
      return { output: await showAccountWebhooks(ctx, command.userId), ok: true };
    case 'webhooks clear':
      return { output: await clearAccountWebhookUrl(ctx, { userId: command.userId, now }), ok: true };
    case 'webhooks secret': {
      if (!options.webhookBox) throw new Error('webhooks secret needs the webhook secrets key');
      const made = await rotateWebhookSecret(ctx, options.webhookBox(), { userId: command.userId, now });
      return { output: { ...made, note: SECRET_NOTE }, ok: true };
    }
    case 'webhooks deliveries':
      return { output: await describeDeliveries(ctx, command.userId, command.taskId), ok: true };
    case 'webhooks events':
      return { output: await describeAccountEvents(ctx, command.userId), ok: true };
    case 'alerts set':
      return {
        output: {
          userId: command.userId,
          ...(await setAccountAlerts(ctx, {
            userId: command.userId,
            lowBalanceThreshold: command.lowBalanceThreshold,
            now,
          })),
        },
        ok: true,
      };
    case 'upstreams show':
      return { output: { upstreams: await reportUpstreams(ctx, now) }, ok: true };
    case 'alerts show':
      return { output: { userId: command.userId, ...(await showAccountAlerts(ctx, command.userId)) }, ok: true };
    case 'alerts clear':
      return {
        output: {
          userId: command.userId,
          ...(await setAccountAlerts(ctx, { userId: command.userId, lowBalanceThreshold: null, now })),
        },
        ok: true,
      };
  }
}
