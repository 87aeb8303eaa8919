/**
 * Builds the app the way bin/app.ts does (cdk.json context, the cdk-nag plugin) with context
 * overrides, so every infra test checks what `cdk synth` would produce.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { GenerationServiceStack } from '../../lib/generation-service-stack';
import { buildServiceApp } from '../../lib/service-app';

export const REPO_ROOT = path.resolve(__dirname, '../..');

/** The "context" of cdk.json: the configuration and the feature flags. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

export interface SynthesizedService {
  app: App;
  stack: GenerationServiceStack;
  template: Template;
}

/** The provider URL the infra tests deploy with. */
export const TEST_PROVIDER_URL = 'https://provider.example.com';

/** How {@link synthesize} builds the app. */
export interface SynthesizeOptions {
  /** `false` skips esbuild (CDK's `aws:cdk:bundling-stacks` context), for variants whose assertions do not depend on the bundles. */
  bundle: boolean;
  outdir?: string;
  /**
   * CDK's built-in CloudFormation validation (the schema and rule engine aws-cdk-lib runs after every
   * synth, `cdk synth` included; cdk-nag runs either way). Off by default: it was 6 of a synth's 10 CPU
   * seconds, and the infra files make some forty synths a run. The one default-context synth the files
   * share (bundled-assembly.ts) runs it, and stack.test.ts holds its report empty.
   */
  builtinValidation?: boolean;
}

/** Synthesizes the service with cdk.json's context and `overrides` on top. */
export function synthesize(overrides: Record<string, unknown> = {}, options: SynthesizeOptions): SynthesizedService {
  const outdir = options.outdir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'generation-infra-'));
  const app = new App({
    outdir,
    builtinCloudFormationValidation: options.builtinValidation ?? false,
    context: {
      ...cdkJsonContext(),
      // cdk.json ships a placeholder that synth refuses; tests stand in a provider.
      providerBaseUrl: TEST_PROVIDER_URL,
      ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
      ...overrides,
    },
  });
  const stack = buildServiceApp(app, {});
  return { app, stack, template: Template.fromStack(stack) };
}

/** Removes a synthesized assembly (it holds the bundles). */
export function cleanUp(service: SynthesizedService | undefined): void {
  if (service) fs.rmSync(service.app.outdir, { recursive: true, force: true });
}

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}

export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/**
 * The logical id of the construct's default CloudFormation resource, as synthesized (an overridden
 * logical id included, which `Stack.getLogicalId` does not see).
 */
export function logicalIdOf(service: SynthesizedService, construct: { node: { defaultChild?: unknown } }): string {
  const child = construct.node.defaultChild as CfnElement;
  return service.stack.resolve(child.logicalId);
}

/** The logical id of the registry function named `name` (lib/routes.ts `LAMBDAS`). */
export function functionLogicalId(service: SynthesizedService, name: string): string {
  const fn = service.stack.functions.get(name);
  if (!fn) throw new Error(`no function ${name}`);
  return logicalIdOf(service, fn);
}

/**
 * Every IAM statement the role of the Lambda function with this logical id can use: inline policies
 * and attached AWS::IAM::Policy resources. Throws when the role has managed policies, which would
 * grant things this list cannot show.
 */
export function statementsOfFunction(template: Template, functionLogicalId: string): Statement[] {
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const fn = resources[functionLogicalId];
  if (!fn) throw new Error(`no function ${functionLogicalId}`);
  const roleRef = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const role = resources[roleRef];
  if (!role) throw new Error(`no role ${roleRef}`);
  if (role.Properties.ManagedPolicyArns !== undefined) throw new Error(`${roleRef} has managed policies`);
  const documents = [
    ...((role.Properties.Policies ?? []) as { PolicyDocument: { Statement: Statement[] } }[]),
    ...Object.values(resources)
      .filter((resource) => resource.Type === 'AWS::IAM::Policy')
      .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((ref) => ref.Ref === roleRef))
      .map((policy) => policy.Properties as { PolicyDocument: { Statement: Statement[] } }),
  ];
  return documents.flatMap((document) => document.PolicyDocument.Statement);
}

/** The actions of a list of statements, flattened and sorted. */
export function actionsOf(statements: Statement[]): string[] {
  return statements
    .flatMap((statement) => (Array.isArray(statement.Action) ? statement.Action : [statement.Action]))
    .sort();
}
