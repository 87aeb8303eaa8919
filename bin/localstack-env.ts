/**
 * Runs a command against the stack deployed to LocalStack, with the environment the end-to-end suite
 * and the operator CLI need, taken from the outputs `npm run deploy:localstack` wrote
 * (`cdk deploy --outputs-file cdk.out/localstack-outputs.json`).
 *
 * Usage: `tsx bin/localstack-env.ts -- jest --selectProjects e2e`
 * Environment: `LOCALSTACK_ENDPOINT` (default http://localhost:4566), `LOCALSTACK_OUTPUTS` (default
 * cdk.out/localstack-outputs.json), `STACK_NAME` (default: the only stack in the file).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Where `npm run deploy:localstack` writes the stack outputs. */
export const DEFAULT_OUTPUTS_FILE = path.join('cdk.out', 'localstack-outputs.json');

/** `cdk deploy --outputs-file` content: stack name -> output name -> value. */
export type StackOutputs = Record<string, Record<string, string>>;

/**
 * The variables a process needs to talk to the LocalStack deployment. The API URL is LocalStack's
 * path-based form, which needs no DNS (the output `ApiUrl` names amazonaws.com, which LocalStack does
 * not serve).
 * @throws Error when the outputs lack the stack or one of its outputs
 */
export function localstackEnv(outputs: StackOutputs, endpoint: string, stackName?: string): Record<string, string> {
  const names = Object.keys(outputs);
  const name = stackName ?? (names.length === 1 ? names[0] : undefined);
  const stack = name === undefined ? undefined : outputs[name];
  if (!stack) throw new Error(`cannot tell the stack in the outputs file (found: ${names.join(', ') || 'none'})`);
  const read = (key: string): string => {
    const value = stack[key];
    if (!value) throw new Error(`stack output ${key} is missing: redeploy with npm run deploy:localstack`);
    return value;
  };
  const base = endpoint.replace(/\/+$/, '');
  return {
    API_BASE_URL: `${base}/_aws/execute-api/${read('ApiId')}/${read('StageName')}`,
    E2E_TARGET: 'localstack',
    TABLE_NAME: read('TableName'),
    MEDIA_BUCKET: read('BucketName'),
    AWS_ENDPOINT_URL: base,
  };
}

function main(argv: readonly string[]): number {
  const separator = argv.indexOf('--');
  const command = separator === -1 ? argv : argv.slice(separator + 1);
  const [program, ...args] = command;
  if (!program) {
    process.stderr.write('usage: tsx bin/localstack-env.ts -- <command> [args...]\n');
    return 2;
  }
  const outputsFile = process.env.LOCALSTACK_OUTPUTS ?? DEFAULT_OUTPUTS_FILE;
  if (!fs.existsSync(outputsFile)) {
    process.stderr.write(`${outputsFile} not found: run npm run deploy:localstack first\n`);
    return 1;
  }
  const outputs = JSON.parse(fs.readFileSync(outputsFile, 'utf8')) as StackOutputs;
  const env = localstackEnv(
    outputs,
    process.env.LOCALSTACK_ENDPOINT ?? 'http://localhost:4566',
    process.env.STACK_NAME,
  );
  process.stdout.write(`API_BASE_URL=${env.API_BASE_URL}\n`);
  // LocalStack accepts any credentials; real ones in the shell are left alone (and never sent to AWS,
  // since AWS_ENDPOINT_URL points every SDK client at LocalStack).
  const result = spawnSync(program, args, {
    stdio: 'inherit',
    env: {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      ...process.env,
      ...env,
    },
  });
  if (result.error) {
    process.stderr.write(`${result.error.message}\n`);
    return 1;
  }
  return result.status ?? 1;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
