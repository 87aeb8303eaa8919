/**
 * Small helpers the service's constructs share: cdk-nag acknowledgements, stable logical ids for the
 * resources that hold data, and the one shape of a private bucket.
 */
import { createHash } from 'node:crypto';
import { CfnElement, Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { BlockPublicAccess, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import type { IConstruct } from 'constructs';
import type { ServiceConfig } from '../config';

/**
 * Acknowledges a cdk-nag finding on `scope` (and what it contains). `reason` says why the finding does
 * not apply; the infra tests refuse short reasons.
 */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/**
 * Pins the logical id of a construct's CloudFormation resource to the one it had when the stack built
 * it at its own top level, before the stack was split into constructs (lib/constructs/): the id CDK
 * derives from the path without the wrapping construct's id. CloudFormation replaces a resource whose
 * logical id changes: for a resource holding data (a table, a bucket, a secret, a queue, a log group, a
 * user pool) that would be a new, empty one, and for one with a fixed name or endpoint (the hosted UI
 * domain, the distribution, the operations dashboard, an e-mail subscription) a failed or destructive
 * deploy. test/infra/logical-ids.test.ts pins the ids deployed stacks hold.
 */
export function keepFormerLogicalId(construct: IConstruct): void {
  const resource = construct instanceof CfnElement ? construct : construct.node.defaultChild;
  if (!(resource instanceof CfnElement)) throw new Error(`${construct.node.path} has no CloudFormation resource`);
  const scopes = resource.node.scopes;
  const inStack = scopes.slice(scopes.indexOf(resource.stack) + 1).map((scope) => scope.node.id);
  // inStack[0] is the wrapping construct (Data, Api, Accounts, ...): the former path had no such level.
  keepLogicalIdOfPath(resource, inStack.slice(1));
}

/**
 * Pins the logical id of a construct's CloudFormation resource to the one CDK gave the resource at
 * `formerPath` below the stack (see {@link keepFormerLogicalId}), for resources whose own construct id
 * changed with the split (an event source mapping's id names its table's path).
 */
export function keepLogicalIdOfPath(construct: IConstruct, formerPath: readonly string[]): void {
  const resource = construct instanceof CfnElement ? construct : construct.node.defaultChild;
  if (!(resource instanceof CfnElement)) throw new Error(`${construct.node.path} has no CloudFormation resource`);
  resource.overrideLogicalId(topLevelLogicalId(formerPath));
}

/**
 * The logical id CDK gives a resource at this path below its stack: CDK's own algorithm
 * (`makeUniqueId` in aws-cdk-lib/core/lib/private/uniqueid.js, which the package does not export).
 * `Default` components are left out; `Resource` is left out of the readable part only; the readable
 * part drops a component its predecessor already ends with; the hash is the MD5 of the whole path.
 */
export function topLevelLogicalId(path: readonly string[]): string {
  const components = path.filter((component) => component !== 'Default');
  const alphanumeric = (component: string) => component.replace(/[^A-Za-z0-9]/g, '');
  const [only] = components;
  if (components.length === 1 && only !== undefined) return alphanumeric(only);
  const hash = createHash('md5').update(components.join('/')).digest('hex').slice(0, 8).toUpperCase();
  const readable: string[] = [];
  for (const component of components) {
    if (!readable.at(-1)?.endsWith(component)) readable.push(component);
  }
  const human = readable
    .filter((component) => component !== 'Resource')
    .map(alphanumeric)
    .join('')
    .slice(0, 240);
  return human + hash;
}

/**
 * What every bucket of the stack is: private, TLS only, encrypted, owner-enforced, retained with the
 * data or emptied and destroyed with the stack.
 */
export function privateBucketProps(config: ServiceConfig, removalPolicy: RemovalPolicy) {
  return {
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    minimumTLSVersion: 1.2,
    encryption: BucketEncryption.S3_MANAGED,
    objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
    removalPolicy,
    autoDeleteObjects: !config.retainData,
  };
}

/** How long stream records and dead-letter messages are worth keeping (a dead letter is looked at by hand). */
export const DEAD_LETTER_RETENTION = Duration.days(14);

/** `submit-image` -> `SubmitImage`: construct ids and logical ids stay readable. */
export function pascal(kebab: string): string {
  return kebab
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
