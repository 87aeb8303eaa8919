/**
 * `npm run deploy:check [-- -c key=value ...]`: what can be known before a deploy, checked in one run
 * (docs/guides/deploy-aws.md, docs/decisions/0015-iam-simulation-of-recorded-calls.md):
 *
 * 1. `cdk synth` with the given context (cdk.json's otherwise; its placeholder provider URL is replaced
 *    by a stand-in when no `providerBaseUrl` is given), which also runs cdk-nag;
 * 2. the quotas of the template (test/infra/quotas.test.ts): what AWS would refuse or cap, with margins;
 * 3. the IAM simulation (test/integration/iam-simulation.test.ts): every AWS call the functions make on
 *    the local stack, evaluated against their deployed policies.
 *
 * It prints what each step verified, then what only a real deploy can show. Exit code 1 when a step fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
const STAND_IN_PROVIDER = 'https://provider.example.com';
const MARGINS = resolve(ROOT, 'test-results/quota-margins.txt');
const IAM_REPORT = resolve(ROOT, 'test-results/iam-unused-grants.txt');

/** What no check here can see: each needs the real account, region or traffic. */
export const ONLY_A_DEPLOY_SHOWS: readonly string[] = [
  "the account's own quotas and what is already used in it (Lambda concurrency, API keys, usage plans, log groups, roles): the checks use AWS's default quotas",
  'names and ARNs CloudFormation generates (their lengths are counted long, not known) and the final size of environments and policies with them',
  'Service Control Policies, permission boundaries and resource policies of the account (the simulation evaluates the roles alone)',
  "KMS key policies and grants, were a customer-managed key used; the provider's real API, its limits and its callbacks over the internet",
  'CloudFront, WAF, Cognito and the custom domain as AWS runs them (the local stack stands in for them)',
  'calls the local stack makes through stand-ins instead of AWS: Secrets Manager (plain values locally), results in S3 (a directory locally), API Gateway account plans beyond the default plan',
  "the event sources as AWS runs them: step 4 runs the dispatcher and the stream workers on a local driver that follows AWS's documented semantics (local/deployed-driver.ts), which does not model SQS's duplicate deliveries and jitter, cold starts, reserved-concurrency throttling or shard splits",
  'event source mappings, alarms and the dashboard firing on real metrics; cold starts and timeouts under real latency',
];

function run(title: string, command: string, args: readonly string[]): boolean {
  process.stdout.write(`\n== ${title}\n$ ${command} ${args.join(' ')}\n`);
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', env: process.env });
  const ok = result.status === 0;
  process.stdout.write(`== ${title}: ${ok ? 'passed' : 'FAILED'}\n`);
  return ok;
}

/** The lines under `heading` of a report, or every line but comments without one. */
function section(file: string, heading?: string): string[] {
  if (!existsSync(file)) return [`(no ${file}: the step did not get far enough to write it)`];
  const lines = readFileSync(file, 'utf8').split('\n');
  const start = heading === undefined ? -1 : lines.indexOf(heading);
  if (start < 0) return lines.filter((line) => line && !line.startsWith('#'));
  const end = lines.findIndex((line, index) => index > start && line.startsWith('## '));
  return lines.slice(start + 1, end < 0 ? undefined : end).filter(Boolean);
}

function main(): number {
  const context = process.argv.slice(2);
  const synthArgs = ['cdk', 'synth', '--quiet', ...context];
  if (!context.some((arg) => arg.startsWith('providerBaseUrl='))) {
    synthArgs.push('-c', `providerBaseUrl=${STAND_IN_PROVIDER}`);
  }
  const synthOk = run('1. synth (cdk-nag included)', 'npx', synthArgs);
  const quotasOk = run('2. quotas of the template', 'npx', [
    'jest',
    'test/infra/quotas.test.ts',
    '--selectProjects',
    'infra',
  ]);
  const iamOk = run('3. IAM simulation of the recorded calls', 'npx', [
    'jest',
    'test/integration/iam-simulation.test.ts',
    '--selectProjects',
    'integration',
  ]);
  const driverOk = run('4. the dispatcher and the stream workers on their deployed triggers', 'npx', [
    'jest',
    'test/integration/deployed-driver.test.ts',
    'test/integration/dispatch-deployed.test.ts',
    'test/e2e/webhooks.test.ts',
    'test/e2e/generation.test.ts',
    '--selectProjects',
    'integration',
    'e2e',
  ]);

  const out = (line = '') => process.stdout.write(`${line}\n`);
  out();
  out('== Verified');
  out(
    `- synth with ${context.length > 0 ? `context ${context.join(' ')}` : "cdk.json's context"}: ${synthOk ? 'ok' : 'FAILED'}`,
  );
  out(`- quotas (${quotasOk ? 'all within' : 'SOME EXCEEDED'}), value of limit and margin each:`);
  for (const line of section(MARGINS)) out(`    ${line}`);
  out(`- IAM: every recorded call allowed by its function's deployed policy: ${iamOk ? 'yes' : 'NO'}`);
  out('  distinct calls evaluated, by function:');
  for (const line of section(IAM_REPORT, '## Distinct calls evaluated, by function')) out(`    ${line}`);
  out('  refused:');
  for (const line of section(IAM_REPORT, '## Refused')) out(`    ${line}`);
  out(`  granted actions no recorded call used, for review: ${IAM_REPORT}`);
  out(
    `- the dispatcher (stream inserts, SQS wake-ups), the media and webhook workers (the mappings' batches, bisection, retries) on their deployed triggers: ${driverOk ? 'ok' : 'FAILED'}`,
  );
  out();
  out('== Only a real deploy shows');
  for (const line of ONLY_A_DEPLOY_SHOWS) out(`- ${line}`);
  return synthOk && quotasOk && iamOk && driverOk ? 0 : 1;
}

process.exitCode = main();
