/**
 * The operator CLI: `npm run --silent admin -- <command>` (see `--help`). Prints exactly one JSON
 * object on stdout; errors go to stderr as `{ "error": "..." }` with exit code 2 (usage) or 1 (other).
 * Arguments and settings are validated before the store is touched, so a bad invocation changes nothing.
 */

import { usageEnrollmentFromEnv } from '../functions/auth/rate-limits';
import { DomainError, UsageError } from '../functions/core/errors';
import { localSettingsFromEnv } from '../local/settings';
import { HELP_LINES, parseInvocation } from './admin/args';
import { cognitoUserCreator } from './admin/cognito';
import { runCommand } from './admin/commands';
import { resolveTarget, type Target } from './admin/target';

/** Commands that enroll keys in (or move them between) API Gateway usage plans when deployed. */
const USAGE_COMMANDS = new Set(['keys create', 'keys rotate', 'limits set', 'limits reset']);

function print(stream: NodeJS.WriteStream, value: unknown): void {
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

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  // The SDK warns on stderr about Node 20 on its first client; stderr is for JSON errors only.
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const now = new Date();
  let target: Target | undefined;
  try {
    const { command, aws } = parseInvocation(argv, now);
    if (command.kind === 'help') {
      print(process.stdout, { usage: HELP_LINES });
      return 0;
    }
    const createIdentity = aws && command.kind === 'accounts invite' ? cognitoUserCreator(env) : undefined;
    target = resolveTarget(aws, env);
    const usage = aws ? usageEnrollmentFromEnv(env) : undefined;
    if (aws && !usage && USAGE_COMMANDS.has(command.kind)) {
      throw new UsageError(`${command.kind} with --aws needs USAGE_PLAN_ID (stack output DefaultUsagePlanId)`);
    }
    // Locally the default plan is the local stack's setting (KEY_RATE_LIMIT, ...), read like npm start does.
    const defaultPlan = aws ? undefined : localSettingsFromEnv(env).keyRatePlan;
    const result = await runCommand(target.ctx, command, now, {
      createIdentity,
      ...(usage ? { usage } : {}),
      ...(defaultPlan ? { defaultPlan } : {}),
    });
    print(process.stdout, result.output);
    if (!result.ok)
      print(process.stderr, { error: 'audit failed: balance differs from the ledger sum or is negative' });
    return result.ok ? 0 : 1;
  } catch (error) {
    print(process.stderr, { error: describeFailure(error, target) });
    return error instanceof UsageError ? 2 : 1;
  } finally {
    target?.ctx.doc.destroy();
  }
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    print(process.stderr, { error: error instanceof Error ? error.message : String(error) });
    process.exitCode = 1;
  },
);
