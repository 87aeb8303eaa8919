/**
 * A conflict-faithful layer in front of DynamoDB Local.
 *
 * DynamoDB Local runs every transaction under one table-wide lock, so it never reports a transaction
 * conflict; the real service does, per item. This HTTP proxy forwards every request to DynamoDB Local
 * unchanged, and in front of that models the per-item rules of the real service:
 *
 * - A `TransactWriteItems` holds every item it names (Put, Update, Delete and ConditionCheck alike) for
 *   `holdMs` (or until DynamoDB Local has answered, whichever is later); its answer is sent when the
 *   hold ends, as the real service answers after the commit.
 * - A `TransactWriteItems` or `TransactGetItems` naming an item another transaction holds is refused
 *   with `TransactionCanceledException`, reason `TransactionConflict` for each held item and `None` for
 *   the others. Nothing of it is forwarded, so nothing is written.
 * - A `PutItem`, `UpdateItem` or `DeleteItem` on a held item is refused with
 *   `TransactionConflictException`.
 *
 * It also models DynamoDB's per-partition throughput (local/partition-throughput.ts): about 3,000 read
 * and 1,000 write units a second per partition key value, the excess refused as DynamoDB refuses it
 * (`ProvisionedThroughputExceededException` with a `KeyRangeThroughputExceeded` reason; in a
 * transaction, `TransactionCanceledException` with `ThrottlingError` for the throttled items), counting
 * what each request consumed as DynamoDB Local reports it (the proxy asks for `ReturnConsumedCapacity`
 * and strips it from the answer when the client did not). `throughput()` tells the units each
 * partition consumed, so tests measure what an operation costs. The 400 KB item size needs no model:
 * DynamoDB Local refuses a larger item itself, with DynamoDB's `ValidationException` ("Item size has
 * exceeded the maximum allowed size"; an update: "Item size to update has exceeded the maximum allowed
 * size"), and the proxy passes that answer on.
 *
 * Not modelled (docs/design/money.md says so too): plain writes do not hold items (a transaction
 * never conflicts with an in-flight `PutItem`); `BatchWriteItem` and `BatchGetItem` pass through
 * (their units are counted); reads never conflict (as in DynamoDB, where non-transactional reads are
 * not blocked); table- and account-level throughput quotas, adaptive capacity, and the 10-minute
 * idempotency window of `ClientRequestToken`. A transaction's or batch's units, which DynamoDB reports
 * per table, are split over its items by their size (a put) or evenly (anything else).
 */
import { randomUUID } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { TABLE } from '../functions/store/table';
import {
  DYNAMODB_PARTITION_LIMITS,
  itemBytes,
  PartitionThroughput,
  type PartitionUsage,
  splitUnits,
  type ThroughputLimits,
  type UnitKind,
} from './partition-throughput';

export interface ConflictProxyOptions {
  /** DynamoDB Local's endpoint, e.g. `http://127.0.0.1:8000`. */
  target: string;
  /** How long a transaction holds its items (default 10 ms). */
  holdMs?: number;
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  host?: string;
  /** The key attributes of every table behind the proxy (default: the service's `PK`, `SK`). */
  keyAttributes?: readonly string[];
  /**
   * Per-partition throughput (default: DynamoDB's, {@link DYNAMODB_PARTITION_LIMITS}); lower limits, for
   * every partition or some, let a test reach them cheaply; `false` turns the model and the accounting off.
   */
  throughput?: ThroughputLimits | false;
}

/** Units consumed per partition (`<table> <partition key value>`, `<table>/<index> <value>` for an index). */
export interface ThroughputStats {
  partitions: Map<string, PartitionUsage>;
  /** Requests refused for a partition's throughput. */
  throttled: number;
}

/** What the proxy refused so far, so tests can show that the layer really produced conflicts. */
export interface ConflictStats {
  /** Transactions cancelled with `TransactionConflict`. */
  cancelledTransactions: number;
  /** Plain writes refused with `TransactionConflictException`. */
  refusedWrites: number;
  /** Transactions forwarded (and holding their items). */
  forwardedTransactions: number;
}

export interface ConflictProxy {
  /** The endpoint clients use instead of DynamoDB Local's. */
  endpoint: string;
  stats(): ConflictStats;
  /** Units consumed and requests throttled so far (empty when the throughput model is off). */
  throughput(): ThroughputStats;
  stop(): Promise<void>;
}

const TARGET_PREFIX = 'DynamoDB_20120810.';
const ERROR_PREFIX = 'com.amazonaws.dynamodb.v20120810#';
const CONFLICT_MESSAGE = 'Transaction is ongoing for the item';
const PLAIN_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The identity of one item: table and key attribute values (in their wire form). */
function itemId(tableName: unknown, source: unknown, keyAttributes: readonly string[]): string | undefined {
  if (typeof tableName !== 'string' || !isObject(source)) return undefined;
  return JSON.stringify([tableName, ...keyAttributes.map((name) => source[name] ?? null)]);
}

/** The items a transaction names, in request order (undefined where the proxy cannot tell). */
function transactionItems(body: Json, operation: string, keyAttributes: readonly string[]): (string | undefined)[] {
  const entries = body.TransactItems;
  if (!Array.isArray(entries)) return [];
  return entries.map((entry: unknown) => {
    if (!isObject(entry)) return undefined;
    const action = Object.values(entry)[0];
    if (!isObject(action)) return undefined;
    if (operation === 'TransactWriteItems' && isObject(entry.Put)) {
      return itemId(entry.Put.TableName, entry.Put.Item, keyAttributes);
    }
    return itemId(action.TableName, action.Key, keyAttributes);
  });
}

/** The partition a request names: its label and, for the units' split, its weight. */
interface Touched {
  kind: UnitKind;
  partitions: string[];
  weights: number[];
}

/** How the proxy names a partition: `<table> <value>`, or `<table>/<index> <value>` on an index. */
export function partitionLabel(table: string, value: unknown, index?: string): string {
  const wire = isObject(value) ? value : {};
  const text = typeof wire.S === 'string' ? wire.S : typeof wire.N === 'string' ? wire.N : JSON.stringify(value);
  return `${index === undefined ? table : `${table}/${index}`} ${text}`;
}

/** The partition of a `Query`: the value its key condition gives the partition key (the first equality on an index). */
function queryPartition(body: Json, partitionKey: string): string | undefined {
  if (typeof body.TableName !== 'string' || typeof body.KeyConditionExpression !== 'string') return undefined;
  const names = isObject(body.ExpressionAttributeNames) ? body.ExpressionAttributeNames : {};
  const values = isObject(body.ExpressionAttributeValues) ? body.ExpressionAttributeValues : {};
  const index = typeof body.IndexName === 'string' ? body.IndexName : undefined;
  for (const match of body.KeyConditionExpression.matchAll(/([#\w.]+)\s*=\s*(:\w+)/g)) {
    const token = match[1] ?? '';
    const name = token.startsWith('#') ? names[token] : token;
    if (index !== undefined || name === partitionKey)
      return partitionLabel(body.TableName, values[match[2] ?? ''], index);
  }
  return undefined;
}

/** The partitions a request touches, and whether it reads or writes them (undefined: none the model counts). */
function touchedBy(body: Json, operation: string, partitionKey: string): Touched | undefined {
  const table = typeof body.TableName === 'string' ? body.TableName : '';
  const one = (kind: UnitKind, source: unknown): Touched | undefined =>
    isObject(source) ? { kind, partitions: [partitionLabel(table, source[partitionKey])], weights: [1] } : undefined;
  const many = (kind: UnitKind, entries: { table: unknown; source: unknown; weight: number }[]): Touched => {
    const known = entries.filter((entry) => typeof entry.table === 'string' && isObject(entry.source));
    return {
      kind,
      partitions: known.map((entry) => partitionLabel(String(entry.table), (entry.source as Json)[partitionKey])),
      weights: known.map((entry) => entry.weight),
    };
  };
  const putWeight = (item: unknown) => (isObject(item) ? Math.max(1, Math.ceil(itemBytes(item) / 1024)) : 1);
  switch (operation) {
    case 'GetItem':
      return one('read', body.Key);
    case 'PutItem':
      return one('write', body.Item);
    case 'UpdateItem':
    case 'DeleteItem':
      return one('write', body.Key);
    case 'Query': {
      const partition = queryPartition(body, partitionKey);
      return partition === undefined ? undefined : { kind: 'read', partitions: [partition], weights: [1] };
    }
    case 'Scan':
      return { kind: 'read', partitions: [`${table} *`], weights: [1] };
    case 'TransactWriteItems':
    case 'TransactGetItems': {
      const entries = Array.isArray(body.TransactItems) ? body.TransactItems : [];
      return many(
        operation === 'TransactGetItems' ? 'read' : 'write',
        entries.map((entry: unknown) => {
          const action = isObject(entry) ? Object.values(entry)[0] : undefined;
          const put = isObject(entry) && isObject(entry.Put) ? entry.Put : undefined;
          return isObject(action)
            ? { table: action.TableName, source: put ? put.Item : action.Key, weight: put ? putWeight(put.Item) : 1 }
            : { table: undefined, source: undefined, weight: 0 };
        }),
      );
    }
    case 'BatchGetItem':
    case 'BatchWriteItem': {
      const requests = isObject(body.RequestItems) ? Object.entries(body.RequestItems) : [];
      const entries = requests.flatMap(([name, request]) => {
        if (operation === 'BatchGetItem') {
          const keys = isObject(request) && Array.isArray(request.Keys) ? request.Keys : [];
          return keys.map((key: unknown) => ({ table: name, source: key, weight: 1 }));
        }
        return (Array.isArray(request) ? request : []).map((entry: unknown) => {
          const put = isObject(entry) && isObject(entry.PutRequest) ? entry.PutRequest.Item : undefined;
          const del = isObject(entry) && isObject(entry.DeleteRequest) ? entry.DeleteRequest.Key : undefined;
          return { table: name, source: put ?? del, weight: put ? putWeight(put) : 1 };
        });
      });
      return many(operation === 'BatchGetItem' ? 'read' : 'write', entries);
    }
    default:
      return undefined;
  }
}

/** The units an answer reports (`ConsumedCapacity`, one object or one per table). */
function consumedUnits(answer: Json): number {
  const consumed = answer.ConsumedCapacity;
  const list = Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed];
  return list.reduce(
    (sum: number, entry: unknown) =>
      sum + (isObject(entry) && typeof entry.CapacityUnits === 'number' ? entry.CapacityUnits : 0),
    0,
  );
}

const THROTTLE_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html';

/** DynamoDB's answer to a request over a partition's throughput (an on-demand table's hot key). */
export function throughputExceededBody(kind: UnitKind, table: string, index?: string): Json {
  const resource = `arn:aws:dynamodb:local:000000000000:table/${table}${index === undefined ? '' : `/index/${index}`}`;
  const reason = `${index === undefined ? 'Table' : 'Index'}${kind === 'read' ? 'Read' : 'Write'}KeyRangeThroughputExceeded`;
  return {
    __type: `${ERROR_PREFIX}ProvisionedThroughputExceededException`,
    message: THROTTLE_MESSAGE,
    ThrottlingReasons: [{ reason, resource }],
  };
}

/** DynamoDB's answer to a transaction naming items of a throttled partition. */
export function transactionThrottledBody(throttled: boolean[]): Json {
  const reasons = throttled.map((hit) =>
    hit ? { Code: 'ThrottlingError', Message: THROTTLE_MESSAGE } : { Code: 'None' },
  );
  return {
    __type: `${ERROR_PREFIX}TransactionCanceledException`,
    CancellationReasons: reasons,
    Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons
      .map((reason) => reason.Code)
      .join(', ')}]`,
  };
}

function sendJson(res: ServerResponse, status: number, body: Json): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/x-amz-json-1.0',
    'Content-Length': Buffer.byteLength(payload),
    'x-amzn-RequestId': randomUUID(),
  });
  res.end(payload);
}

/** DynamoDB's answer to a transaction naming held items (shape as the real service sends it). */
export function transactionCanceledBody(conflicts: boolean[]): Json {
  const reasons = conflicts.map((conflict) =>
    conflict ? { Code: 'TransactionConflict', Message: CONFLICT_MESSAGE } : { Code: 'None' },
  );
  return {
    __type: `${ERROR_PREFIX}TransactionCanceledException`,
    CancellationReasons: reasons,
    Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons
      .map((reason) => reason.Code)
      .join(', ')}]`,
  };
}

/**
 * Charges what an answered request consumed to its partitions: the units DynamoDB Local reports for a
 * success; for a write refused by its condition (which DynamoDB bills too) 1 unit per item, twice in a
 * transaction. Returns the answer parsed when it was a JSON success, for the caller to strip.
 */
function chargeAnswer(model: PartitionThroughput, touched: Touched, status: number, body: Buffer): { json?: Json } {
  let json: Json | undefined;
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    if (isObject(value)) json = value;
  } catch {
    return {};
  }
  if (!json) return {};
  const type = typeof json.__type === 'string' ? json.__type : '';
  const units =
    status === 200
      ? consumedUnits(json)
      : touched.kind === 'write' && /ConditionalCheckFailed|TransactionCanceled/.test(type)
        ? touched.partitions.length * (type.includes('TransactionCanceled') ? 2 : 1)
        : 0;
  const shares = splitUnits(units, touched.weights);
  const byPartition = new Map<string, number>();
  touched.partitions.forEach((partition, index) => {
    byPartition.set(partition, (byPartition.get(partition) ?? 0) + (shares[index] ?? 0));
  });
  for (const [partition, share] of byPartition) model.charge(partition, touched.kind, share);
  return status === 200 ? { json } : {};
}

/** DynamoDB's answer to a plain write on an item a transaction holds. */
export function transactionConflictBody(): Json {
  return { __type: `${ERROR_PREFIX}TransactionConflictException`, message: CONFLICT_MESSAGE };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the proxy on 127.0.0.1 (a free port unless one is given). */
export async function startConflictProxy(options: ConflictProxyOptions): Promise<ConflictProxy> {
  const target = new URL(options.target);
  const holdMs = options.holdMs ?? 10;
  const keyAttributes = options.keyAttributes ?? [TABLE.partitionKey, TABLE.sortKey];
  const held = new Set<string>();
  const stats: ConflictStats = { cancelledTransactions: 0, refusedWrites: 0, forwardedTransactions: 0 };
  const model =
    options.throughput === false ? undefined : new PartitionThroughput(options.throughput ?? DYNAMODB_PARTITION_LIMITS);
  const partitionKey = keyAttributes[0] ?? TABLE.partitionKey;
  let throttled = 0;

  /** Forwards the request (as received, or with `body` rewritten) and resolves with DynamoDB Local's full answer. */
  const forward = (req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const upstream = httpRequest(
        {
          hostname: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: target.host, 'content-length': String(body.length) },
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () =>
            resolve({ status: answer.statusCode ?? 500, headers: answer.headers, body: Buffer.concat(chunks) }),
          );
          answer.on('error', reject);
        },
      );
      upstream.on('error', reject);
      upstream.end(body);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const targetHeader = req.headers['x-amz-target'];
    const operation =
      typeof targetHeader === 'string' && targetHeader.startsWith(TARGET_PREFIX)
        ? targetHeader.slice(TARGET_PREFIX.length)
        : '';
    let parsed: Json = {};
    if (operation) {
      try {
        const value: unknown = JSON.parse(body.toString('utf8'));
        if (isObject(value)) parsed = value;
      } catch {
        // Not JSON: DynamoDB Local answers it with its own error.
      }
    }

    const transaction = operation === 'TransactWriteItems' || operation === 'TransactGetItems';
    const items = transaction ? transactionItems(parsed, operation, keyAttributes) : [];
    if (transaction) {
      const conflicts = items.map((id) => id !== undefined && held.has(id));
      if (conflicts.some(Boolean)) {
        stats.cancelledTransactions++;
        sendJson(res, 400, transactionCanceledBody(conflicts));
        return;
      }
    } else if (PLAIN_WRITES.has(operation)) {
      const id = itemId(parsed.TableName, parsed.Key ?? parsed.Item, keyAttributes);
      if (id !== undefined && held.has(id)) {
        stats.refusedWrites++;
        sendJson(res, 400, transactionConflictBody());
        return;
      }
    }

    const touched = model && operation ? touchedBy(parsed, operation, partitionKey) : undefined;
    if (model && touched && touched.partitions.length > 0) {
      const refused = new Set(model.admit(touched.partitions, touched.kind));
      if (refused.size > 0) {
        throttled++;
        if (transaction) sendJson(res, 400, transactionThrottledBody(touched.partitions.map((p) => refused.has(p))));
        else {
          const index = typeof parsed.IndexName === 'string' ? parsed.IndexName : undefined;
          sendJson(res, 400, throughputExceededBody(touched.kind, String(parsed.TableName ?? ''), index));
        }
        return;
      }
    }

    let holding: string[] = [];
    if (operation === 'TransactWriteItems') {
      holding = [...new Set(items.filter((id): id is string => id !== undefined))];
      for (const id of holding) held.add(id);
      stats.forwardedTransactions++;
    }

    // Asks DynamoDB Local what the request consumed, unless the client asked already.
    const askUnits = touched !== undefined && (parsed.ReturnConsumedCapacity ?? 'NONE') === 'NONE';
    const sent = askUnits ? Buffer.from(JSON.stringify({ ...parsed, ReturnConsumedCapacity: 'TOTAL' })) : body;
    const started = Date.now();
    try {
      const answer = await forward(req, sent);
      if (holding.length > 0) await sleep(Math.max(0, started + holdMs - Date.now()));
      const headers = { ...answer.headers };
      let answerBody = answer.body;
      if (model && touched) {
        const charged = chargeAnswer(model, touched, answer.status, answerBody);
        if (askUnits && charged.json) {
          delete charged.json.ConsumedCapacity;
          answerBody = Buffer.from(JSON.stringify(charged.json));
          // The checksum DynamoDB sends is of the body as it sent it.
          delete headers['x-amz-crc32'];
        }
      }
      delete headers['transfer-encoding'];
      headers['content-length'] = String(answerBody.length);
      res.writeHead(answer.status, headers);
      res.end(answerBody);
    } finally {
      for (const id of holding) held.delete(id);
    }
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).catch((error: unknown) => {
        // DynamoDB Local unreachable: answer as a 500 from the service would, so the SDK retries.
        if (!res.headersSent) {
          sendJson(res, 500, { __type: `${ERROR_PREFIX}InternalServerError`, message: String(error) });
        } else {
          res.destroy();
        }
      });
    });
  });
  // Many SDK sockets at once: no per-server connection cap, keep-alive like DynamoDB's endpoint.
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    endpoint: `http://${options.host ?? '127.0.0.1'}:${address.port}`,
    stats: () => ({ ...stats }),
    throughput: () => ({ partitions: model?.snapshot() ?? new Map(), throttled }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The switch of `npm start`: `DYNAMODB_CONFLICTS=on` and `DYNAMODB_CONFLICT_HOLD_MS` (default 10). */
export function conflictSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): { holdMs: number } | undefined {
  const switchValue = (env.DYNAMODB_CONFLICTS ?? '').toLowerCase();
  if (switchValue === '' || switchValue === 'off' || switchValue === 'false' || switchValue === '0') return undefined;
  if (switchValue !== 'on' && switchValue !== 'true' && switchValue !== '1') {
    throw new Error(`DYNAMODB_CONFLICTS must be on or off, got "${env.DYNAMODB_CONFLICTS}"`);
  }
  const raw = env.DYNAMODB_CONFLICT_HOLD_MS;
  const holdMs = raw === undefined || raw === '' ? 10 : Number(raw);
  if (!Number.isInteger(holdMs) || holdMs < 0) {
    throw new Error(`DYNAMODB_CONFLICT_HOLD_MS must be a whole number >= 0, got "${raw}"`);
  }
  return { holdMs };
}
