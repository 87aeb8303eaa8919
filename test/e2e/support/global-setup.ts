/**
 * Jest global setup of the e2e project. Without API_BASE_URL it starts the local stack on free ports
 * and seeds its users and keys; with API_BASE_URL it runs against that deployment (LocalStack or AWS)
 * with the keys from the environment. Either way it hands the test files one JSON context
 * (E2E_CONTEXT) and prints the checks the target leaves out, and why.
 */
import { acquireSharedDynamoDb, type JestRunShape } from '../../support/shared-dynamodb';
import { type RunningLocalStack, startLocalStack } from './local-stack';
import { E2E_CONTEXT_ENV, type E2eContext, omittedChecks, type TargetKind } from './target';

declare global {
  // Jest runs the global setup and teardown in the same process: the stack travels on globalThis.
  var __e2eLocalStack: RunningLocalStack | undefined;
}

const DEFAULT_REMOTE_POLL_TIMEOUT_SECONDS = 180;

function optionalKey(env: NodeJS.ProcessEnv, name: string): { apiKey: string } | undefined {
  const value = env[name];
  return value ? { apiKey: value } : undefined;
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

/** The context of a deployed target, from API_BASE_URL, API_KEY[_...] and E2E_* variables. */
export function remoteContext(env: NodeJS.ProcessEnv = process.env): E2eContext {
  const baseUrl = (env.API_BASE_URL ?? '').replace(/\/+$/, '');
  const kind = env.E2E_TARGET as TargetKind | undefined;
  if (kind !== 'localstack' && kind !== 'aws') {
    throw new Error(`With API_BASE_URL set, E2E_TARGET must be "localstack" or "aws", got "${kind ?? ''}"`);
  }
  const main = optionalKey(env, 'API_KEY');
  if (!main) throw new Error('With API_BASE_URL set, API_KEY (a key of a user with credits) is required');
  const other = optionalKey(env, 'API_KEY_OTHER_USER');
  const poor = optionalKey(env, 'API_KEY_POOR');
  const ipRestricted = optionalKey(env, 'API_KEY_IP_RESTRICTED');
  const maxPendingSeconds = positiveNumber(env, 'E2E_MAX_PENDING_SECONDS');
  return {
    kind,
    baseUrl,
    keys: { main, ...(other && { other }), ...(poor && { poor }), ...(ipRestricted && { ipRestricted }) },
    mockProvider: env.E2E_MOCK_PROVIDER === 'true',
    ...(maxPendingSeconds !== undefined && { maxPendingSeconds }),
    pollTimeoutMs: (positiveNumber(env, 'E2E_POLL_TIMEOUT_SECONDS') ?? DEFAULT_REMOTE_POLL_TIMEOUT_SECONDS) * 1000,
  };
}

function report(context: E2eContext): void {
  const omitted = omittedChecks(context);
  const lines = [`e2e: target ${context.kind} at ${context.baseUrl}`];
  if (omitted.length === 0) lines.push('e2e: every check runs on this target');
  else {
    lines.push(`e2e: ${omitted.length} check(s) left out on this target:`);
    for (const { check, what, reasons } of omitted) lines.push(`  - ${check} (${what}): ${reasons.join('; ')}`);
  }
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

export default async function setup(globalConfig: JestRunShape): Promise<void> {
  let context: E2eContext;
  if (process.env.API_BASE_URL) {
    context = remoteContext();
  } else {
    // The stack keeps its table on the run's one DynamoDB Local (test/support/shared-dynamodb.ts).
    await acquireSharedDynamoDb(globalConfig);
    const started = await startLocalStack();
    globalThis.__e2eLocalStack = started.stack;
    context = started.context;
  }
  process.env[E2E_CONTEXT_ENV] = JSON.stringify(context);
  report(context);
}
