/**
 * What AWS would refuse or cap, checked on the synthesized template before anyone deploys (issue 38):
 * each quota with the number it checks and the AWS page that states it. Every check's margin (how
 * near the limit the stack is) is in its assertion message and in test-results/quota-margins.txt,
 * which `npm run deploy:check` prints.
 *
 * Values CloudFormation fills in at deploy time (a `Ref`, a `Fn::GetAtt`) are not known here: each is
 * counted as {@link INTRINSIC_CHARS} characters, the length of a long ARN (a Secrets Manager ARN in a
 * long region with a generated name is about 150), so a size counted here is an upper bound.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MAX_DELAY_SECONDS } from '../../functions/aws/sqs';
import { MAX_WAIT_SECONDS, WAIT_TIME_RESERVE_MS } from '../../functions/core/wait';
import { lambdasTriggeredBy } from '../../lib/routes';
import { cleanUp, functionLogicalId, type SynthesizedService, synthesize } from './support';

/** What an unresolved intrinsic (`Ref`, `Fn::GetAtt`, ...) is counted as, in characters. */
const INTRINSIC_CHARS = 160;
const MARGINS_FILE = resolve(__dirname, '../../test-results/quota-margins.txt');

const LAMBDA_QUOTAS = 'https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html';
const IAM_QUOTAS = 'https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html';
const CFN_QUOTAS = 'https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html';
const API_GATEWAY_QUOTAS = 'https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html';
const SQS_LAMBDA = 'https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html';
const SQS_DELAY = 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-delay-queues.html';
const SCALING_CONFIG =
  'https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-eventsourcemapping-scalingconfig.html';
const DYNAMODB_QUOTAS = 'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html';
const LAMBDA_CREATE_FUNCTION = 'https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html';

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
}

/** One quota applied to one thing: the measured value against AWS's limit. */
interface QuotaCheck {
  quota: string;
  subject: string;
  value: number;
  /** The largest allowed value (or, with `atLeast`, the smallest). */
  limit: number;
  atLeast?: boolean;
  url: string;
}

function within(check: QuotaCheck): boolean {
  return check.atLeast ? check.value >= check.limit : check.value <= check.limit;
}

/** `quota (subject): value of limit, margin N (P% used)`, and the page that states it. */
function describeCheck(check: QuotaCheck): string {
  const margin = check.atLeast ? check.value - check.limit : check.limit - check.value;
  const used = check.atLeast
    ? `${check.value} against at least ${check.limit}`
    : `${check.value} of ${check.limit} (${Math.round((check.value / check.limit) * 100)}% used)`;
  return `${check.quota} (${check.subject}): ${used}, margin ${margin} - ${check.url}`;
}

/** Characters of a value with every intrinsic counted as INTRINSIC_CHARS (strings as themselves). */
function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value).length;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + sizeOf(item), 0);
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && (keys[0] === 'Ref' || keys[0]?.startsWith('Fn::'))) return INTRINSIC_CHARS;
  }
  return INTRINSIC_CHARS;
}

/** A policy document's characters as IAM counts them (no whitespace), intrinsics as INTRINSIC_CHARS. */
function policySize(document: unknown): number {
  const replaced = JSON.stringify(document, (_key, value: unknown) => {
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const keys = Object.keys(value);
      if (keys.length === 1 && (keys[0] === 'Ref' || keys[0]?.startsWith('Fn::'))) return 'x'.repeat(INTRINSIC_CHARS);
    }
    return value;
  });
  return replaced.replace(/\s/g, '').length;
}

let service: SynthesizedService;
let resources: Record<string, Resource>;
const recorded: QuotaCheck[] = [];

/** Asserts one check, recording its margin; the failure message names the number, the limit and the page. */
function expectWithin(check: QuotaCheck): void {
  recorded.push(check);
  expect(within(check) ? 'within' : describeCheck(check)).toBe('within');
}

const ofType = (type: string) => Object.entries(resources).filter(([, resource]) => resource.Type === type);

beforeAll(() => {
  service = synthesize({}, { bundle: false });
  resources = service.template.toJSON().Resources as Record<string, Resource>;
});

afterAll(() => {
  mkdirSync(resolve(MARGINS_FILE, '..'), { recursive: true });
  writeFileSync(
    MARGINS_FILE,
    [
      '# Quotas of the synthesized template (test/infra/quotas.test.ts): value, limit, margin',
      ...recorded.map(describeCheck),
      '',
    ].join('\n'),
  );
  cleanUp(service);
});

describe('the template against what CloudFormation accepts', () => {
  test('resources, outputs, parameters and mappings per stack', () => {
    const template = service.template.toJSON() as Record<string, Record<string, unknown> | undefined>;
    const count = (section: string) => Object.keys(template[section] ?? {}).length;

    expectWithin({
      quota: 'resources per stack',
      subject: 'the stack',
      value: count('Resources'),
      limit: 500,
      url: CFN_QUOTAS,
    });
    expectWithin({
      quota: 'outputs per stack',
      subject: 'the stack',
      value: count('Outputs'),
      limit: 200,
      url: CFN_QUOTAS,
    });
    expectWithin({
      quota: 'parameters per stack',
      subject: 'the stack',
      value: count('Parameters'),
      limit: 200,
      url: CFN_QUOTAS,
    });
    expectWithin({
      quota: 'mappings per stack',
      subject: 'the stack',
      value: count('Mappings'),
      limit: 200,
      url: CFN_QUOTAS,
    });
  });

  test('the template body fits the 1 MB a template in S3 may have (the CDK uploads it)', () => {
    const bytes = Buffer.byteLength(JSON.stringify(service.template.toJSON()));

    expectWithin({
      quota: 'template body size in S3, bytes',
      subject: 'the stack',
      value: bytes,
      limit: 1_048_576,
      url: CFN_QUOTAS,
    });
  });
});

describe('Lambda functions', () => {
  test("each function's environment fits 4 KB (names and values, deploy-time values counted long)", () => {
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const variables = ((fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
        ?.Variables ?? {}) as Record<string, unknown>;
      const size = Object.entries(variables).reduce((sum, [name, value]) => sum + name.length + sizeOf(value), 0);

      expectWithin({
        quota: 'environment variables, bytes',
        subject: id,
        value: size,
        limit: 4096,
        url: LAMBDA_QUOTAS,
      });
    }
  });

  test('timeouts: 900 s at most, and the API functions within API Gateway’s 29 s integration timeout', () => {
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      expectWithin({
        quota: 'function timeout, s',
        subject: id,
        value: Number(fn.Properties?.Timeout ?? 3),
        limit: 900,
        url: LAMBDA_QUOTAS,
      });
    }
    for (const definition of [...lambdasTriggeredBy('route'), ...lambdasTriggeredBy('authorizer')]) {
      const fn = resources[functionLogicalId(service, definition.name)];
      expectWithin({
        quota: 'API function timeout against the integration timeout, s',
        subject: definition.name,
        value: Number(fn?.Properties?.Timeout ?? 3),
        limit: 29,
        url: API_GATEWAY_QUOTAS,
      });
    }
  });

  test('a request that waits (GET ?wait, Prefer: wait) gets its whole wait within its function timeout', () => {
    // Prepare: the wait is cut to the function's remaining time less a reserve (functions/core/wait.ts);
    // with these timeouts the longest wait a caller may ask for is never cut.
    const waiting = ['get-task', 'submit-image', 'submit-video'];

    // Act
    const timeouts = waiting.map((name) =>
      Number(resources[functionLogicalId(service, name)]?.Properties?.Timeout ?? 3),
    );

    // Assert
    for (const [index, timeout] of timeouts.entries()) {
      expectWithin({
        quota: 'longest wait plus its reserve against the function timeout, s',
        subject: waiting[index] ?? '',
        value: MAX_WAIT_SECONDS + WAIT_TIME_RESERVE_MS / 1000,
        limit: timeout,
        url: API_GATEWAY_QUOTAS,
      });
    }
  });

  test('memory 128 to 10,240 MB, at most 5 layers, explicit names at most 64 characters', () => {
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const memory = Number(fn.Properties?.MemorySize ?? 128);
      expectWithin({ quota: 'memory, MB', subject: id, value: memory, limit: 10_240, url: LAMBDA_QUOTAS });
      expectWithin({
        quota: 'memory at least, MB',
        subject: id,
        value: memory,
        limit: 128,
        atLeast: true,
        url: LAMBDA_QUOTAS,
      });
      const layers = ((fn.Properties?.Layers as unknown[] | undefined) ?? []).length;
      expectWithin({ quota: 'layers per function', subject: id, value: layers, limit: 5, url: LAMBDA_QUOTAS });
      const name = fn.Properties?.FunctionName;
      // Without a name CloudFormation makes one that fits; a name given here must fit itself.
      const nameLength = typeof name === 'string' ? name.length : 0;
      expectWithin({
        quota: 'function name, characters',
        subject: id,
        value: nameLength,
        limit: 64,
        url: LAMBDA_CREATE_FUNCTION,
      });
    }
  });

  test('reserved concurrency leaves the account its 100 unreserved of the default 1,000', () => {
    const reserved = ofType('AWS::Lambda::Function').reduce(
      (sum, [, fn]) => sum + Number(fn.Properties?.ReservedConcurrentExecutions ?? 0),
      0,
    );

    expectWithin({
      quota: 'reserved concurrency of all functions',
      subject: 'the stack',
      value: reserved,
      limit: 900,
      url: LAMBDA_QUOTAS,
    });
  });
});

describe('IAM', () => {
  test("each role's inline policies together fit 10,240 characters (whitespace not counted)", () => {
    const policies = ofType('AWS::IAM::Policy');
    for (const [roleId, role] of ofType('AWS::IAM::Role')) {
      const inline = ((role.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? []).map((policy) =>
        policySize(policy.PolicyDocument),
      );
      const attached = policies
        .filter(([, policy]) =>
          ((policy.Properties?.Roles as { Ref?: string }[] | undefined) ?? []).some((ref) => ref.Ref === roleId),
        )
        .map(([, policy]) => policySize(policy.Properties?.PolicyDocument));
      const size = [...inline, ...attached].reduce((sum, chars) => sum + chars, 0);

      expectWithin({
        quota: 'role inline policies, characters',
        subject: roleId,
        value: size,
        limit: 10_240,
        url: IAM_QUOTAS,
      });
      const name = role.Properties?.RoleName;
      expectWithin({
        quota: 'role name, characters',
        subject: roleId,
        value: typeof name === 'string' ? name.length : 0,
        limit: 64,
        url: IAM_QUOTAS,
      });
      const managed = ((role.Properties?.ManagedPolicyArns as unknown[] | undefined) ?? []).length;
      expectWithin({ quota: 'managed policies per role', subject: roleId, value: managed, limit: 10, url: IAM_QUOTAS });
    }
  });
});

describe('queues and event sources', () => {
  test("an SQS source's visibility timeout is at least six times its function's timeout", () => {
    const mappings = ofType('AWS::Lambda::EventSourceMapping').filter(([, mapping]) =>
      JSON.stringify(mapping.Properties?.EventSourceArn ?? '').includes('Queue'),
    );
    expect(mappings.length).toBeGreaterThan(0);
    for (const [id, mapping] of mappings) {
      const properties = mapping.Properties ?? {};
      const queueId = (properties.EventSourceArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const functionId = (properties.FunctionName as { Ref: string }).Ref;
      const visibility = Number(resources[queueId]?.Properties?.VisibilityTimeout ?? 30);
      const timeout = Number(resources[functionId]?.Properties?.Timeout ?? 3);

      expectWithin({
        quota: 'queue visibility timeout against six times the function timeout, s',
        subject: `${id} (${queueId} -> ${functionId})`,
        value: visibility,
        limit: 6 * timeout,
        atLeast: true,
        url: SQS_LAMBDA,
      });
      const concurrency = (mapping.Properties?.ScalingConfig as { MaximumConcurrency?: number } | undefined)
        ?.MaximumConcurrency;
      if (concurrency !== undefined) {
        expectWithin({
          quota: 'event source maximum concurrency',
          subject: id,
          value: concurrency,
          limit: 1000,
          url: SCALING_CONFIG,
        });
        expectWithin({
          quota: 'event source maximum concurrency at least',
          subject: id,
          value: concurrency,
          limit: 2,
          atLeast: true,
          url: SCALING_CONFIG,
        });
      }
    }
  });

  test("delivery delays: each queue's and the dispatcher's own wake-up delay at most 900 s", () => {
    for (const [id, queue] of ofType('AWS::SQS::Queue')) {
      expectWithin({
        quota: 'queue DelaySeconds',
        subject: id,
        value: Number(queue.Properties?.DelaySeconds ?? 0),
        limit: 900,
        url: SQS_DELAY,
      });
    }
    expectWithin({
      quota: 'SendMessage DelaySeconds',
      subject: 'functions/aws/sqs.ts MAX_DELAY_SECONDS',
      value: MAX_DELAY_SECONDS,
      limit: 900,
      url: SQS_DELAY,
    });
  });
});

describe('DynamoDB and API Gateway', () => {
  test('secondary indexes per table: 20 global, 5 local', () => {
    for (const [id, table] of ofType('AWS::DynamoDB::Table')) {
      const global = ((table.Properties?.GlobalSecondaryIndexes as unknown[] | undefined) ?? []).length;
      const local = ((table.Properties?.LocalSecondaryIndexes as unknown[] | undefined) ?? []).length;

      expectWithin({ quota: 'global secondary indexes', subject: id, value: global, limit: 20, url: DYNAMODB_QUOTAS });
      expectWithin({ quota: 'local secondary indexes', subject: id, value: local, limit: 5, url: DYNAMODB_QUOTAS });
    }
  });

  test('resources per REST API at most 300', () => {
    const count = ofType('AWS::ApiGateway::Resource').length;

    expectWithin({
      quota: 'resources per REST API',
      subject: 'the API',
      value: count,
      limit: 300,
      url: API_GATEWAY_QUOTAS,
    });
  });
});
