/**
 * Records every AWS call the handlers make on the local stack, as IAM would authorize it (action,
 * resource, and for DynamoDB the partition keys: `dynamodb:LeadingKeys`), each attributed to the
 * function (lib/routes.ts `LAMBDAS`) whose invocation made it. `AWS_CALL_RECORD_FILE` turns it on
 * (local/start.ts); test/integration/iam-simulation.test.ts evaluates the file against the
 * synthesized template's policies (docs/decisions/0015-iam-simulation-of-recorded-calls.md).
 *
 * Attribution: every handler the stack loads runs inside an AsyncLocalStorage context naming its
 * function, so a call made anywhere below it (the store, the signer, an SDK client) is its function's.
 * Calls outside any handler (the stack's own setup, the gateway's usage limiter) are written with
 * `function: null`; calls a local stand-in makes in place of an AWS service (the usage-plan stand-in's
 * table items) are not written at all: the stand-in records the call it stands for instead.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync } from 'node:fs';
import type { UsageEnrollment } from '../functions/auth/rate-limits';
import { type ObservedAwsCall, setAwsCallObserver } from '../functions/core/aws-call-observer';
import { TABLE } from '../functions/store/table';

/** A resource as this run names it; the simulation maps it to the template's ARN. */
export type RecordedResource =
  | { kind: 'table'; table: string; index?: string }
  | { kind: 'object'; bucket: string; key: string }
  | { kind: 'secret'; secretId: string }
  | { kind: 'queue'; queueUrl: string }
  | { kind: 'apigateway'; path: string }
  | { kind: 'unknown'; description: string };

/** One authorization request: what a deployed role would be asked for. */
export interface RecordedCall {
  /** The function (lib/routes.ts name), or null for a call outside every handler. */
  function: string | null;
  /** The IAM action, `dynamodb:GetItem`. */
  action: string;
  resource: RecordedResource;
  /** DynamoDB: the partition key values (`dynamodb:LeadingKeys`); absent where the call names none. */
  leadingKeys?: string[];
}

type Attribution = { function: string } | { standIn: true };

const context = new AsyncLocalStorage<Attribution>();

const invoked = new Set<string>();

/**
 * Runs `work` as the function `name` (its calls are recorded as that function's). Each function's first
 * invocation is written too (`{ "invoked": name }`), so a function that makes no AWS call shows as run.
 */
export function asFunction<T>(name: string, work: () => T): T {
  if (recordFile && !invoked.has(name)) {
    invoked.add(name);
    appendFileSync(recordFile, `${JSON.stringify({ invoked: name })}\n`);
  }
  return context.run({ function: name }, work);
}

/** A recording read back: the calls, and the functions that ran. */
export interface Recording {
  calls: RecordedCall[];
  invoked: Set<string>;
}

/** Parses a recording file's text (JSON lines). */
export function parseRecording(text: string): Recording {
  const recording: Recording = { calls: [], invoked: new Set() };
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as RecordedCall | { invoked: string };
    if ('invoked' in entry) recording.invoked.add(entry.invoked);
    else recording.calls.push(entry);
  }
  return recording;
}

/**
 * Runs `work` as a local stand-in of an AWS service: its own calls are not the function's, and
 * `standsFor` (the AWS calls it replaces) are recorded for the function instead.
 */
export async function asStandIn<T>(standsFor: readonly Omit<RecordedCall, 'function'>[], work: () => Promise<T>) {
  const current = context.getStore();
  const recording = recordFile;
  if (recording && current && 'function' in current) {
    for (const call of standsFor) write(recording, { function: current.function, ...call });
  }
  return context.run({ standIn: true }, work);
}

let recordFile: string | undefined;

function write(file: string, call: RecordedCall): void {
  appendFileSync(file, `${JSON.stringify(call)}\n`);
}

/** Starts appending every call to `file` (JSON lines); the clients made from now on are watched. */
export function startAwsCallRecording(file: string): void {
  recordFile = file;
  setAwsCallObserver((observed) => {
    const attribution = context.getStore();
    if (attribution && 'standIn' in attribution) return;
    for (const call of iamCallsOf(observed)) write(file, { function: attribution?.function ?? null, ...call });
  });
}

/** Stops recording (the stack's stop). */
export function stopAwsCallRecording(): void {
  recordFile = undefined;
  setAwsCallObserver(undefined);
}

type Marshalled = Record<string, { S?: string } | undefined>;

function partitionKeyAttribute(index: string | undefined): string {
  if (index === TABLE.pendingIndex.name) return TABLE.pendingIndex.partitionKey;
  if (index === TABLE.taskIndex.name) return TABLE.taskIndex.partitionKey;
  return TABLE.partitionKey;
}

function keyOf(item: Marshalled | undefined): string[] {
  const value = item?.[TABLE.partitionKey]?.S;
  return value === undefined ? [] : [value];
}

/** The partition key value a key condition fixes (`#pk = :pk`, either side, any alias). */
function queryPartitionKeys(input: Record<string, unknown>, index: string | undefined): string[] {
  const expression = typeof input.KeyConditionExpression === 'string' ? input.KeyConditionExpression : '';
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Marshalled;
  const wanted = partitionKeyAttribute(index);
  for (const part of expression.split(/\s+and\s+/i)) {
    const match = /^\s*\(?\s*([#:]?[\w#]+)\s*=\s*([#:]?[\w#]+)\s*\)?\s*$/.exec(part);
    if (!match) continue;
    const [left, right] = [match[1] ?? '', match[2] ?? ''];
    const [nameToken, valueToken] = left.startsWith(':') ? [right, left] : [left, right];
    const name = nameToken.startsWith('#') ? names[nameToken] : nameToken;
    const value = values[valueToken]?.S;
    if (name === wanted && value !== undefined) return [value];
  }
  return [];
}

function tableCall(action: string, input: Record<string, unknown>, leadingKeys?: string[]) {
  const table = String(input.TableName ?? '');
  const index = typeof input.IndexName === 'string' ? input.IndexName : undefined;
  return {
    action: `dynamodb:${action}`,
    resource: { kind: 'table', table, ...(index ? { index } : {}) } as RecordedResource,
    ...(leadingKeys ? { leadingKeys } : {}),
  };
}

/** DynamoDB: one authorization per call, and per item of a transaction (IAM checks each item's action). */
function dynamodbCalls(operation: string, input: Record<string, unknown>): Omit<RecordedCall, 'function'>[] {
  const action = operation.replace(/Command$/, '');
  switch (action) {
    case 'GetItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [tableCall(action, input, keyOf(input.Key as Marshalled))];
    case 'PutItem':
      return [tableCall(action, input, keyOf(input.Item as Marshalled))];
    case 'Query': {
      const index = typeof input.IndexName === 'string' ? input.IndexName : undefined;
      return [tableCall(action, input, queryPartitionKeys(input, index))];
    }
    case 'TransactWriteItems':
      return ((input.TransactItems ?? []) as Record<string, Record<string, unknown> | undefined>[]).flatMap((item) => {
        if (item.Put) return [tableCall('PutItem', item.Put, keyOf(item.Put.Item as Marshalled))];
        if (item.Update) return [tableCall('UpdateItem', item.Update, keyOf(item.Update.Key as Marshalled))];
        if (item.Delete) return [tableCall('DeleteItem', item.Delete, keyOf(item.Delete.Key as Marshalled))];
        if (item.ConditionCheck) {
          return [tableCall('ConditionCheckItem', item.ConditionCheck, keyOf(item.ConditionCheck.Key as Marshalled))];
        }
        return [];
      });
    case 'TransactGetItems':
      return ((input.TransactItems ?? []) as { Get?: Record<string, unknown> }[]).flatMap((item) =>
        item.Get ? [tableCall('GetItem', item.Get, keyOf(item.Get.Key as Marshalled))] : [],
      );
    case 'BatchGetItem':
      return Object.entries((input.RequestItems ?? {}) as Record<string, { Keys?: Marshalled[] }>).map(
        ([table, request]) => tableCall(action, { TableName: table }, (request.Keys ?? []).flatMap(keyOf)),
      );
    case 'BatchWriteItem':
      return Object.entries(
        (input.RequestItems ?? {}) as Record<
          string,
          { PutRequest?: { Item?: Marshalled }; DeleteRequest?: { Key?: Marshalled } }[]
        >,
      ).map(([table, requests]) =>
        tableCall(
          action,
          { TableName: table },
          requests.flatMap((request) => keyOf(request.PutRequest?.Item ?? request.DeleteRequest?.Key)),
        ),
      );
    default:
      // Scan, DescribeTable, ...: the table (or index) itself, no partition key.
      return [tableCall(action, input)];
  }
}

/** Bucket and key of an S3 URL, virtual-hosted (`<bucket>.s3.<region>...`) or path-style (`/<bucket>/<key>`). */
function objectOf(url: string): RecordedResource {
  const parsed = new URL(url);
  const hosted = /^(.+)\.s3[.-]/.exec(parsed.hostname);
  const path = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (hosted?.[1]) return { kind: 'object', bucket: hosted[1], key: path };
  const [bucket = '', ...key] = path.split('/');
  return { kind: 'object', bucket, key: key.join('/') };
}

const S3_ACTIONS: Readonly<Record<string, string>> = {
  GET: 's3:GetObject',
  HEAD: 's3:GetObject',
  PUT: 's3:PutObject',
  DELETE: 's3:DeleteObject',
};

/** The IAM requests behind one observed call. */
export function iamCallsOf(observed: ObservedAwsCall): Omit<RecordedCall, 'function'>[] {
  const input = (observed.input ?? {}) as Record<string, unknown>;
  if (observed.service === 'dynamodb') return dynamodbCalls(observed.operation, input);
  if (observed.service === 's3') {
    if (observed.operation === 'PresignPost') {
      const fields = (input.fields ?? {}) as Record<string, string>;
      const bucket = objectOf(String(input.url)) as { bucket: string };
      // A POST form's upload is authorized as PutObject on the key the policy fixes.
      return [{ action: 's3:PutObject', resource: { kind: 'object', bucket: bucket.bucket, key: fields.key ?? '' } }];
    }
    if (observed.operation === 'Request' || observed.operation === 'PresignUrl') {
      const method = String(input.method ?? 'GET').toUpperCase();
      const call = { action: S3_ACTIONS[method] ?? `s3:${method}`, resource: objectOf(String(input.url)) };
      // CopyObject (a PUT naming its source): IAM also asks for GetObject on the source object.
      const source = ((input.headers ?? {}) as Record<string, string>)['x-amz-copy-source'];
      if (!source) return [call];
      const [bucket = '', ...key] = decodeURIComponent(source.replace(/^\//, '')).split('/');
      return [call, { action: 's3:GetObject', resource: { kind: 'object', bucket, key: key.join('/') } }];
    }
    // The SDK's S3 client (the media worker's multipart upload): PutObject / multipart parts are PutObject in IAM.
    const action = observed.operation.replace(/Command$/, '');
    const multipart = ['CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload', 'PutObject'];
    return [
      {
        action: multipart.includes(action) ? 's3:PutObject' : `s3:${action}`,
        resource: { kind: 'object', bucket: String(input.Bucket ?? ''), key: String(input.Key ?? '') },
      },
    ];
  }
  if (observed.service === 'secretsmanager') {
    const headers = (input.headers ?? {}) as Record<string, string>;
    const target = headers['x-amz-target'] ?? '';
    let secretId = '';
    try {
      secretId = String((JSON.parse(String(input.body ?? '{}')) as { SecretId?: unknown }).SecretId ?? '');
    } catch {
      // Not JSON: left empty, which the simulation reports as a resource it cannot map.
    }
    return [
      {
        action: `secretsmanager:${target.replace(/^secretsmanager\./, '')}`,
        resource: { kind: 'secret', secretId },
      },
    ];
  }
  if (observed.service === 'sqs') {
    return [
      {
        action: `sqs:${observed.operation.replace(/Command$/, '')}`,
        resource: { kind: 'queue', queueUrl: String(input.QueueUrl ?? '') },
      },
    ];
  }
  return [
    {
      action: `${observed.service}:${observed.operation.replace(/Command$/, '')}`,
      resource: { kind: 'unknown', description: JSON.stringify(input).slice(0, 200) },
    },
  ];
}

const gatewayCall = (method: string, path: string): Omit<RecordedCall, 'function'> => ({
  action: `apigateway:${method}`,
  resource: { kind: 'apigateway', path },
});

/** A stand-in's id for an API Gateway key (the deployed one is API Gateway's own). */
const STAND_IN_KEY_ID = 'stand-in-key-id';

/**
 * The usage-plan stand-in (local/usage-plans.ts) recording, for the function that calls it, the API
 * Gateway control-plane calls the deployed implementation (functions/aws/usage-plans.ts) makes, and
 * keeping its own table items out of the function's calls.
 */
export function recordedUsageEnrollment(enrollment: UsageEnrollment): UsageEnrollment {
  const plans = enrollment.plans;
  return {
    ...enrollment,
    defaultPlanId: () => asStandIn([gatewayCall('GET', '/usageplans')], () => enrollment.defaultPlanId()),
    plans: {
      enroll: (key, planId) =>
        asStandIn([gatewayCall('POST', '/apikeys'), gatewayCall('POST', `/usageplans/${planId}/keys`)], () =>
          plans.enroll(key, planId),
        ),
      remove: (key) =>
        asStandIn([gatewayCall('GET', '/apikeys'), gatewayCall('DELETE', `/apikeys/${STAND_IN_KEY_ID}`)], () =>
          plans.remove(key),
        ),
      move: (keys, from, to) =>
        asStandIn(
          [
            gatewayCall('GET', `/usageplans/${from}/keys`),
            gatewayCall('DELETE', `/usageplans/${from}/keys/${STAND_IN_KEY_ID}`),
            gatewayCall('POST', `/usageplans/${to}/keys`),
          ],
          () => plans.move(keys, from, to),
        ),
      createPlan: (name, plan, on) =>
        asStandIn([gatewayCall('POST', '/usageplans')], () => plans.createPlan(name, plan, on)),
      updatePlan: (planId, plan) =>
        asStandIn([gatewayCall('PATCH', `/usageplans/${planId}`)], () => plans.updatePlan(planId, plan)),
      deletePlan: (planId) =>
        asStandIn([gatewayCall('DELETE', `/usageplans/${planId}`)], () => plans.deletePlan(planId)),
      planIdByName: (name) => asStandIn([gatewayCall('GET', '/usageplans')], () => plans.planIdByName(name)),
    },
  };
}
