/**
 * Builds the CDK app: reads the context configuration, adds the stack and applies the cdk-nag
 * `AwsSolutionsChecks`. bin/app.ts and the infra tests both go through here, so the tests check
 * exactly what `cdk synth` and `cdk deploy` produce.
 */
import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { readConfig } from './config';
import { GenerationServiceStack } from './generation-service-stack';

/** Adds the generation service stack to `app` and the cdk-nag checks to everything in it. */
export function buildServiceApp(app: App, env: NodeJS.ProcessEnv = process.env): GenerationServiceStack {
  const config = readConfig(app.node);
  const stack = new GenerationServiceStack(app, config.stackName, {
    config,
    description: 'Generation service: asynchronous image and video generation tasks paid in credits',
    // Unset in tests and env-agnostic synth; the CDK CLI sets both from the current credentials.
    env: { account: env.CDK_DEFAULT_ACCOUNT, region: env.CDK_DEFAULT_REGION },
  });
  // cdk-nag 3 is a policy validation plugin: findings fail `cdk synth` unless acknowledged.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return stack;
}
