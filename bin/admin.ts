/**
 * The operator CLI: `npm run --silent admin -- <command>` (see `--help`). Prints exactly one JSON
 * object on stdout; errors go to stderr as `{ "error": "..." }` with exit code 2 (usage) or 1 (other).
 * Arguments and settings are validated before the store is touched, so a bad invocation changes nothing.
 *
 * It runs as one bundled file (`bin/run-admin.cjs` builds it with esbuild when the sources changed):
 * measured, tsx spent 1.6 to 2.4 s per command compiling TypeScript. The store, the SDK clients and the
 * local settings are imported only once a command needs them, so `--help` and `--version` load none
 * of them (esbuild keeps a dynamic import of a bundled module lazy).
 */

import { DomainError, KeyLimitError, UsageError } from '../functions/core/errors';
import type { LocalStackState } from '../local/stack-state';
import { helpText, parseInvocation } from './admin/args';
import type { Target } from './admin/target';

/** Filled in by the bundle (`define`); the TypeScript run reads package.json. */
declare const ADMIN_VERSION: string | undefined;

function version(): string {
  if (typeof ADMIN_VERSION === 'string') return ADMIN_VERSION;
  return (require('../package.json') as { version: string }).version;
}

/** Key commands that enroll or delete API Gateway keys: locally they use the stand-in (local/usage-plans.ts). */
const LOCAL_KEY_COMMANDS = new Set(['keys create', 'keys rotate', 'keys revoke', 'accounts close']);

/** Commands that enroll keys in (or move them between) API Gateway usage plans when deployed. */
const USAGE_COMMANDS = new Set(['keys create', 'keys rotate', 'limits set', 'limits reset', 'accounts close']);

/** Where the CLI writes: the process's streams, or a caller's (a test calling `main` in its own process). */
export interface AdminOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

function print(stream: AdminOutput['stdout'], value: unknown): void {
  stream.write(`${JSON.stringify(value, null, 2)}\n`);
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, name } = error as { code?: unknown; name?: unknown };
  if (typeof code === 'string') return code;
  return typeof name === 'string' ? name : undefined;
}

/** A message an operator can act on; never a stack trace. */
function describeFailure(error: unknown, target: Target | undefined): string {
  const code = errorCode(error);
  const where = target?.description ?? 'the store';
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'TimeoutError') {
    return `cannot reach ${where}${target?.local ? ' (is the local stack running? npm start)' : ''}`;
  }
  if (code === 'ResourceNotFoundException') {
    return `${where} does not exist${target?.local ? ' (start the local stack once with npm start)' : ''}`;
  }
  if (error instanceof DomainError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${code}: ${message}` : message;
}

/** The CLI's environment, with the running stack's WEBHOOK_INSECURE_ORIGINS unless the CLI sets its own. */
function localWebhookEnv(env: NodeJS.ProcessEnv, running: LocalStackState | undefined): NodeJS.ProcessEnv {
  if (env.WEBHOOK_INSECURE_ORIGINS || !running?.webhookInsecureOrigins) return env;
  return { ...env, WEBHOOK_INSECURE_ORIGINS: running.webhookInsecureOrigins };
}

/**
 * Runs one command on `argv` with the settings in `env`, writing to `output`; resolves to the exit code
 * and leaves `process.exitCode` alone, so a test can run many commands in its own process.
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv, output: AdminOutput = process): Promise<number> {
  const now = new Date();
  let target: Target | undefined;
  try {
    const { command, aws } = parseInvocation(argv, now);
    if (command.kind === 'help') {
      output.stdout.write(helpText(command.topic));
      return 0;
    }
    if (command.kind === 'version') {
      output.stdout.write(`${version()}\n`);
      return 0;
    }
    const [
      { resolveTarget },
      { runCommand },
      { cognitoUserCreator },
      { usageEnrollmentFromEnv },
      { localSettingsFromEnv },
      { webhookSecretBox },
      { webhookTargetPolicy },
      { localUsageEnrollment },
      { fileRemoval },
    ] = await Promise.all([
      import('./admin/target'),
      import('./admin/commands'),
      import('./admin/cognito'),
      import('../functions/auth/rate-limits'),
      import('../local/settings'),
      import('./admin/webhook-key'),
      import('../functions/webhooks/target-policy'),
      import('../local/usage-plans'),
      import('./admin/removal'),
    ]);
    const createIdentity = aws && command.kind === 'accounts invite' ? cognitoUserCreator(env) : undefined;
    const resolved = resolveTarget(aws, env);
    target = resolved;
    // Locally, key commands record their API Gateway keys in the local stand-in, as the local stack does.
    const usage = aws
      ? usageEnrollmentFromEnv(env)
      : LOCAL_KEY_COMMANDS.has(command.kind)
        ? localUsageEnrollment(() => resolved.ctx)
        : undefined;
    if (aws && !usage && USAGE_COMMANDS.has(command.kind)) {
      throw new UsageError(`${command.kind} with --aws needs USAGE_PLAN_ID (stack output DefaultUsagePlanId)`);
    }
    // Locally the default plan is the local stack's setting (KEY_RATE_LIMIT, ...): the running stack's
    // as it recorded it, unless the CLI is given its own; else read like npm start does.
    const ownPlanSettings = Boolean(env.KEY_RATE_LIMIT || env.KEY_BURST_LIMIT || env.KEY_DAILY_QUOTA);
    const runningPlan = ownPlanSettings ? undefined : target.running?.state.keyRatePlan;
    const defaultPlan = aws ? undefined : (runningPlan ?? localSettingsFromEnv(env).keyRatePlan);
    const result = await runCommand(target.ctx, command, now, {
      createIdentity,
      ...(usage ? { usage } : {}),
      ...(defaultPlan ? { defaultPlan } : {}),
      // Deployed: the strict rule; locally the local stack's own exceptions (WEBHOOK_INSECURE_ORIGINS).
      webhookPolicy: webhookTargetPolicy(aws ? {} : localWebhookEnv(env, target.running?.state)),
      webhookBox: () => webhookSecretBox(aws, env, target?.running),
      fileRemoval: () => fileRemoval(aws, env, resolved),
    });
    print(output.stdout, result.output);
    if (!result.ok) print(output.stderr, { error: 'audit failed: balance differs from the ledger sum or is negative' });
    return result.ok ? 0 : 1;
  } catch (error) {
    // The cap on active keys answers as the API does: the message and the limit it names.
    print(output.stderr, {
      error: describeFailure(error, target),
      ...(error instanceof KeyLimitError ? { limit: error.limit } : {}),
    });
    return error instanceof UsageError ? 2 : 1;
  } finally {
    target?.ctx.doc.destroy();
  }
}

/** Runs the CLI on this process's arguments and sets its exit code. */
export function run(): void {
  main(process.argv.slice(2), process.env).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      print(process.stderr, { error: error instanceof Error ? error.message : String(error) });
      process.exitCode = 1;
    },
  );
}

if (require.main === module) run();
