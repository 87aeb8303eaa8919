/**
 * Evaluates the AWS calls the functions made on the local stack (local/aws-call-recorder.ts) against
 * each function's policy in the synthesized template, with an offline IAM simulator
 * (`@cloud-copilot/iam-simulate`): what the deployed role would deny, and what it grants that no call
 * used. docs/decisions/0015-iam-simulation-of-recorded-calls.md says why and what it cannot see.
 *
 * The template is environment-agnostic, so every ARN is built with a placeholder account and region
 * (`123456789012`, `us-east-1`) on both sides: the policy's intrinsics (`Ref`, `Fn::GetAtt`,
 * `Fn::Join`) resolve to the same placeholder ARNs the recorded local resources map to (the local
 * table to the template's table, the local uploads bucket to the media bucket, ...).
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { RecordedCall, RecordedResource } from '../../local/aws-call-recorder';
import { statementLines } from '../infra/iam-render';
import type { Statement } from '../infra/support';

export const PLACEHOLDER_ACCOUNT = '123456789012';
export const PLACEHOLDER_REGION = 'us-east-1';

interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}

/** The synthesized template's resources, by logical id. */
export type TemplateResources = Readonly<Record<string, TemplateResource>>;

const PSEUDO: Readonly<Record<string, string>> = {
  'AWS::Partition': 'aws',
  'AWS::Region': PLACEHOLDER_REGION,
  'AWS::AccountId': PLACEHOLDER_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'GenerationService',
};

const arnPrefix = (service: string) => `arn:aws:${service}:${PLACEHOLDER_REGION}:${PLACEHOLDER_ACCOUNT}`;

/** What `Ref` returns for a resource, with placeholder names (CloudFormation's documented return values). */
function refOf(id: string, resources: TemplateResources): string {
  const pseudo = PSEUDO[id];
  if (pseudo) return pseudo;
  const type = resources[id]?.Type;
  if (type === 'AWS::SecretsManager::Secret') return `${arnPrefix('secretsmanager')}:secret:${id}-AbCdEf`;
  if (type === 'AWS::SQS::Queue') return `https://sqs.${PLACEHOLDER_REGION}.amazonaws.com/${PLACEHOLDER_ACCOUNT}/${id}`;
  if (type === 'AWS::S3::Bucket') return id.toLowerCase();
  // Tables, REST APIs, usage plans, functions: their name or id, the logical id here.
  return id;
}

/** What `Fn::GetAtt` returns, with placeholder names. */
function getAttOf(id: string, attribute: string, resources: TemplateResources): string {
  const type = resources[id]?.Type;
  if (attribute === 'Arn') {
    switch (type) {
      case 'AWS::DynamoDB::Table':
        return `${arnPrefix('dynamodb')}:table/${id}`;
      case 'AWS::S3::Bucket':
        return `arn:aws:s3:::${id.toLowerCase()}`;
      case 'AWS::Logs::LogGroup':
        return `${arnPrefix('logs')}:log-group:${id}:*`;
      case 'AWS::SQS::Queue':
        return `${arnPrefix('sqs')}:${id}`;
      case 'AWS::Lambda::Function':
        return `${arnPrefix('lambda')}:function:${id}`;
      case 'AWS::Cognito::UserPool':
        return `${arnPrefix('cognito-idp')}:userpool/${id}`;
      case 'AWS::IAM::Role':
        return `arn:aws:iam::${PLACEHOLDER_ACCOUNT}:role/${id}`;
      default:
        return `${arnPrefix('unknown')}:${id}`;
    }
  }
  if (attribute === 'StreamArn') return `${arnPrefix('dynamodb')}:table/${id}/stream/2026-01-01T00:00:00.000`;
  if (attribute === 'QueueName') return id;
  if (attribute === 'QueueUrl') return refOf(id, resources);
  return `${id}.${attribute}`;
}

/** Resolves the intrinsics of a policy fragment to placeholder values. */
export function resolveIntrinsics(value: unknown, resources: TemplateResources): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveIntrinsics(item, resources));
  if (!value || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  if (typeof record.Ref === 'string') return refOf(record.Ref, resources);
  const getAtt = record['Fn::GetAtt'];
  if (Array.isArray(getAtt)) return getAttOf(String(getAtt[0]), String(getAtt[1]), resources);
  const join = record['Fn::Join'];
  if (Array.isArray(join)) {
    const [separator, parts] = join as [string, unknown[]];
    return (resolveIntrinsics(parts, resources) as unknown[]).map(String).join(separator);
  }
  const select = record['Fn::Select'];
  if (Array.isArray(select)) {
    const [index, list] = select as [number, unknown];
    return (resolveIntrinsics(list, resources) as unknown[])[Number(index)];
  }
  const split = record['Fn::Split'];
  if (Array.isArray(split)) {
    const [separator, text] = split as [string, unknown];
    return String(resolveIntrinsics(text, resources)).split(separator);
  }
  return Object.fromEntries(Object.entries(record).map(([key, inner]) => [key, resolveIntrinsics(inner, resources)]));
}

function logicalIdOfType(resources: TemplateResources, type: string, prefix?: string): string {
  const ids = Object.entries(resources)
    .filter(([id, resource]) => resource.Type === type && (prefix === undefined || id.startsWith(prefix)))
    .map(([id]) => id);
  if (ids.length !== 1 || !ids[0])
    throw new Error(`expected one ${type}${prefix ? ` ${prefix}*` : ''}, found ${ids.length}`);
  return ids[0];
}

/** Where a local resource is in the template: its ARN and any context IAM reads from the resource. */
export interface MappedResource {
  arn: string;
  context?: Record<string, string>;
}

/** The API Gateway tag the account plans carry (functions/aws/usage-plans.ts `USAGE_PLAN_API_TAG`). */
export interface ResourceMapOptions {
  /** The local stand-in's default usage plan id (local/usage-plans.ts). */
  localDefaultPlanId: string;
  usagePlanApiTag: string;
}

/**
 * The template ARN of a resource the local stack named: its one table (and indexes), the media bucket
 * for the local uploads bucket, the dispatcher's wake-up queue, API Gateway's management paths (the
 * stand-in's default plan as the stack's default plan; any other plan as an account plan tagged with
 * the stack's API). Undefined: the local name has no counterpart (reported as unmapped).
 */
export function templateResourceOf(
  resource: RecordedResource,
  resources: TemplateResources,
  options: ResourceMapOptions,
): MappedResource | undefined {
  switch (resource.kind) {
    case 'table': {
      const table = getAttOf(logicalIdOfType(resources, 'AWS::DynamoDB::Table'), 'Arn', resources);
      return { arn: resource.index ? `${table}/index/${resource.index}` : table };
    }
    case 'object': {
      const bucket = refOf(logicalIdOfType(resources, 'AWS::S3::Bucket', 'MediaBucket'), resources);
      return { arn: `arn:aws:s3:::${bucket}/${resource.key}` };
    }
    case 'queue':
      return {
        arn: getAttOf(logicalIdOfType(resources, 'AWS::SQS::Queue', 'DispatchDispatcherWakeQueue'), 'Arn', resources),
      };
    case 'apigateway': {
      const defaultPlan = logicalIdOfType(resources, 'AWS::ApiGateway::UsagePlan');
      const api = logicalIdOfType(resources, 'AWS::ApiGateway::RestApi');
      const plan = /^\/usageplans\/([^/]+)/.exec(resource.path)?.[1];
      if (plan === undefined || plan === options.localDefaultPlanId) {
        return {
          arn: `arn:aws:apigateway:${PLACEHOLDER_REGION}::${resource.path.replace(options.localDefaultPlanId, defaultPlan)}`,
        };
      }
      // An account's own plan: created by the service with its API's tag (IAM reads it from the plan).
      return {
        arn: `arn:aws:apigateway:${PLACEHOLDER_REGION}::${resource.path.replace(plan, 'accountplan')}`,
        context: { [`aws:ResourceTag/${options.usagePlanApiTag}`]: api },
      };
    }
    case 'secret':
      // The local stack reads no secret from Secrets Manager (plain values stand in): nothing to map.
      return undefined;
    default:
      return undefined;
  }
}

/** A call the deployed policy would refuse, or could not be evaluated. */
export interface Refusal {
  function: string;
  call: RecordedCall;
  arn?: string;
  reason: string;
}

/** The outcome over every recorded call. */
export interface SimulationReport {
  /** Distinct calls evaluated, by function. */
  callsByFunction: Map<string, number>;
  refusals: Refusal[];
  /** Per function, the granted `action on resource` lines no recorded call used. */
  unusedGrants: Map<string, string[]>;
}

/** Actions Lambda itself uses with the role (the runtime's logs, the event source mappings). */
const USED_BY_LAMBDA = new Set([
  'logs:CreateLogStream',
  'logs:PutLogEvents',
  'logs:CreateLogGroup',
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
  'sqs:ReceiveMessage',
  'sqs:DeleteMessage',
  'sqs:GetQueueAttributes',
  'sqs:ChangeMessageVisibility',
  'sqs:GetQueueUrl',
  'xray:PutTraceSegments',
  'xray:PutTelemetryRecords',
]);

/** Actions that name items by partition key: a call of one that recorded no key is a recorder gap. */
const KEYED_ACTIONS = new Set([
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:Query',
]);

const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

function wildcardMatches(pattern: string, value: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return regex.test(value);
}

/**
 * Evaluates each distinct call of each function against its role's statements.
 * @param statementsByFunction the raw template statements of each function's role (test/infra/support.ts)
 */
export async function simulateCalls(
  calls: readonly RecordedCall[],
  statementsByFunction: ReadonlyMap<string, readonly Statement[]>,
  resources: TemplateResources,
  options: ResourceMapOptions,
): Promise<SimulationReport> {
  const refusals: Refusal[] = [];
  const callsByFunction = new Map<string, number>();
  const used = new Map<string, Set<string>>();
  const distinct = new Map<string, RecordedCall & { function: string }>();
  for (const call of calls) {
    if (call.function === null) continue;
    const key = JSON.stringify([call.function, call.action, call.resource, call.leadingKeys?.slice().sort()]);
    distinct.set(key, call as RecordedCall & { function: string });
  }
  for (const call of distinct.values()) {
    callsByFunction.set(call.function, (callsByFunction.get(call.function) ?? 0) + 1);
    const statements = statementsByFunction.get(call.function);
    if (!statements) {
      refusals.push({ function: call.function, call, reason: 'no function of this name in the template' });
      continue;
    }
    const mapped = templateResourceOf(call.resource, resources, options);
    if (!mapped) {
      refusals.push({ function: call.function, call, reason: 'the local resource has no counterpart in the template' });
      continue;
    }
    if (KEYED_ACTIONS.has(call.action) && call.resource.kind === 'table' && !call.leadingKeys?.length) {
      refusals.push({
        function: call.function,
        call,
        arn: mapped.arn,
        reason: 'the recorder read no partition key for a keyed call (dynamodb:LeadingKeys would be unchecked)',
      });
      continue;
    }
    const policy = { Version: '2012-10-17', Statement: resolveIntrinsics(statements, resources) };
    const contextVariables: Record<string, string | string[]> = { ...mapped.context };
    if (call.leadingKeys) contextVariables['dynamodb:LeadingKeys'] = call.leadingKeys;
    const result = await runSimulation(
      {
        request: {
          principal: `arn:aws:iam::${PLACEHOLDER_ACCOUNT}:role/${call.function}`,
          action: call.action,
          resource: { resource: mapped.arn, accountId: PLACEHOLDER_ACCOUNT },
          contextVariables,
        },
        identityPolicies: [{ name: `${call.function}-policy`, policy }],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
      },
      {},
    );
    if (result.resultType === 'error') {
      refusals.push({
        function: call.function,
        call,
        arn: mapped.arn,
        reason: `not evaluable: ${result.errors.message}`,
      });
      continue;
    }
    if (result.overallResult !== 'Allowed') {
      const forAction = statements.filter((statement) =>
        asList(statement.Action).some((action) => wildcardMatches(String(action), call.action)),
      );
      const lines = forAction.length > 0 ? statementLines(forAction).join('; ') : 'none';
      refusals.push({
        function: call.function,
        call,
        arn: mapped.arn,
        reason: `${result.overallResult}; the policy's statements for ${call.action}: ${lines}`,
      });
      continue;
    }
    // Which granted (action, resource) pairs this call used.
    const resolved = resolveIntrinsics(statements, resources) as Statement[];
    const marks = used.get(call.function) ?? new Set<string>();
    for (const statement of resolved) {
      for (const action of asList(statement.Action).map(String)) {
        if (!wildcardMatches(action, call.action)) continue;
        for (const pattern of asList(statement.Resource).map(String)) {
          if (wildcardMatches(pattern, mapped.arn)) marks.add(`${action} on ${pattern}`);
        }
      }
    }
    used.set(call.function, marks);
  }
  const unusedGrants = new Map<string, string[]>();
  for (const [name, statements] of statementsByFunction) {
    const resolved = resolveIntrinsics(statements, resources) as Statement[];
    const marks = used.get(name) ?? new Set<string>();
    const unused = resolved.flatMap((statement) =>
      asList(statement.Action)
        .map(String)
        .flatMap((action) =>
          asList(statement.Resource)
            .map(String)
            .map((pattern) => `${action} on ${pattern}`)
            .filter((line) => !marks.has(line))
            .map((line) => (USED_BY_LAMBDA.has(action) ? `${line} (used by Lambda itself)` : line)),
        ),
    );
    unusedGrants.set(name, [...new Set(unused)].sort());
  }
  return { callsByFunction, refusals, unusedGrants };
}

/** One line per refusal: the function, the call, and why. */
export function describeRefusal(refusal: Refusal): string {
  const keys = refusal.call.leadingKeys ? ` LeadingKeys [${refusal.call.leadingKeys.join(', ')}]` : '';
  return `${refusal.function}: ${refusal.call.action} on ${refusal.arn ?? JSON.stringify(refusal.call.resource)}${keys}: ${refusal.reason}`;
}
